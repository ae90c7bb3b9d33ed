package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/locuscache/locus/internal/flagenv"
	"github.com/locuscache/locus/pkg/ring"
)

const ringUsage = `Usage: locusctl ring <command> [flags]

Commands:
  status     the live ring as the scheduler sees it: members, racks, states,
             slots in use, capacity, epoch, block size, replication
  simulate   capacity planning: balance, key movement and lookup cost of a ring
             change ("what moves if I add 4 nodes?"), computed in-process

Run 'locusctl ring <command> --help' for its flags.
`

const simulateUsage = `Usage: locusctl ring simulate [--nodes N] [--vnodes V] [--keys K] [--add M] [--remove M]
                              [--racks R] [--replicas n] [--json]

A capacity-planning tool for operators: it answers "what moves if I add 4
nodes?" (or remove 2) before you do it. It builds the consistent-hash ring
Locus uses for N weight-1 cache nodes, and the ring after the change, in this
process (no cluster needed), places K synthetic block keys on both and prints:

  - balance: how evenly the keys spread over the nodes, as the coefficient of
    variation (CoV) of keys per node and the busiest node over the mean. With
    K keys, sampling noise alone adds about sqrt(N/K) to the CoV; the arc CoV
    is the ring's own spread, without that noise;
  - movement: the fraction of keys whose owner changes, next to the ideal (the
    least any placement could move: M/(N+M) for adding M nodes, M/N for
    removing M), and how many keys moved needlessly between nodes that stayed
    (always 0 for this ring);
  - cost: the mean time of one owner lookup, the ring's memory and build time;
  - with --racks: how often a preference list of --replicas nodes spans
    distinct racks, plain and rack-aware.

Nodes are named node-0000, node-0001, ...; --remove takes away the first M,
--add appends new ones; with --racks R node i is on rack i mod R.

Flags:
  --nodes N      nodes before the change (default 100)
  --vnodes V     virtual nodes per node (default %d, the ring's default)
  --keys K       block keys to place (default 1000000)
  --add M        nodes to add (default 1 when neither --add nor --remove is given, else 0)
  --remove M     nodes to remove (default 0); fewer than --nodes
  --racks R      racks to spread the nodes over (default 0: no racks)
  --replicas n   preference-list length for the rack statistics (default 3)
  --json         print one JSON object instead of text

Example: locusctl ring simulate --nodes 96 --add 4 --racks 4
`

// runRing dispatches "locusctl ring <command>".
func runRing(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, ringUsage)
		return usageErrorf("missing command: status or simulate")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, ringUsage)
		return flag.ErrHelp
	case "simulate":
		return runRingSimulate(args[1:], stdout, stderr)
	case "status":
		return runRingStatus(args[1:], stdout, stderr)
	}
	fmt.Fprint(stderr, ringUsage)
	return usageErrorf("unknown command %q", args[0])
}

// simParams are the inputs of a simulation.
type simParams struct {
	nodes, vnodes, keys, add, remove, racks, replicas int
}

// simResult is what a simulation reports; it is also the --json object.
type simResult struct {
	Nodes      int `json:"nodes"`
	NodesAfter int `json:"nodes_after"`
	VNodes     int `json:"vnodes"`
	Keys       int `json:"keys"`
	Add        int `json:"add"`
	Remove     int `json:"remove"`
	Racks      int `json:"racks"`

	// Balance of keys per node on the ring before the change.
	CoV         float64 `json:"cov"`
	MaxOverMean float64 `json:"max_over_mean"`
	MinOverMean float64 `json:"min_over_mean"`
	NoiseCoV    float64 `json:"sampling_noise_cov"` // sqrt(N/K): the CoV that key sampling alone gives
	ArcCoV      float64 `json:"arc_cov"`            // CoV of the expected shares: the ring's own spread
	// The same after the change.
	CoVAfter         float64 `json:"cov_after"`
	MaxOverMeanAfter float64 `json:"max_over_mean_after"`
	ArcCoVAfter      float64 `json:"arc_cov_after"`

	MovedKeys          int     `json:"moved_keys"`
	MovedFraction      float64 `json:"moved_fraction"`
	IdealMovedFraction float64 `json:"ideal_moved_fraction"`
	MovedOverIdeal     float64 `json:"moved_over_ideal"`
	NeedlessMoves      int     `json:"needless_moves"` // keys moved between nodes present before and after

	LookupNS     float64 `json:"lookup_ns"` // mean Owner lookup time on the ring before the change
	Points       int     `json:"points"`
	RingBytes    int     `json:"ring_bytes"`
	BuildMS      float64 `json:"build_ms"`
	PointsAfter  int     `json:"points_after"`
	BuildMSAfter float64 `json:"build_ms_after"`

	// With racks: the fraction of sampled keys whose first min(replicas,
	// racks) preference-list nodes are on distinct racks.
	Replicas        int      `json:"replicas,omitempty"`
	RackSampleKeys  int      `json:"rack_sample_keys,omitempty"`
	PlainRackSpread *float64 `json:"plain_rack_spread,omitempty"`
	RackAwareSpread *float64 `json:"rack_aware_rack_spread,omitempty"`
	ElapsedMS       float64  `json:"elapsed_ms"`
}

