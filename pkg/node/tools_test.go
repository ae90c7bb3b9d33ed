package node_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin/origintest"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// findTool returns the path of an external tool, looking in PATH and the
// extra paths. A missing tool skips the test, or fails it when
// LOCUS_REQUIRE_TOOLS=1 (CI).
func findTool(t *testing.T, name, hint string, extra ...string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, p := range extra {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	msg := name + " not found; " + hint
	if os.Getenv("LOCUS_REQUIRE_TOOLS") == "1" {
		t.Fatal(msg + " (LOCUS_REQUIRE_TOOLS=1)")
	}
	t.Skip(msg)
	return ""
}

func goBin(name string) string {
	gp := os.Getenv("GOPATH")
	if gp == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gp = strings.TrimSpace(string(out))
		}
	}
	return filepath.Join(gp, "bin", name)
}

// TestGRPCHealthProbe: the standard grpc-health-probe reports SERVING for a
// ready node (overall and for the CacheService), and fails once it drains.
func TestGRPCHealthProbe(t *testing.T) {
	probe := findTool(t, "grpc-health-probe", "install it with scripts/install-tools.sh", goBin("grpc-health-probe"))
	mem := origintest.NewMemStore()
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: mem})
	addr := c.Nodes[0].GRPCAddr()
	for _, args := range [][]string{{"-addr=" + addr}, {"-addr=" + addr, "-service=locus.cache.v1.CacheService"}} {
		out, err := exec.Command(probe, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SERVING") {
			t.Fatalf("grpc-health-probe %v: %v: %s", args, err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Nodes[0].Drain(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(probe, "-addr="+addr).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "NOT_SERVING") {
		t.Fatalf("draining node: grpc-health-probe %v: %s", err, out)
	}
}

// TestGRPCHealthProbeTLS: the probe speaks mTLS to a node that requires it.
func TestGRPCHealthProbeTLS(t *testing.T) {
	probe := findTool(t, "grpc-health-probe", "install it with scripts/install-tools.sh", goBin("grpc-health-probe"))
	files := nodetest.NewTLS(t)
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: origintest.NewMemStore(), TLS: files, MTLS: true})
	out, err := exec.Command(probe, "-addr="+c.Nodes[0].GRPCAddr(), "-tls", "-tls-ca-cert="+files.CAFile,
		"-tls-client-cert="+files.CertFile, "-tls-client-key="+files.KeyFile).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SERVING") {
		t.Fatalf("grpc-health-probe over mTLS: %v: %s", err, out)
	}
}

// TestPromtoolMetrics scrapes /metrics after local, peer and origin reads:
// promtool check metrics accepts it, and the DESIGN metrics are there with
// values that match the reads.
func TestPromtoolMetrics(t *testing.T) {
	promtool := findTool(t, "promtool", "install Debian's prometheus package", "/usr/bin/promtool")
	mem := origintest.NewMemStore()
	const size = 4 << 20
	uri := "s3://bucket/metrics.bin"
	mem.Put(uri, randBytes(8, size))
	// Replication 1: each node reads the other's blocks through it, so the
	// scrape has local, peer and origin bytes.
	c := nodetest.Start(t, nodetest.Options{N: 2, Origin: mem, Replication: 1})
	for i := range c.Nodes {
		cl := c.Client(t, i)
		rangeRead(t, cl, uri, 0, size)
		rangeRead(t, cl, uri, 0, size)
	}
	body := scrapeMetrics(t, c, 0)
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
	value := func(series string) float64 { return metricValue(t, body, series) }
	for _, name := range []string{
		`locus_cache_hits_total`, `locus_cache_misses_total{cause="cold"}`,
		`locus_cache_misses_total{cause="owner_unavailable"}`, `locus_cache_used_bytes`,
		`locus_cache_capacity_bytes`, `locus_cache_evictions_total`, `locus_read_duration_seconds_count{kind="client"}`,
	} {
		value(name)
	}
	local, peer, orig := value(`locus_cache_bytes_read_total{source="local"}`), value(`locus_cache_bytes_read_total{source="peer"}`),
		value(`locus_cache_bytes_read_total{source="origin"}`)
	if local+peer+orig != 2*size || local == 0 || peer == 0 || orig == 0 {
		t.Fatalf("bytes read: local %v peer %v origin %v, want 2x%d in total, each > 0", local, peer, orig, size)
	}
	if v := value(`locus_origin_requests_total{op="read",status="ok"}`); v == 0 {
		t.Fatal("no origin reads counted")
	}
	if v := value(`locus_cache_capacity_bytes`); v != nodetest.DefaultMemoryBytes {
		t.Fatalf("capacity %v", v)
	}
	for _, want := range []string{"go_goroutines", "process_resident_memory_bytes", "locus_node_info{"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("scrape lacks %s", want)
		}
	}
}

