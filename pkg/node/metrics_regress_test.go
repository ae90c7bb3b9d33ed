package node

// Regression tests from an adversarial review of the node's Prometheus
// metrics (their semantics, not their names): each failed before its fix.

import (
	"context"
	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/locuscache/locus/pkg/gateway"
)

// rvmScrape returns every locus_ sample of n's registry as "name{l=v,...}" -> value.
func rvmScrape(t testing.TB, n *Node) map[string]float64 {
	t.Helper()
	mfs, err := n.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		name := mf.GetName()
		if !strings.HasPrefix(name, "locus_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(ls)
			key := name + "{" + strings.Join(ls, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name+"_count{"+strings.Join(ls, ",")+"}"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func rvmDelta(before, after map[string]float64) map[string]float64 {
	d := map[string]float64{}
	for k, v := range after {
		if v-before[k] != 0 {
			d[k] = v - before[k]
		}
	}
	return d
}

func rvmLog(t *testing.T, what string, d map[string]float64) {
	var ks []string
	for k := range d {
		if strings.Contains(k, "sizing") || strings.Contains(k, "estimated") {
			continue
		}
		ks = append(ks, k)
	}
	sort.Strings(ks)
	t.Logf("--- %s", what)
	for _, k := range ks {
		t.Logf("   %s %+g", k, d[k])
	}
}

func rvmGateway(i int, c *Config) {
	c.Gateway = func(n *Node) (http.Handler, error) { return gateway.New(gateway.Config{Backend: n}) }
}

// rvmDo sends one HTTP request to n's listener and drains the answer.
func rvmDo(t *testing.T, n *Node, method, path string) int {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+n.httpAddr+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestMetricsListStopIsNotOriginError: the S3 gateway lists with a
// callback that stops at the first entry (HeadBucket; a GET of a missing
// key, to tell NoSuchKey from NoSuchBucket). The origin answered every
// one of those listings, yet countingStore.List files the callback's stop
// sentinel under locus_origin_requests_total{op="list",status="error"}, so
// an alert on origin errors fires for every HEAD of a bucket and every 404
// GET in a non-empty bucket.
// (That was the behaviour before the fix.) Fixed: countingStore.List counts a listing
// its callback stopped as ok.
func TestMetricsListStopIsNotOriginError(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 1, repl: 1, mutate: rvmGateway})
	n := c.nodes[0]
	c.mem.Put("s3://bkt/a.bin", randBytes(1, 100))
	before := rvmScrape(t, n)
	if code := rvmDo(t, n, "HEAD", "/bkt"); code != 200 {
		t.Fatalf("HEAD bucket: %d", code)
	}
	if code := rvmDo(t, n, "GET", "/bkt/missing.bin"); code != 404 {
		t.Fatalf("GET missing key: %d", code)
	}
	d := rvmDelta(before, rvmScrape(t, n))
	if e := d[`locus_origin_requests_total{op=list,status=error}`]; e != 0 {
		t.Errorf("locus_origin_requests_total{op=\"list\",status=\"error\"} rose by %g for two listings the origin answered (the gateway stopped them itself); deltas: %v", e, d)
	}
	if ok := d[`locus_origin_requests_total{op=list,status=ok}`]; ok != 2 {
		t.Errorf("locus_origin_requests_total{op=\"list\",status=\"ok\"} rose by %g, want 2", ok)
	}
}

// TestMetricsStatIsNotAClientRead: a gRPC Stat of a Parquet object
// reads its footer through Node.Read, which records it as a client read:
// locus_reads_total{kind="client"}, locus_read_duration_seconds{kind="client"}
// and locus_cache_bytes_read_total, whose help says it counts the bytes
// returned to readers of gRPC ReadRange and the S3 gateway. The Stat caller
// got no bytes; a pkg/client ReaderAt (Stat, then ReadRange of the footer)
// has the footer's bytes counted twice.
// (That was the behaviour before the fix.) Fixed: the node's own footer and magic reads
// (Node.read with observe false) are not recorded as reads.
func TestMetricsStatIsNotAClientRead(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 1, repl: 1})
	n := c.nodes[0]
	c.mem.Put("s3://bkt/t.parquet", parquetFile(t, 2000, 500))
	c.mem.Put("s3://bkt/t.bin", randBytes(3, 3*tPage)) // not Parquet: Stat sniffs its magic, every time
	cl := dial(t, n.grpcAddr)
	for _, uri := range []string{"s3://bkt/t.parquet", "s3://bkt/t.bin"} {
		before := rvmScrape(t, n)
		if _, err := cl.Stat(context.Background(), &cachev1.StatRequest{Uri: uri}); err != nil {
			t.Fatal(err)
		}
		d := rvmDelta(before, rvmScrape(t, n))
		if r := d[`locus_reads_total{code=OK,kind=client}`]; r != 0 {
			t.Errorf("%s: one Stat RPC counted as %g client read(s) in locus_reads_total", uri, r)
		}
		var b float64
		for _, s := range []string{"local", "peer", "origin"} {
			b += d[`locus_cache_bytes_read_total{source=`+s+`}`]
		}
		if b != 0 {
			t.Errorf("%s: one Stat RPC (no bytes returned to its caller) added %g bytes to locus_cache_bytes_read_total", uri, b)
		}
	}
}