func runRingSimulate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ring simulate", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintf(fs.Output(), simulateUsage, ring.DefaultVNodes) }
	p := simParams{}
	fs.IntVar(&p.nodes, "nodes", 100, "")
	fs.IntVar(&p.vnodes, "vnodes", ring.DefaultVNodes, "")
	fs.IntVar(&p.keys, "keys", 1_000_000, "")
	fs.IntVar(&p.add, "add", 0, "")
	fs.IntVar(&p.remove, "remove", 0, "")
	fs.IntVar(&p.racks, "racks", 0, "")
	fs.IntVar(&p.replicas, "replicas", 3, "")
	asJSON := fs.Bool("json", false, "")
	if err := flagenv.ParseHelp(fs, stdout, func() error { return fs.Parse(args) }); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return flag.ErrHelp
		}
		return usageErrorf("simulate: %v (see --help)", err)
	}
	if fs.NArg() > 0 {
		return usageErrorf("simulate: unexpected argument %q (see --help)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["add"] && !set["remove"] {
		p.add = 1
	}
	if err := p.validate(); err != nil {
		return err
	}
	res, err := simulate(p, newProgress(stderr, "ring simulate", 2*time.Second))
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printSimResult(stdout, res)
	return nil
}

// maxSimKeys bounds --keys: keys are generated and placed in chunks, so
// memory does not grow with it, but time does (about 0.3 s per million).
const maxSimKeys = 1 << 30

func (p simParams) validate() error {
	switch {
	case p.nodes <= 0:
		return usageErrorf("simulate: --nodes must be at least 1, got %d", p.nodes)
	case p.nodes > ring.MaxNodes:
		return usageErrorf("simulate: --nodes must be at most %d, got %d", ring.MaxNodes, p.nodes)
	case p.vnodes <= 0:
		return usageErrorf("simulate: --vnodes must be at least 1, got %d", p.vnodes)
	case p.keys <= 0:
		return usageErrorf("simulate: --keys must be at least 1, got %d", p.keys)
	case p.keys > maxSimKeys:
		return usageErrorf("simulate: --keys must be at most %d, got %d", maxSimKeys, p.keys)
	case p.add < 0:
		return usageErrorf("simulate: --add must not be negative, got %d", p.add)
	case p.remove < 0:
		return usageErrorf("simulate: --remove must not be negative, got %d", p.remove)
	case p.remove >= p.nodes:
		return usageErrorf("simulate: --remove %d would leave no node of %d; remove fewer", p.remove, p.nodes)
	case p.nodes+p.add > ring.MaxNodes:
		return usageErrorf("simulate: --nodes plus --add must be at most %d, got %d", ring.MaxNodes, p.nodes+p.add)
	case p.racks < 0:
		return usageErrorf("simulate: --racks must not be negative, got %d", p.racks)
	case p.replicas <= 0:
		return usageErrorf("simulate: --replicas must be at least 1, got %d", p.replicas)
	case p.replicas > ring.MaxNodes:
		return usageErrorf("simulate: --replicas must be at most %d (the ring's node limit), got %d", ring.MaxNodes, p.replicas)
	}
	if total := float64(p.vnodes) * float64(p.nodes+p.add); total > ring.MaxPoints {
		return usageErrorf("simulate: %d nodes x %d vnodes is %.0f points, over the ring's limit of %d; lower --vnodes",
			p.nodes+p.add, p.vnodes, total, ring.MaxPoints)
	}
	return nil
}

func simNodes(p simParams) (before, after []ring.Node) {
	node := func(i int) ring.Node {
		n := ring.Node{ID: fmt.Sprintf("node-%04d", i), Weight: 1}
		if p.racks > 0 {
			n.Rack = "rack-" + strconv.Itoa(i%p.racks)
		}
		return n
	}
	for i := range p.nodes {
		before = append(before, node(i))
		if i >= p.remove {
			after = append(after, node(i))
		}
	}
	for i := p.nodes; i < p.nodes+p.add; i++ {
		after = append(after, node(i))
	}
	return before, after
}

