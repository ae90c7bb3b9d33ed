package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/locuscache/locus/internal/flagenv"
	"github.com/locuscache/locus/pkg/cache/policy"
	"github.com/locuscache/locus/pkg/cache/sim"
)

// cacheSimReport is the --json output of cache-sim.
type cacheSimReport struct {
	Trace    string       `json:"trace"`
	Format   string       `json:"format"`
	Accesses int          `json:"accesses"`
	Distinct int          `json:"distinct_keys"`
	Seed     uint64       `json:"seed"`
	Results  []sim.Result `json:"results"`
}

// maxCapacityFrac bounds --capacity-frac.
const maxCapacityFrac = 1e6

// stdin is what --trace - reads (a test sets it).
var stdin io.Reader = os.Stdin

// runCacheSim implements `locusctl cache-sim`: it replays a trace through the
// page cache's policies (the real policy code, no storage) and the library
// baselines, and prints hit ratios.
func runCacheSim(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cache-sim", flag.ContinueOnError)
	fs.Usage = func() { cacheSimUsage(fs.Output(), fs) }
	trace := fs.String("trace", "", "trace `FILE` (plain or gzip, detected by content; - reads standard input)")
	format := fs.String("format", "keys", "trace format: keys (one decimal key per line), lirs (one block per line), arc (\"start count ignore req\" lines)")
	capacity := fs.String("capacity", "", "cache capacity in keys (pages), or a comma-separated list")
	fracs := fs.String("capacity-frac", "", "cache capacity as a fraction of the trace's distinct keys, or a comma-separated list (e.g. 0.01,0.1,0.5)")
	pols := fs.String("policy", "", "comma-separated policies (default all: "+strings.Join(sim.PolicyNames(), ",")+")")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	seed := fs.Uint64("seed", 1, "seed of the policies that take one (the default policy's hashes and tie-breaks; not wtinylfu's)")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	parallel := fs.Int("parallel", runtime.GOMAXPROCS(0), "replays run at once (one policy at one capacity each; the results do not depend on it, the memory grows with it)")
	if err := flagenv.ParseHelp(fs, stdout, func() error { return fs.Parse(args) }); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return flag.ErrHelp
		}
		return usageErrorf("%v (see locusctl cache-sim --help)", err)
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected argument %q (see locusctl cache-sim --help)", fs.Arg(0))
	}
	if *trace == "" {
		return usageErrorf("--trace is required")
	}
	f := sim.Format(*format)
	if !isFormat(f) {
		return usageErrorf("--format %q: want keys, lirs or arc", *format)
	}
	if (*capacity == "") == (*fracs == "") {
		return usageErrorf("give exactly one of --capacity N and --capacity-frac F[,F...]")
	}
	if *parallel < 1 {
		return usageErrorf("--parallel %d: want at least 1", *parallel)
	}
	var opts sim.Options
	opts.Seed = *seed
	opts.Parallel = *parallel
	if *capacity != "" {
		for _, s := range strings.Split(*capacity, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 1 || n > policy.MaxCapacity {
				return usageErrorf("--capacity %q: want a whole number of keys from 1 to %d", s, policy.MaxCapacity)
			}
			opts.Capacities = append(opts.Capacities, n)
		}
	}
	if *fracs != "" {
		for _, s := range strings.Split(*fracs, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || !(v > 0) {
				return usageErrorf("--capacity-frac %q: want a positive fraction of the distinct keys, e.g. 0.1", s)
			}
			if v > maxCapacityFrac {
				return usageErrorf("--capacity-frac %q: want at most %g (times the distinct keys)", s, maxCapacityFrac)
			}
			opts.Fractions = append(opts.Fractions, v)
		}
	}
	if *pols != "" {
		for _, p := range strings.Split(*pols, ",") {
			name, ok := policyName(p)
			if !ok {
				return usageErrorf("--policy %q: want one of %s", p, strings.Join(sim.PolicyNames(), ", "))
			}
			opts.Policies = append(opts.Policies, name)
		}
	}
	if !*quiet {
		opts.Progress = stderr
	}

	var t *sim.Trace
	var err error
	if *trace == "-" {
		t, err = sim.Read(stdin, f, "stdin")
	} else {
		t, err = sim.ReadFile(*trace, f)
	}
	if err != nil {
		return err
	}
	if sizes, err := opts.Sizes(t); err == nil && len(sizes) < len(opts.Capacities)+len(opts.Fractions) {
		fmt.Fprintf(stderr, "cache-sim: %d of the sizes asked for come to a capacity asked for already (%d distinct keys); each capacity is replayed once\n",
			len(opts.Capacities)+len(opts.Fractions)-len(sizes), t.Distinct)
	}
	if !*quiet && len(t.Keys) >= 1_000_000 {
		fmt.Fprintf(stderr, "cache-sim: %s: %d accesses, %d distinct keys\n", t.Name, len(t.Keys), t.Distinct)
	}
	results, err := sim.Run(t, opts)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(cacheSimReport{
			Trace: t.Name, Format: string(f), Accesses: len(t.Keys), Distinct: t.Distinct,
			Seed: *seed, Results: results,
		})
	}
	fmt.Fprintf(stdout, "trace %s (%s): %d accesses, %d distinct keys; hit ratio by policy\n\n",
		t.Name, f, len(t.Keys), t.Distinct)
	if err := sim.WriteTable(stdout, policy.DefaultName, results); err != nil {
		return err
	}
	var notes []string
	ran := func(name string) bool {
		return slices.ContainsFunc(results, func(r sim.Result) bool { return r.Policy == name })
	}
	if ran(policy.DefaultName) {
		notes = append(notes, policy.DefaultName+" is the default policy")
	}
	if ran(sim.NameBelady) {
		notes = append(notes, sim.NameBelady+" is the offline optimum (an upper bound)")
	}
	if len(notes) > 0 {
		fmt.Fprintf(stdout, "\n%s.\n", strings.Join(notes, "; "))
	}
	return nil
}

