package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"text/tabwriter"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/locuscache/locus/internal/units"
	"github.com/locuscache/locus/pkg/client"
)

const sizingUsage = `Usage: locusctl sizing --scheduler URL [--json] [--token-file F] [--timeout D]
                       [--tls-ca F [--tls-cert F --tls-key F]]

How large should the cache be? For each cache node of the ring (GET
/v1/ring on the scheduler), it reads the node's /metrics and prints its
cache capacity, the page hits and misses it has counted since it started,
its page hit ratio, and the hit ratio it would have at 0.25x, 0.5x, 2x and
4x its capacity. The estimates simulate the node's own eviction policy at
those sizes on a sample of its page reads (miniature simulation, anchored
at the measured ratio; metric locus_cache_estimated_hit_ratio
{model="policy"}); SAMPLED is how many reads that sample holds. The LRU
curve (SHARDS, model="lru") is in --json too: for a scan-resistant policy
it is often far below what the policy gets. The CLUSTER line weighs each
node by its page accesses, as if every node changed size by the same
factor; when some nodes have no estimate, a "k NODES" line gives those
that do, with their own capacity and hit ratio.

The estimates describe the reads since each node started: read them after
a representative workload has run for a while (a few hundred SAMPLED
reads at least). A node started with --cache-sizing=false, one without
reads yet, or one not reachable shows "-".

Exits 1 if the scheduler cannot be reached; 2 for bad flags.

Flags:
  --scheduler URL     the scheduler's HTTP API, its --http-addr. Required.
  --json              print one JSON object (nodes[...], cluster) instead
  --token-file F      bearer token, if a proxy protects the API's reads
  --timeout D         bound on each call (default 10s)
  --tls-ca F          CA of the nodes' (and an https scheduler's) certificates;
                      with TLS flags the nodes' /metrics are read over https
  --tls-cert F, --tls-key F
                      client certificate, if the cluster requires one
` + envHelp + `
Example:
  locusctl sizing --scheduler http://127.0.0.1:8080
`

// sizingFactors are the sizes the nodes estimate, relative to their own.
var sizingFactors = []string{"0.25", "0.5", "2", "4"}

// nodeSizing is one node's line (and --json entry).
type nodeSizing struct {
	Node          string  `json:"node"`
	HTTPAddress   string  `json:"http_address"`
	CapacityBytes int64   `json:"capacity_bytes"`
	Hits          float64 `json:"hits"`
	Misses        float64 `json:"misses"`
	// HitRatio is Hits over Hits+Misses (pages), nil before any access.
	HitRatio *float64 `json:"hit_ratio"`
	// SampledReads is how many page reads the node's policy estimates
	// replayed (their sample).
	SampledReads float64 `json:"sampled_reads"`
	// Policy and LRU map a size factor ("0.25", "0.5", "2", "4") to the
	// estimated hit ratio; empty when the node does not estimate.
	Policy map[string]float64 `json:"policy"`
	LRU    map[string]float64 `json:"lru"`
	Error  string             `json:"error,omitempty"`
}

// clusterSizing is the cluster line: every node's capacity and counts,
// and for each model the estimates of the nodes that have all four,
// weighted by their page accesses, with those nodes' own capacity and
// measured ratio (the estimates are comparable with those, not with the
// whole cluster's when some nodes do not estimate).
type clusterSizing struct {
	CapacityBytes int64    `json:"capacity_bytes"`
	Accesses      float64  `json:"accesses"`
	HitRatio      *float64 `json:"hit_ratio"`
	Policy        modelSum `json:"policy"`
	LRU           modelSum `json:"lru"`
}

// modelSum is one model's estimates over the nodes that have them.
type modelSum struct {
	Nodes         int                `json:"nodes"` // nodes with accesses and all four estimates
	CapacityBytes int64              `json:"capacity_bytes"`
	SampledReads  float64            `json:"sampled_reads"` // the policy model's, summed
	HitRatio      *float64           `json:"hit_ratio"`     // measured, over those nodes
	Estimates     map[string]float64 `json:"estimates"`     // by size factor
}

type sizingReport struct {
	Nodes   []nodeSizing  `json:"nodes"`
	Cluster clusterSizing `json:"cluster"`
}

// runSizing is "locusctl sizing".
var runSizing = withSignals(sizingMain)

func sizingMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseRingFlags("sizing", sizingUsage, args, stdout)
	if err != nil {
		return err
	}
	tlsCfg, err := o.tls.config()
	if err != nil {
		return err
	}
	sc, err := o.sched.open(tlsCfg)
	if err != nil {
		return err
	}
	defer sc.Close()
	rs, err := sc.Ring(ctx)
	if err != nil {
		return schedulerError(o.sched.url, "reading the ring", err)
	}
	hc := &http.Client{Timeout: o.sched.timeout}
	if tlsCfg != nil {
		hc.Transport = &http.Transport{TLSClientConfig: tlsCfg}
	}
	rep := collectSizing(ctx, hc, tlsCfg, rs)
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printSizing(stdout, rep)
	return nil
}

// collectSizing scrapes every cache node of rs and sums the cluster line.
func collectSizing(ctx context.Context, hc *http.Client, tlsCfg *tls.Config, rs client.RingStatus) sizingReport {
	var rep sizingReport
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	for _, m := range rs.Members {
		if m.Role == "observer" {
			continue
		}
		ns := nodeSizing{Node: m.Node, HTTPAddress: m.HTTPAddress, CapacityBytes: m.CapacityBytes}
		if m.HTTPAddress == "" {
			ns.Error = "no HTTP address in the ring"
		} else if err := scrapeSizing(ctx, hc, scheme+"://"+m.HTTPAddress+"/metrics", &ns); err != nil {
			ns.Error = err.Error()
		}
		rep.Nodes = append(rep.Nodes, ns)
	}
	sort.Slice(rep.Nodes, func(i, j int) bool { return rep.Nodes[i].Node < rep.Nodes[j].Node })
	rep.Cluster = sumSizing(rep.Nodes)
	return rep
}

// scrapeSizing reads a node's /metrics into ns.
func scrapeSizing(ctx context.Context, hc *http.Client, url string, ns *nodeSizing) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("cannot parse %s: %w", url, err)
	}
	parseSizing(fams, ns)
	return nil
}

// parseSizing fills ns from a node's metric families.
func parseSizing(fams map[string]*dto.MetricFamily, ns *nodeSizing) {
	value := func(m *dto.Metric) float64 {
		switch {
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue()
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue()
		}
		return m.GetUntyped().GetValue()
	}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	if f := fams["locus_cache_capacity_bytes"]; f != nil && len(f.GetMetric()) > 0 {
		ns.CapacityBytes = int64(value(f.GetMetric()[0]))
	}
	if f := fams["locus_cache_hits_total"]; f != nil && len(f.GetMetric()) > 0 {
		ns.Hits = value(f.GetMetric()[0])
	}
	if f := fams["locus_cache_misses_total"]; f != nil {
		for _, m := range f.GetMetric() {
			if label(m, "cause") != "owner_unavailable" { // not a cache miss: the owner was down
				ns.Misses += value(m)
			}
		}
	}
	if f := fams["locus_cache_sizing_sampled_reads_total"]; f != nil && len(f.GetMetric()) > 0 {
		ns.SampledReads = value(f.GetMetric()[0])
	}
	if n := ns.Hits + ns.Misses; n > 0 {
		r := ns.Hits / n
		ns.HitRatio = &r
	}
	ns.Policy, ns.LRU = map[string]float64{}, map[string]float64{}
	if f := fams["locus_cache_estimated_hit_ratio"]; f != nil {
		for _, m := range f.GetMetric() {
			dst := ns.Policy
			if label(m, "model") == "lru" {
				dst = ns.LRU
			}
			if fac, err := strconv.ParseFloat(label(m, "size_factor"), 64); err == nil {
				dst[strconv.FormatFloat(fac, 'g', 3, 64)] = value(m)
			}
		}
	}
}

// sumSizing sums the nodes into the cluster line.
func sumSizing(nodes []nodeSizing) clusterSizing {
	var c clusterSizing
	var hits float64
	for _, n := range nodes {
		c.CapacityBytes += n.CapacityBytes
		c.Accesses += n.Hits + n.Misses
		hits += n.Hits
	}
	if c.Accesses > 0 {
		r := hits / c.Accesses
		c.HitRatio = &r
	}
	c.Policy = sumModel(nodes, func(n nodeSizing) map[string]float64 { return n.Policy })
	c.LRU = sumModel(nodes, func(n nodeSizing) map[string]float64 { return n.LRU })
	return c
}