// idealMoved is the least fraction of keys any placement must move when
// going from n equal nodes to n-removed+added: every key of a removed node
// moves, and each surviving node can keep at most min(1/n, 1/n') of the keys,
// so 1 - (n-removed)/max(n, n') is the least.
func idealMoved(n, added, removed int) float64 {
	most := max(n, n-removed+added)
	return float64(most-(n-removed)) / float64(most)
}

func simulate(p simParams, prog *progress) (*simResult, error) {
	start := time.Now()
	beforeNodes, afterNodes := simNodes(p)
	cfg := ring.Config{VNodes: p.vnodes}
	prog.report("building the ring of %d nodes", len(beforeNodes))
	t0 := time.Now()
	before, err := ring.New(beforeNodes, cfg)
	if err != nil {
		return nil, usageErrorf("simulate: %v", err)
	}
	buildBefore := time.Since(t0)
	prog.report("building the ring of %d nodes", len(afterNodes))
	t0 = time.Now()
	after, err := ring.New(afterNodes, cfg)
	if err != nil {
		return nil, usageErrorf("simulate: %v", err)
	}
	buildAfter := time.Since(t0)

	// toAfter maps a node index of before to its index in after, or -1.
	toAfter := make([]int, before.Len())
	for i := range toAfter {
		toAfter[i] = -1
		if j, ok := after.Index(before.Node(i).ID); ok {
			toAfter[i] = j
		}
	}
	existedBefore := make([]bool, after.Len())
	for _, j := range toAfter {
		if j >= 0 {
			existedBefore[j] = true
		}
	}

	countsBefore := make([]float64, before.Len())
	countsAfter := make([]float64, after.Len())
	res := &simResult{
		Nodes: p.nodes, NodesAfter: after.Len(), VNodes: p.vnodes, Keys: p.keys,
		Add: p.add, Remove: p.remove, Racks: p.racks,
		Points: before.Points(), RingBytes: before.SizeBytes(), PointsAfter: after.Points(),
		BuildMS:      float64(buildBefore.Microseconds()) / 1000,
		BuildMSAfter: float64(buildAfter.Microseconds()) / 1000,
	}

	const chunk = 4096
	keys := make([]string, 0, chunk)
	owners := make([]int, chunk)
	var lookup time.Duration
	var buf []byte
	for base := 0; base < p.keys; base += chunk {
		keys = keys[:0]
		for i := base; i < min(base+chunk, p.keys); i++ {
			buf = simKey(buf[:0], i)
			keys = append(keys, string(buf))
		}
		t := time.Now()
		for j, k := range keys {
			owners[j] = before.OwnerIndex(k)
		}
		lookup += time.Since(t)
		for j, k := range keys {
			ob, oa := owners[j], after.OwnerIndex(k)
			countsBefore[ob]++
			countsAfter[oa]++
			if toAfter[ob] != oa {
				res.MovedKeys++
				if toAfter[ob] >= 0 && existedBefore[oa] {
					res.NeedlessMoves++
				}
			}
		}
		prog.report("placed %d of %d keys", min(base+chunk, p.keys), p.keys)
	}
	res.LookupNS = float64(lookup.Nanoseconds()) / float64(p.keys)
	res.CoV, res.MaxOverMean, res.MinOverMean = spread(countsBefore)
	res.CoVAfter, res.MaxOverMeanAfter, _ = spread(countsAfter)
	res.NoiseCoV = math.Sqrt(float64(p.nodes) / float64(p.keys))
	prog.report("computing arc shares")
	res.ArcCoV, _, _ = spread(before.Shares())
	res.ArcCoVAfter, _, _ = spread(after.Shares())
	res.MovedFraction = float64(res.MovedKeys) / float64(p.keys)
	res.IdealMovedFraction = idealMoved(p.nodes, p.add, p.remove)
	if res.IdealMovedFraction > 0 {
		res.MovedOverIdeal = res.MovedFraction / res.IdealMovedFraction
	}

	if p.racks > 0 {
		prog.report("checking rack spread")
		res.Replicas = p.replicas
		res.RackSampleKeys = min(p.keys, 100_000)
		want := min(p.replicas, p.racks, before.Len())
		plain, aware := 0, 0
		dst := make([]ring.Node, 0, min(p.replicas, before.Len()))
		for i := range res.RackSampleKeys {
			buf = simKey(buf[:0], i)
			k := string(buf)
			if distinctRacks(before.AppendOwners(dst[:0], k, p.replicas), want) {
				plain++
			}
			if distinctRacks(before.AppendOwnersRackAware(dst[:0], k, p.replicas), want) {
				aware++
			}
		}
		fp := float64(plain) / float64(res.RackSampleKeys)
		fa := float64(aware) / float64(res.RackSampleKeys)
		res.PlainRackSpread, res.RackAwareSpread = &fp, &fa
	}
	res.ElapsedMS = float64(time.Since(start).Microseconds()) / 1000
	return res, nil
}

