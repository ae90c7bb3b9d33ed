package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestSizing: on the live cluster, after a dataset is warmed twice (cold
// misses, then hits), every node's line has its counts, its hit ratio and
// the four estimates; --json carries both models and a cluster line whose
// accesses are the nodes' sum.
func TestSizing(t *testing.T) {
	c := liveCluster(t)
	withEnv(t, nil)
	_, prefix := liveDataset(t, c, "sizing", 8)
	sched := c.SchedulerURL()
	for i := 0; i < 2; i++ {
		mustRun(t, "warm", prefix, "--scheduler", sched)
	}
	r := mustRun(t, "sizing", "--scheduler", sched)
	t.Logf("sizing:\n%s", r.stdout)
	// A node the warm sent no split to has no access to estimate from.
	full, idle := 0, 0
	for _, n := range c.Nodes {
		id := regexp.QuoteMeta(n.ID())
		switch {
		// Estimates, or dashes while the node's miniatures have sampled
		// none of its few page reads (it replays 1 key in 16 here).
		case regexp.MustCompile(`(?m)^\s*` + id + `\s+64\.0 MiB\s+\d+\s+\d+\s+[0-9.]+%((\s+[0-9.]+%){4}|(\s+-){4})\s*$`).MatchString(r.stdout):
			full++
		case regexp.MustCompile(`(?m)^\s*` + id + `\s+64\.0 MiB\s+0\s+0(\s+-){5}\s*$`).MatchString(r.stdout):
			idle++
		default:
			t.Errorf("no line for %s in:\n%s", n.ID(), r.stdout)
		}
	}
	if full == 0 {
		t.Errorf("no node with accesses and estimates in:\n%s", r.stdout)
	}
	if !regexp.MustCompile(`(?m)^\s*CLUSTER\s+192\.0 MiB\s+[0-9.]+%((\s+[0-9.]+%){4}|(\s+-){4})\s*$`).MatchString(r.stdout) {
		t.Errorf("no cluster line or reading in:\n%s", r.stdout)
	}

	var rep sizingReport
	js := mustRun(t, "sizing", "--scheduler", sched, "--json")
	if err := json.Unmarshal([]byte(js.stdout), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, js.stdout)
	}
	var sum float64
	for _, n := range rep.Nodes {
		sum += n.Hits + n.Misses
		if n.Error != "" || (n.HitRatio == nil) != (n.Hits+n.Misses == 0) || len(n.Policy)%4 != 0 || len(n.LRU) != 4 {
			t.Errorf("node %+v: want counts, a hit ratio if any access, 4 LRU estimates and 0 or 4 of the policy", n)
		}
		for f, v := range n.Policy {
			if v < 0 || v > 1 {
				t.Errorf("node %s at x%s: estimate %v, want a ratio", n.Node, f, v)
			}
		}
	}
	if len(rep.Nodes) != len(c.Nodes) || sum == 0 || rep.Cluster.Accesses != sum || rep.Cluster.CapacityBytes != 3*64<<20 {
		t.Errorf("--json: %d nodes, cluster %+v; want %d nodes, %v accesses, 192 MiB", len(rep.Nodes), rep.Cluster, len(c.Nodes), sum)
	}
}

// TestSizingMath: a node's metrics parse into its counts (owner_unavailable
// is not a cache miss) and estimates; the cluster line weighs nodes by
// their accesses, per point, skipping nodes without that point; a node
// whose /metrics cannot be read gets a line of dashes and a note.
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
`
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	a := nodeSizing{Node: "a"}
	parseSizing(fams, &a)
	if a.Hits != 300 || a.Misses != 100 || a.HitRatio == nil || *a.HitRatio != 0.75 || a.CapacityBytes != 1024 ||
		a.Policy["0.5"] != 0.5 || a.Policy["2"] != 0.9 || a.LRU["2"] != 0.8 || len(a.Policy) != 2 || len(a.LRU) != 1 {
		t.Fatalf("parsed %+v (ratio %v): want 300 hits, 100 cache misses (owner_unavailable is not one), 0.75, the estimates", a, a.HitRatio)
	}
	// b has 3x a's accesses and no estimate at 0.5: the cluster's 0.5
	// point is a's alone, its 2 point weighs b 3 to 1.
	b := nodeSizing{Node: "b", Hits: 1200, CapacityBytes: 1024,
		Policy: map[string]float64{"2": 0.5}, LRU: map[string]float64{}}
	down := nodeSizing{Node: "c", CapacityBytes: 1024, Error: "cannot read http://c/metrics: refused"}
	c := sumSizing([]nodeSizing{a, b, down})
	if c.Accesses != 1600 || *c.HitRatio != 1500.0/1600 || c.CapacityBytes != 3072 ||
		c.Policy["0.5"] != 0.5 || c.Policy["2"] != (400*0.9+1200*0.5)/1600 || c.LRU["2"] != 0.8 {
		t.Fatalf("cluster %+v (ratio %v)", c, *c.HitRatio)
	}
	var out bytes.Buffer
	printSizing(&out, sizingReport{Nodes: []nodeSizing{a, b, down}, Cluster: c})
	for _, frag := range []string{"c: cannot read http://c/metrics: refused", "Doubling every node's cache (6.0 KiB in all)", "from 93.8% to about 60.0%"} {
		if !strings.Contains(out.String(), frag) {
			t.Errorf("output lacks %q:\n%s", frag, out.String())
		}
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
	if h := locusctl(t, "sizing", "--help"); h.code != 0 || !strings.Contains(h.stderr, "How large should the cache be?") {
		t.Errorf("sizing --help: %v", h)
	}
}