// sumModel weighs the estimates of the nodes that have all four by their
// page accesses.
func sumModel(nodes []nodeSizing, est func(nodeSizing) map[string]float64) modelSum {
	m := modelSum{Estimates: map[string]float64{}}
	var hits, accesses float64
	for _, n := range nodes {
		a, e := n.Hits+n.Misses, est(n)
		complete := a > 0
		for _, f := range sizingFactors {
			_, ok := e[f]
			complete = complete && ok
		}
		if !complete {
			continue
		}
		m.Nodes++
		m.CapacityBytes += n.CapacityBytes
		m.SampledReads += n.SampledReads
		hits += n.Hits
		accesses += a
		for _, f := range sizingFactors {
			m.Estimates[f] += a * e[f]
		}
	}
	if accesses == 0 {
		m.Estimates = map[string]float64{}
		return m
	}
	r := hits / accesses
	m.HitRatio = &r
	for f := range m.Estimates {
		m.Estimates[f] /= accesses
	}
	return m
}

// printSizing prints the report as a table and a one-line reading.
func printSizing(w io.Writer, rep sizingReport) {
	pct := func(r *float64) string {
		if r == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100**r)
	}
	est := func(m map[string]float64, f string) string {
		r, ok := m[f]
		if !ok {
			return "-"
		}
		return pct(&r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "NODE\tCAPACITY\tHITS\tMISSES\tHIT RATIO\tSAMPLED\tx0.25\tx0.5\tx2\tx4\t")
	line := func(name string, capacity int64, hits, misses string, ratio *float64, sampled float64, m map[string]float64) {
		s := "-"
		if m != nil {
			s = strconv.FormatFloat(sampled, 'f', 0, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s", name, units.HumanBytes(capacity), hits, misses, pct(ratio), s)
		for _, f := range sizingFactors {
			fmt.Fprintf(tw, "\t%s", est(m, f))
		}
		fmt.Fprintln(tw, "\t")
	}
	var errs []string
	for _, n := range rep.Nodes {
		if n.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t\n", n.Node, units.HumanBytes(n.CapacityBytes))
			errs = append(errs, fmt.Sprintf("%s: %s", n.Node, n.Error))
			continue
		}
		m := n.Policy
		if n.HitRatio == nil {
			m = nil // no access yet: nothing to estimate from
		}
		line(n.Node, n.CapacityBytes, strconv.FormatFloat(n.Hits, 'f', 0, 64), strconv.FormatFloat(n.Misses, 'f', 0, 64), n.HitRatio, n.SampledReads, m)
	}
	c, p := rep.Cluster, rep.Cluster.Policy
	whole := p.Nodes > 0 && p.Nodes == len(rep.Nodes) // else the estimates are of a subset: say which
	if whole {
		line("CLUSTER", c.CapacityBytes, "", "", c.HitRatio, p.SampledReads, p.Estimates)
	} else {
		line("CLUSTER", c.CapacityBytes, "", "", c.HitRatio, 0, nil)
		if p.Nodes > 0 {
			line(fmt.Sprintf("%d NODES", p.Nodes), p.CapacityBytes, "", "", p.HitRatio, p.SampledReads, p.Estimates)
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "\nHit ratios are of pages; x0.25 ... x4: estimated at that many times each node's capacity (its own policy,")
	fmt.Fprintln(w, "simulated on SAMPLED of its page reads: read a few hundred at least before trusting them).")
	for _, e := range errs {
		fmt.Fprintf(w, "  %s\n", e)
	}
	if p.Nodes == 0 {
		fmt.Fprintln(w, "No node has estimates yet (none has sampled a page read, or all run with --cache-sizing=false).")
		return
	}
	who := "every node's cache"
	if !whole {
		who = fmt.Sprintf("the caches of the %d of %d nodes that estimate (the %d NODES line)", p.Nodes, len(rep.Nodes), p.Nodes)
	}
	fmt.Fprintf(w, "Doubling %s (%s in all) would take their page hit ratio from %s to about %s; halving them, to about %s.\n",
		who, units.HumanBytes(2*p.CapacityBytes), pct(p.HitRatio), est(p.Estimates, "2"), est(p.Estimates, "0.5"))
}