// simKey appends the i-th synthetic block key: 16 blocks per file, like a
// table of 2 GiB Parquet files in 128 MiB blocks.
func simKey(dst []byte, i int) []byte {
	dst = append(dst, "s3://locus-sim/warehouse/events/part-"...)
	dst = strconv.AppendInt(dst, int64(i/16), 10)
	dst = append(dst, ".parquet"...)
	return ring.AppendBlockKey(dst, "", int64(i%16))
}

// distinctRacks reports whether the first want nodes are on distinct racks.
func distinctRacks(nodes []ring.Node, want int) bool {
	if len(nodes) < want {
		return false
	}
	seen := make(map[string]bool, want)
	for _, n := range nodes[:want] {
		if seen[n.Rack] {
			return false
		}
		seen[n.Rack] = true
	}
	return true
}

// spread returns the coefficient of variation, max/mean and min/mean of xs.
func spread(xs []float64) (cov, maxOverMean, minOverMean float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	mean, hi, lo := 0.0, math.Inf(-1), math.Inf(1)
	for _, x := range xs {
		mean += x
		hi, lo = max(hi, x), min(lo, x)
	}
	mean /= float64(len(xs))
	if mean == 0 {
		return 0, 0, 0
	}
	v := 0.0
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	return math.Sqrt(v/float64(len(xs))) / mean, hi / mean, lo / mean
}

func printSimResult(w io.Writer, r *simResult) {
	change := []string{}
	if r.Add > 0 {
		change = append(change, fmt.Sprintf("+%d", r.Add))
	}
	if r.Remove > 0 {
		change = append(change, fmt.Sprintf("-%d", r.Remove))
	}
	if len(change) == 0 {
		change = append(change, "no change")
	}
	racks := "no racks"
	if r.Racks == 1 {
		racks = "1 rack"
	} else if r.Racks > 0 {
		racks = fmt.Sprintf("%d racks", r.Racks)
	}
	fmt.Fprintf(w, "ring simulate: %d -> %d nodes (%s), %d vnodes per node, %d keys, %s\n\n",
		r.Nodes, r.NodesAfter, strings.Join(change, " "), r.VNodes, r.Keys, racks)

	fmt.Fprintf(w, "balance (keys per node)        before      after\n")
	fmt.Fprintf(w, "  CoV                         %6.2f%%    %6.2f%%   (sampling noise alone ~%.2f%%)\n",
		100*r.CoV, 100*r.CoVAfter, 100*r.NoiseCoV)
	fmt.Fprintf(w, "  arc CoV (no sampling noise) %6.2f%%    %6.2f%%\n", 100*r.ArcCoV, 100*r.ArcCoVAfter)
	fmt.Fprintf(w, "  max/mean                    %7.3f    %7.3f\n", r.MaxOverMean, r.MaxOverMeanAfter)
	fmt.Fprintf(w, "  min/mean                    %7.3f\n\n", r.MinOverMean)

	fmt.Fprintf(w, "movement\n")
	fmt.Fprintf(w, "  moved          %7.3f%% of keys (%d)\n", 100*r.MovedFraction, r.MovedKeys)
	fmt.Fprintf(w, "  ideal          %7.3f%%\n", 100*r.IdealMovedFraction)
	if r.IdealMovedFraction > 0 {
		fmt.Fprintf(w, "  moved/ideal    %7.3f\n", r.MovedOverIdeal)
	}
	fmt.Fprintf(w, "  needless moves %d (keys moved between nodes present before and after)\n\n", r.NeedlessMoves)

	fmt.Fprintf(w, "cost\n")
	fmt.Fprintf(w, "  lookup         %.0f ns per key (mean of %d Owner lookups)\n", r.LookupNS, r.Keys)
	fmt.Fprintf(w, "  ring memory    %s for %d points (after: %d points)\n", humanBytes(r.RingBytes), r.Points, r.PointsAfter)
	fmt.Fprintf(w, "  build time     %.1f ms (after: %.1f ms)\n", r.BuildMS, r.BuildMSAfter)

	if r.PlainRackSpread != nil {
		fmt.Fprintf(w, "\nracks (first %d of %d replicas on distinct racks, %d keys sampled)\n",
			min(r.Replicas, r.Racks, r.Nodes), r.Replicas, r.RackSampleKeys)
		fmt.Fprintf(w, "  plain list     %6.2f%%\n", 100**r.PlainRackSpread)
		fmt.Fprintf(w, "  rack-aware     %6.2f%%\n", 100**r.RackAwareSpread)
	}
}

func humanBytes(n int) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