// TestMetricsFooterMissCountedOnce: one Stat of an uncached Parquet
// footer is one lookup of the footer cache, but Node.footer calls
// FooterCache.Get and then GetOrLoad, which calls Get again: two misses.
// (That was the behaviour before the fix.) Fixed: FooterCache.LoadMissed loads without a
// second lookup.
func TestMetricsFooterMissCountedOnce(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 1, repl: 1})
	n := c.nodes[0]
	c.mem.Put("s3://bkt/t.parquet", parquetFile(t, 2000, 500))
	before := rvmScrape(t, n)
	if _, _, err := n.StatParquet(context.Background(), "s3://bkt/t.parquet"); err != nil {
		t.Fatal(err)
	}
	d := rvmDelta(before, rvmScrape(t, n))
	if m := d[`locus_parquet_footer_cache_total{outcome=miss}`]; m != 1 {
		t.Errorf("one footer lookup counted %g misses, want 1", m)
	}
}

func rvmPick(d map[string]float64, prefix string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range d {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

// TestMetricsPeerServedCountsEveryByte: a peer read that reaches a
// replica while the replica is filling the same pages from the block's
// owner (for one of its own readers) is served from that fill, and its
// summary counts those bytes as PeerHitBytes (fillTally). observeRead
// adds only LocalHitBytes and OriginBytes to
// locus_peer_served_bytes_total, so these bytes, served to another node,
// are counted nowhere.
// (That was the behaviour before the fix.) Fixed: such bytes count under
// source="peer".
func TestMetricsPeerServedCountsEveryByte(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 2, repl: 2, memBytes: 32 << 20})
	n0, n1 := c.nodes[0], c.nodes[1]
	cl := dial(t, n1.grpcAddr)
	var served, peerHit int64
	before := rvmScrape(t, n1)
	for it := 0; it < 30 && peerHit == 0; it++ {
		uri := "s3://bkt/ps" + strings.Repeat("x", it%5) + string(rune('a'+it)) + ".bin"
		c.mem.Put(uri, randBytes(uint64(it), 8*tBlock))
		b := blockListed(t, c, uri, 8, n0.ID(), n1.ID())
		off, length := b*tBlock, int64(tBlock)
		mustRead(t, n0, readpath.Request{URI: uri, Offset: off, Length: length}) // warm the owner
		done := make(chan struct{})
		go func() {
			defer close(done)
			mustRead(t, n1, readpath.Request{URI: uri, Offset: off, Length: length}) // fills n1 from n0
		}()
		for k := 0; k < 4; k++ {
			_, s, err := grpcRead(context.Background(), cl, &cachev1.ReadRangeRequest{Uri: uri, Offset: off, Length: length, Peer: true})
			if err != nil {
				t.Fatal(err)
			}
			served += s.Bytes
			peerHit += s.PeerHitBytes
		}
		<-done
	}
	if peerHit == 0 {
		t.Skip("no peer read joined a fill in 30 tries")
	}
	d := rvmDelta(before, rvmScrape(t, n1))
	got := d[`locus_peer_served_bytes_total{source=local}`] + d[`locus_peer_served_bytes_total{source=peer}`] + d[`locus_peer_served_bytes_total{source=origin}`]
	if int64(got) != served {
		t.Errorf("n1 served %d bytes to peer reads (%d of them from fills through the owner); locus_peer_served_bytes_total rose by %g", served, peerHit, got)
	}
}

// rvmIdle waits until n has no read in progress, so a scrape sees the
// outcome of reads whose clients went away.
func rvmIdle(t *testing.T, n *Node) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for n.Inflight() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("reads still in progress after 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
}

// TestMetricsGatewayHangupIsNotInternal: an S3 client that closes
// the connection before the end of the body (S3A and other readers abort
// a GET on a seek or an early close) is recorded as
// locus_reads_total{kind="client",code="Internal"}: emit's write error is
// passed to Code unchanged and maps to INTERNAL. The same hang-up over
// gRPC is recorded as Canceled. Alerts on server errors fire for client
// behaviour.
// (That was the behaviour before the fix.) Fixed: a read that emit's error ended is
// recorded as Canceled.
func TestMetricsGatewayHangupIsNotInternal(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 1, repl: 1, mutate: rvmGateway, memBytes: 64 << 20})
	n := c.nodes[0]
	c.mem.Put("s3://bkt/big.bin", randBytes(9, 32<<20))
	before := rvmScrape(t, n)
	resp, err := http.Get("http://" + n.httpAddr + "/bkt/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // hang up mid-body
	rvmIdle(t, n)
	d := rvmPick(rvmDelta(before, rvmScrape(t, n)), "locus_reads_total")
	if d[`locus_reads_total{code=Internal,kind=client}`] != 0 || d[`locus_reads_total{code=Canceled,kind=client}`] != 1 {
		t.Errorf("a gateway client that hung up mid-body was recorded as %v, want one Canceled read (as over gRPC)", d)
	}
}