func isFormat(f sim.Format) bool {
	for _, g := range sim.Formats {
		if f == g {
			return true
		}
	}
	return false
}

// policyAliases are other spellings of the policy names --policy takes
// (after lower-casing), as the papers and other simulators write them.
var policyAliases = map[string]string{
	"default":   policy.DefaultName,
	"w-tinylfu": sim.NameWTinyLFU,
	"w_tinylfu": sim.NameWTinyLFU,
	"tinylfu":   sim.NameWTinyLFU,
	"otter":     sim.NameWTinyLFU,
	"opt":       sim.NameBelady,
	"optimal":   sim.NameBelady,
	"min":       sim.NameBelady,
}

// policyName returns the policy --policy names by s: one of
// sim.PolicyNames, in any case, or an alias of one.
func policyName(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if a, ok := policyAliases[s]; ok {
		s = a
	}
	for _, n := range sim.PolicyNames() {
		if n == s {
			return n, true
		}
	}
	return "", false
}

func cacheSimUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `Usage: locusctl cache-sim --trace FILE [--format keys|lirs|arc]
         (--capacity N | --capacity-frac F[,F...]) [--policy P[,P...]] [--json]

Replays a trace through the page cache's eviction policies (the real policy
code, no disk) and prints each policy's hit ratio at each capacity:
  locus     the default policy (W-TinyLFU, LRU and ARC variants; the one
            that does best on the recent accesses, by miniature simulation)
  lru       least recently used, the baseline
  arc       ARC (hashicorp/golang-lru/arc/v2)
  wtinylfu  adaptive W-TinyLFU (maypok86/otter/v2, synchronous maintenance);
            otter seeds its hashes at random and --seed cannot set them, so
            its ratios vary between runs (by a few points on tiny caches)
  belady    the offline optimum, an upper bound for every policy
Policy names are case-insensitive; w-tinylfu and tinylfu name wtinylfu,
opt and min name belady, default names locus.

The table gives hit ratios in percent; --json prints {"trace": ...,
"results": [{"policy": ..., "capacity": ..., "hit_ratio": ...}, ...]} with
hit_ratio a fraction from 0 to 1 (and the hits, accesses and fraction of
the distinct keys). A capacity asked twice is replayed once.

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprint(w, `
Examples:
  locusctl cache-sim --trace lirs-loop.keys.gz --capacity-frac 0.01,0.05,0.1,0.25,0.5
  locusctl cache-sim --trace OLTP.lis --format arc --capacity 1000 --policy locus,arc --json
`)
}