// metricValue returns the value of one series (name and labels, as
// exposed) in a scrape.
func metricValue(t *testing.T, body []byte, series string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	m := re.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no series %s in the scrape", series)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPrefetchMetricsApartFromReads: a warm-up (Prefetch) is not a read,
// so it moves neither locus_cache_hits_total nor
// locus_cache_misses_total (the readers' hit ratio, which the dashboards
// show) but locus_cache_prefetch_pages_total; the reads after it are hits.
// Was: a warm of a cold prefix counted every page as a cold miss, and a
// second warm every page as a hit.
func TestPrefetchMetricsApartFromReads(t *testing.T) {
	mem := origintest.NewMemStore()
	const size = 4 << 20
	uri := "s3://bucket/warm.bin"
	mem.Put(uri, randBytes(9, size))
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: mem})
	cl := c.Client(t, 0)
	req := &cachev1.PrefetchRequest{Uri: uri, Ranges: []*cachev1.ByteRange{{Offset: 0, Length: size}}}
	for range 2 {
		if _, err := cl.Prefetch(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	body := scrapeMetrics(t, c, 0)
	hits, cold := metricValue(t, body, `locus_cache_hits_total`), metricValue(t, body, `locus_cache_misses_total{cause="cold"}`)
	fetched, cached := metricValue(t, body, `locus_cache_prefetch_pages_total{result="fetched"}`), metricValue(t, body, `locus_cache_prefetch_pages_total{result="cached"}`)
	if hits != 0 || cold != 0 || fetched == 0 || cached != fetched {
		t.Fatalf("after two prefetches of the object: hits %v, cold misses %v, prefetch fetched %v and cached %v; want 0, 0, the object's pages and as many", hits, cold, fetched, cached)
	}
	rangeRead(t, cl, uri, 0, size)
	body = scrapeMetrics(t, c, 0)
	if h, m := metricValue(t, body, `locus_cache_hits_total`), metricValue(t, body, `locus_cache_misses_total{cause="cold"}`); h != fetched || m != 0 {
		t.Fatalf("after a read of the prefetched object: hits %v, cold misses %v; want %v and 0", h, m, fetched)
	}
}

// TestMetricsBeforeAnyRead: a node that has served nothing yet exports
// every metric DESIGN.md names, so dashboards and alerts see the series
// from the first scrape.
func TestMetricsBeforeAnyRead(t *testing.T) {
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: origintest.NewMemStore()})
	body := scrapeMetrics(t, c, 0)
	for _, name := range []string{
		"locus_cache_hits_total", "locus_cache_misses_total", "locus_cache_bytes_read_total",
		"locus_cache_used_bytes", "locus_cache_capacity_bytes", "locus_cache_evictions_total",
		"locus_read_duration_seconds", "locus_origin_requests_total",
	} {
		if !bytes.Contains(body, []byte("\n# TYPE "+name+" ")) {
			t.Errorf("a fresh node's scrape has no %s", name)
		}
	}
}

// scrapeMetrics returns node i's /metrics page.
func scrapeMetrics(t *testing.T, c *nodetest.Cluster, i int) []byte {
	t.Helper()
	resp, err := c.HTTPClient().Get(c.HTTPURL(i) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("scrape: %d %v", resp.StatusCode, err)
	}
	return body
}
