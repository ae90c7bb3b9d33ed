package node

import (
	"net/http"
	"strings"
	"testing"

	"github.com/locuscache/locus/pkg/gateway"
)

var _ gateway.RequestObserver = (*Node)(nil)

// gwDo sends one request with headers (name, value pairs) to n's listener
// and drains the answer.
func gwDo(t *testing.T, n *Node, method, path string, hdr ...string) int {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+n.httpAddr+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 32<<10)
	for {
		if _, err := resp.Body.Read(buf); err != nil {
			break
		}
	}
	return resp.StatusCode
}

// TestGatewayAnswersCountAsReads: every S3 gateway GET counts once in
// locus_reads_total{kind="client"} and locus_read_duration_seconds, with
// its outcome as the code: OK for bytes, NotFound for 404 NoSuchKey,
// FailedPrecondition for 412, NotModified for 304, OutOfRange for 416.
// Before the fix only GETs that made a Read counted: 404, 412 and 304 were
// invisible to a dashboard. A HEAD is a Stat, not a read.
func TestGatewayAnswersCountAsReads(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 1, repl: 1, mutate: rvmGateway})
	n := c.nodes[0]
	info := c.mem.Put("s3://bkt/a.bin", randBytes(3, 5000))
	etag := `"` + strings.Trim(info.Version, `"`) + `"`
	cases := []struct {
		name   string
		method string
		path   string
		hdr    []string
		status int
		code   string // "" for none
	}{
		{"GET", "GET", "/bkt/a.bin", nil, 200, "OK"},
		{"GET Range", "GET", "/bkt/a.bin", []string{"Range", "bytes=10-19"}, 206, "OK"},
		{"GET missing key", "GET", "/bkt/missing.bin", nil, 404, "NotFound"},
		{"GET If-Match other", "GET", "/bkt/a.bin", []string{"If-Match", `"other"`}, 412, "FailedPrecondition"},
		{"GET If-None-Match current", "GET", "/bkt/a.bin", []string{"If-None-Match", etag}, 304, "NotModified"},
		{"GET Range past the end", "GET", "/bkt/a.bin", []string{"Range", "bytes=9000-"}, 416, "OutOfRange"},
		{"HEAD", "HEAD", "/bkt/a.bin", nil, 200, ""},
		{"HEAD missing key", "HEAD", "/bkt/missing.bin", nil, 404, ""},
	}
	for _, tc := range cases {
		before := rvmScrape(t, n)
		if got := gwDo(t, n, tc.method, tc.path, tc.hdr...); got != tc.status {
			t.Fatalf("%s: status %d, want %d", tc.name, got, tc.status)
		}
		d := rvmDelta(before, rvmScrape(t, n))
		reads := rvmPick(d, "locus_reads_total")
		durations := d[`locus_read_duration_seconds_count{kind=client}`]
		if tc.code == "" {
			if len(reads) != 0 || durations != 0 {
				t.Errorf("%s: counted as a read: %v, %g durations", tc.name, reads, durations)
			}
			continue
		}
		key := `locus_reads_total{code=` + tc.code + `,kind=client}`
		if len(reads) != 1 || reads[key] != 1 || durations != 1 {
			t.Errorf("%s: locus_reads_total deltas %v and %g read durations, want %s +1 and 1", tc.name, reads, durations, key)
		}
	}
}

// TestGatewayVersionRetryCountsOneRead: a GET whose object changes between
// the gateway's Stat (a stale stat cache entry) and its Read starts over
// with the new version; the client made one request and got its bytes, so
// locus_reads_total counts one OK read and locus_read_duration_seconds one
// sample, not a failed read and then a good one.
func TestGatewayVersionRetryCountsOneRead(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 1, repl: 1, mutate: rvmGateway})
	n := c.nodes[0]
	c.mem.Put("s3://bkt/v.bin", []byte("version one"))
	if code := gwDo(t, n, "HEAD", "/bkt/v.bin"); code != 200 { // the stat cache holds version one (StatTTL 1h)
		t.Fatalf("HEAD: %d", code)
	}
	c.mem.Put("s3://bkt/v.bin", []byte("version two!"))
	before := rvmScrape(t, n)
	_, reads0, _, _ := c.mem.Counts()
	if code := gwDo(t, n, "GET", "/bkt/v.bin"); code != 200 {
		t.Fatalf("GET: %d", code)
	}
	if _, reads1, _, _ := c.mem.Counts(); reads1-reads0 < 2 {
		t.Fatalf("origin reads %d: the GET did not meet the version change (test setup)", reads1-reads0)
	}
	d := rvmDelta(before, rvmScrape(t, n))
	reads := rvmPick(d, "locus_reads_total")
	if len(reads) != 1 || reads[`locus_reads_total{code=OK,kind=client}`] != 1 {
		t.Errorf("one GET after a version change counted as %v, want locus_reads_total{code=OK,kind=client} +1 only", reads)
	}
	if got := d[`locus_read_duration_seconds_count{kind=client}`]; got != 1 {
		t.Errorf("locus_read_duration_seconds{kind=client} got %g samples, want 1", got)
	}
	if got := d[`locus_cache_bytes_read_total{source=origin}`]; got != float64(len("version two!")) {
		t.Errorf("locus_cache_bytes_read_total{source=origin} rose by %g, want %d (the bytes sent)", got, len("version two!"))
	}
}
