package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/locuscache/locus/internal/localcluster"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestSizing: on the live cluster, after a 32 MiB object is read through
// node1's S3 gateway twice (about 680 pages on each owner, of which the
// miniatures replay 1 in 32), every node's line has its counts, its hit
// ratio and the four estimates of its own policy; so does the CLUSTER
// line, with the reading under it; --json carries both models and a
// cluster line whose accesses are the nodes' sum.
func TestSizing(t *testing.T) {
	c := liveCluster(t)
	withEnv(t, nil)
	const size = 32 << 20
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	if err := os.WriteFile(filepath.Join(c.DataRoot, localcluster.GatewayBucket, "sizing.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	url := "http://" + c.Nodes[0].HTTPAddr() + "/" + localcluster.GatewayBucket + "/sizing.bin"
	for i := 0; i < 2; i++ {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, data) {
			t.Fatalf("GET %s: %s, %d bytes, %v; want the object", url, resp.Status, len(got), err)
		}
	}
	sched := c.SchedulerURL()
	r := mustRun(t, "sizing", "--scheduler", sched)
	t.Logf("sizing:\n%s", r.stdout)
	for _, n := range c.Nodes {
		re := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(n.ID()) + `\s+64\.0 MiB\s+\d+\s+\d+\s+[0-9.]+%\s+[1-9]\d*(\s+[0-9.]+%){4}\s*$`)
		if !re.MatchString(r.stdout) {
			t.Errorf("no line with estimates for %s in:\n%s", n.ID(), r.stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^\s*CLUSTER\s+192\.0 MiB\s+[0-9.]+%\s+[1-9]\d*(\s+[0-9.]+%){4}\s*$`).MatchString(r.stdout) ||
		!strings.Contains(r.stdout, "Doubling every node's cache (384.0 MiB in all) would take their page hit ratio from") {
		t.Errorf("no cluster line with estimates, or no reading, in:\n%s", r.stdout)
	}

	var rep sizingReport
	js := mustRun(t, "sizing", "--scheduler", sched, "--json")
	if err := json.Unmarshal([]byte(js.stdout), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, js.stdout)
	}
	var sum float64
	for _, n := range rep.Nodes {
		sum += n.Hits + n.Misses
		if n.Error != "" || n.HitRatio == nil || len(n.Policy) != 4 || len(n.LRU) != 4 || n.SampledReads < 1 || n.SampledReads > n.Hits+n.Misses {
			t.Errorf("node %+v: want counts, a hit ratio, 4 estimates per model and some of its reads sampled", n)
		}
		for f, v := range n.Policy {
			if v < 0 || v > 1 {
				t.Errorf("node %s at x%s: estimate %v, want a ratio", n.Node, f, v)
			}
		}
	}
	if len(rep.Nodes) != len(c.Nodes) || sum == 0 || rep.Cluster.Accesses != sum || rep.Cluster.CapacityBytes != 3*64<<20 ||
		rep.Cluster.Policy.Nodes != 3 || rep.Cluster.LRU.Nodes != 3 {
		t.Errorf("--json: %d nodes, cluster %+v; want %d nodes, %v accesses, 192 MiB, 3 estimating nodes per model", len(rep.Nodes), rep.Cluster, len(c.Nodes), sum)
	}
}

// TestSizingMath: a node's metrics parse into its counts (owner_unavailable
// is not a cache miss) and estimates; the cluster's estimates weigh the
// nodes that have all four by their accesses and are printed, and read,
// next to those nodes' own capacity and ratio; a node whose /metrics
// cannot be read gets a line of dashes and a note.
func TestSizingMath(t *testing.T) {
	const text = `# TYPE locus_cache_hits_total counter
locus_cache_hits_total 300
# TYPE locus_cache_misses_total counter
locus_cache_misses_total{cause="cold"} 50
locus_cache_misses_total{cause="capacity"} 50
locus_cache_misses_total{cause="owner_unavailable"} 900
# TYPE locus_cache_capacity_bytes gauge
locus_cache_capacity_bytes 1024
# TYPE locus_cache_estimated_hit_ratio gauge
locus_cache_estimated_hit_ratio{model="policy",size_factor="0.5"} 0.5
locus_cache_estimated_hit_ratio{model="policy",size_factor="2"} 0.9
locus_cache_estimated_hit_ratio{model="lru",size_factor="2"} 0.8
# TYPE locus_cache_sizing_sampled_reads_total counter
locus_cache_sizing_sampled_reads_total 40
`
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	a := nodeSizing{Node: "a"}
	parseSizing(fams, &a)
	if a.Hits != 300 || a.Misses != 100 || a.HitRatio == nil || *a.HitRatio != 0.75 || a.CapacityBytes != 1024 || a.SampledReads != 40 ||
		a.Policy["0.5"] != 0.5 || a.Policy["2"] != 0.9 || a.LRU["2"] != 0.8 || len(a.Policy) != 2 || len(a.LRU) != 1 {
		t.Fatalf("parsed %+v (ratio %v): want 300 hits, 100 cache misses (owner_unavailable is not one), 0.75, the estimates", a, a.HitRatio)
	}
	// a has two of the four estimates: no model line counts it.
	if c := sumSizing([]nodeSizing{a}); c.Policy.Nodes != 0 || c.LRU.Nodes != 0 || c.Accesses != 400 {
		t.Fatalf("cluster of a: %+v, want a's accesses and no estimating node", c)
	}
	a.Policy = map[string]float64{"0.25": 0.3, "0.5": 0.5, "2": 0.9, "4": 0.95}
	// b has 3x a's accesses; idle has none; down cannot be read. The
	// estimates are a's and b's, weighed 1 to 3, next to their own
	// capacity and measured ratio, not the cluster's.
	bRatio := 0.75
	b := nodeSizing{Node: "b", Hits: 900, Misses: 300, HitRatio: &bRatio, CapacityBytes: 1024, SampledReads: 110,
		Policy: map[string]float64{"0.25": 0.5, "0.5": 0.6, "2": 0.8, "4": 0.85}, LRU: map[string]float64{}}
	idle := nodeSizing{Node: "idle", CapacityBytes: 1024, Policy: map[string]float64{}, LRU: map[string]float64{}}
	down := nodeSizing{Node: "down", CapacityBytes: 1024, Error: "cannot read http://down/metrics: refused"}
	nodes := []nodeSizing{a, b, idle, down}
	c := sumSizing(nodes)
	p := c.Policy
	if c.Accesses != 1600 || *c.HitRatio != 1200.0/1600 || c.CapacityBytes != 4096 || p.Nodes != 2 || p.CapacityBytes != 2048 || p.SampledReads != 150 ||
		*p.HitRatio != 1200.0/1600 || p.Estimates["2"] != (400*0.9+1200*0.8)/1600 || p.Estimates["0.5"] != (400*0.5+1200*0.6)/1600 {
		t.Fatalf("cluster %+v, policy %+v", c, p)
	}
	var out bytes.Buffer
	printSizing(&out, sizingReport{Nodes: nodes, Cluster: c})
	t.Logf("\n%s", out.String())
	for _, frag := range []string{
		"down: cannot read http://down/metrics: refused",
		"the caches of the 2 of 4 nodes that estimate (the 2 NODES line) (4.0 KiB in all)",
		"from 75.0% to about 82.5%; halving them, to about 57.5%",
	} {
		if !strings.Contains(out.String(), frag) {
			t.Errorf("output lacks %q:\n%s", frag, out.String())
		}
	}
	if !regexp.MustCompile(`(?m)^\s*CLUSTER\s+4\.0 KiB\s+75\.0%(\s+-){5}\s*$`).MatchString(out.String()) ||
		!regexp.MustCompile(`(?m)^\s*2 NODES\s+2\.0 KiB\s+75\.0%\s+150\s+45\.0%\s+57\.5%\s+82\.5%\s+87\.5%\s*$`).MatchString(out.String()) {
		t.Errorf("want a CLUSTER line without estimates and a 2 NODES line with them:\n%s", out.String())
	}
	// When every node estimates, the CLUSTER line carries them.
	out.Reset()
	printSizing(&out, sizingReport{Nodes: []nodeSizing{a, b}, Cluster: sumSizing([]nodeSizing{a, b})})
	if !strings.Contains(out.String(), "Doubling every node's cache (4.0 KiB in all)") ||
		!regexp.MustCompile(`(?m)^\s*CLUSTER\s+2\.0 KiB\s+75\.0%\s+150\s+45\.0%`).MatchString(out.String()) {
		t.Errorf("every node estimating:\n%s", out.String())
	}
}

func TestSizingBadArguments(t *testing.T) {
	checkBadArgs(t, []badArgs{
		{[]string{"sizing"}, "missing --scheduler"},
		{[]string{"sizing", "--scheduler", "http://127.0.0.1:1", "extra"}, `unexpected argument "extra"`},
		{[]string{"sizing", "--scheduler", "http://127.0.0.1:1", "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"sizing", "--scheduler", "http://127.0.0.1:1", "--tls-cert", "a.pem"}, "--tls-cert and --tls-key go together"},
	})
	r := locusctl(t, "sizing", "--scheduler", "http://127.0.0.1:1")
	if r.code != 1 || !strings.Contains(r.stderr, "cannot reach the scheduler") {
		t.Errorf("unreachable scheduler: %v; want exit 1 saying so", r)
	}
	if h := locusctl(t, "sizing", "--help"); h.code != 0 || !strings.Contains(h.stdout, "How large should the cache be?") || h.stderr != "" {
		t.Errorf("sizing --help: %v", h)
	}
}
