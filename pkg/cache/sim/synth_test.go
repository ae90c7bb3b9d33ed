package sim

import (
	"flag"
	"strings"
	"testing"

	"github.com/locuscache/locus/pkg/cache/policy"
)

// synthShortfall is the bar on the synthetic traces: the default policy is
// at most this many points below the best of LRU, ARC and W-TinyLFU (the
// median of otterRuns otter runs) at every point, with no exception list.
// It is looser than the shared traces' 0.5 points because these traces were
// not used to choose the policy (a held-out check, not a target), and 1
// point is still well under the spread between the baselines on them
// (several points, tens on the scan and loop traces).
const synthShortfall = 1.0

// synthKnown lists the synthetic points that miss synthShortfall for some
// policy seed or otter run, with the worst gap this test accepts there: the
// worst gap over policy seeds 1 to 5 against the best of LRU, ARC and
// otter's best of 5 runs (TestSeedSweep -sweep-synth), less 0.25 points.
// Shrink the list when the policy improves; never widen a bound to pass.
// (The fourth round's restart of a sampling tuner's decisions when its
// shadows fill took synth-phases at 50% and synth-mixed at 10% and 50%
// off the list; the sixth round's sticky admission took synth-loop at 1, 5
// and 10% off it: +1.6 to +4.8 points above otter's median run, seed 1
// (testdata/synthetic.md), where otter's own runs spread over 3 to 4
// points.)
var synthKnown = map[string]float64{
	// Zipf 0.6, a sampling cache: seed 4 alone (-1.00 against otter's
	// median run, -1.05 against its best of 5; seeds 1 to 5: +0.09, -0.66,
	// +0.11, -1.00, +0.10). The policy seed changes which keys the tuner
	// samples, and with them which candidate its early shadows rank first.
	"synth-zipf-0.6@25%": -1.30,
}

func TestSyntheticTracesAreFixed(t *testing.T) {
	a, b := SynthPhases(100, 1000, 3, 7), SynthPhases(100, 1000, 3, 7)
	if len(a.Keys) != 3000 || a.Distinct != b.Distinct || !equalKeys(a.Keys, b.Keys) {
		t.Fatalf("SynthPhases is not deterministic: %d keys, distinct %d/%d", len(a.Keys), a.Distinct, b.Distinct)
	}
	if c := SynthPhases(100, 1000, 3, 8); equalKeys(a.Keys, c.Keys) {
		t.Fatal("another seed gave the same trace")
	}
	for _, tr := range SyntheticTraces() {
		if len(tr.Keys) == 0 || tr.Distinct < 1000 || !strings.HasPrefix(tr.Name, "synth-") {
			t.Errorf("%s: %d accesses, %d distinct", tr.Name, len(tr.Keys), tr.Distinct)
		}
	}
}

// TestSynthDB checks the database-like stream's shape on a small instance:
// its length, its determinism, and that it holds both the hot keys and
// scanned cold keys that come back in a later scan.
func TestSynthDB(t *testing.T) {
	a, b := SynthDB(500, 20000, 200, 100000, 3), SynthDB(500, 20000, 200, 100000, 3)
	if len(a.Keys) != 100000 || !equalKeys(a.Keys, b.Keys) {
		t.Fatalf("SynthDB is not deterministic or has %d accesses, want 100000", len(a.Keys))
	}
	hot := map[uint64]bool{}
	for k := range uint64(500) {
		hot[HashKey(spaceHot+k)] = true
	}
	coldCount := map[uint64]int{}
	var hotAcc int
	for _, k := range a.Keys {
		if hot[k] {
			hotAcc++
		} else {
			coldCount[k]++
		}
	}
	again := 0
	for _, n := range coldCount {
		if n > 1 {
			again++
		}
	}
	if hotAcc == 0 || len(coldCount) == 0 || len(coldCount) > 20000 || again == 0 {
		t.Fatalf("got %d hot accesses, %d cold keys (%d read more than once), want both kinds, at most 20000 cold keys, some read again",
			hotAcc, len(coldCount), again)
	}
}

func equalKeys(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSyntheticBar replays the synthetic traces (SyntheticTraces) at the
// acceptance fractions and checks the default policy against synthShortfall
// at every point. With -write-results it writes testdata/synthetic.md.
func TestSyntheticBar(t *testing.T) {
	syntheticBar(t, SyntheticTraces(), synthKnown, "synthetic.md", "Hit ratios on the synthetic traces",
		"-run TestSyntheticBar -count=1 -args -write-results", synthShortfall)
}

// syntheticBar replays traces and fails every point more than
// synthShortfall below the best baseline, unless known lists it with a
// bound it meets. With -write-results it writes testdata/file, marking
// the points below markBar.
func syntheticBar(t *testing.T, traces []*Trace, known map[string]float64, file, title, args string, markBar float64) {
	t.Helper()
	policies := []string{policy.DefaultName, "lru", NameARC}
	if *writeResults {
		policies = append(policies, NameBelady)
	}
	all := replayTraces(t, traces, policies)
	for _, tr := range all {
		for _, row := range tr.rows {
			gap, _ := row.Gap(policy.DefaultName)
			key := shortfallKey(tr.trace.Name, row.Fraction)
			if bound, ok := known[key]; ok && gap*100 >= bound {
				t.Logf("%s: known shortfall: locus %.2f%%, gap %+.2f points (bound %+.2f)", key, row.Ratio[policy.DefaultName]*100, gap*100, bound)
				continue
			}
			if gap*100 < -synthShortfall {
				t.Errorf("%s@%g%%: locus %.2f%% is %+.2f points from the best baseline, want >= %+.1f (lru %.2f%%, arc %.2f%%, wtinylfu %.2f%%)",
					tr.trace.Name, row.Fraction*100, row.Ratio[policy.DefaultName]*100, gap*100, -synthShortfall,
					row.Ratio["lru"]*100, row.Ratio[NameARC]*100, row.Ratio[NameWTinyLFU]*100)
			}
		}
	}
	if *writeResults {
		writeResultsFile(t, file, title, args, markBar, all)
	}
}

// smallKnown is synthKnown for the small held-out set (seeds 1 to 5
// against otter's best of 5 runs, less 0.25 points; the eleventh round in
// the policy package's doc.go explains each).
var smallKnown = map[string]float64{
	// After a Zipf part, a loop that fits the cache: the W-TinyLFU
	// candidates refuse it while the sketch holds the Zipf keys' counts.
	// The loop's first pass restarts the tuner's schedule (a run of
	// misses), it follows LRU early in the second (the restart's quick
	// decisions, the fourteenth round), and the live cache loads the loop
	// in the rest of that pass and the next (-5.38 to -6.07 before the
	// twelfth round, -3.57 to -3.69 before the fourteenth).
	"small-concat@25%": -2.33, // worst -2.08; seeds 1-5: -2.08, -2.05, -2.02, -2.03, -2.05
	// Within synthShortfall against otter's median run for every seed
	// (-0.53, -0.00, +0.21, +0.55, +0.06 since the thirteenth round), not
	// against its luckier runs: over 40 otter runs (2026-11-30) otter hits
	// 54.61 to 58.36% here, and a CI run whose median of 5 came out at
	// 57.64% failed seed 1 (then 56.56%) at -1.08. The bound is the worst
	// seed's gap against otter's highest of the 40 runs (-1.79, seed 1),
	// less 0.25 points, as the shared traces' knownShortfalls are made.
	"small-concat@10%": -2.04,
	// A full-sampling cache that starts as the sticky window and reaches
	// LRU a period or two after the fill. (The thirteenth round took 5%
	// off the list: -0.45 against LRU for every seed, from -0.96.)
	"small-mixed@10%": -1.39, // worst -1.14
	// The database-like stream: the sample's ranking flips with the scans.
	"small-db@50%": -2.32, // worst -2.07 against otter's best of 40 runs; -1.22, -1.18, -1.21, -1.38, -1.06 against their median
	"small-db@25%": -1.51, // worst -1.26 against otter's best run; -0.42, -0.91, -0.89, -0.02, -0.91
	// Seeds 2, 3 and 5 (+0.62, -1.47, -0.82, +0.61, -0.80): another
	// sample of keys ranks the candidates otherwise.
	"small-one-hit@10%": -1.77, // worst -1.52 against otter's best run
}

// TestSmallSyntheticBar is TestSyntheticBar on SmallSyntheticTraces, the
// held-out set of small caches added in the eleventh round. With
// -write-results it writes testdata/small.md, whose marks use the shared
// traces' bar (0.5 points) while the test fails at synthShortfall.
func TestSmallSyntheticBar(t *testing.T) {
	syntheticBar(t, SmallSyntheticTraces(), smallKnown, "small.md", "Hit ratios on the small held-out synthetic traces",
		"-run TestSmallSyntheticBar -count=1 -args -write-results", maxShortfall)
}

var large = flag.Bool("large", false, "TestLargeSyntheticBar replays the large synthetic set (minutes)")

// largeKnown is synthKnown for the large set (seeds 1 to 5 against
// otter's best of 5 runs, less 0.25 points). The database-like stream's
// large caches steer on a sample of 1 to 2% of their keys whose ranking of
// the candidates flips from one period to the next (the seventh round in
// the policy package's doc.go).
var largeKnown = map[string]float64{
	"synth-db@25%": -1.79, // worst -1.54; seeds 1-5 against otter's median: -0.57, +0.67, +0.62, -1.18, -0.37
	"synth-db@50%": -3.11, // worst -2.86; -2.27, -1.84, -1.66, -1.62, -2.86
	// Four workloads end to end (added in the eighth round): after each
	// change of workload the W-TinyLFU candidates keep the old one's keys
	// and the tuner reaches LRU or ARC late (the eighth round in doc.go;
	// the tenth round's unconfirmed, cheaper switches to LRU gain 0.1 to
	// 1.8).
	// LRU or ARC is the best baseline; otter is 8 to 16 points under them.
	"synth-large-concat@5%":  -1.20, // worst -0.95; -0.74, -0.95, -0.35, -0.52, -0.79
	"synth-large-concat@10%": -1.87, // worst -1.62; -1.62, -1.01, -0.47, -0.10, +0.36
	"synth-large-concat@25%": -1.74, // worst -1.49; -0.48, -1.45, -1.42, -1.49, -1.46
}

// TestLargeSyntheticBar is TestSyntheticBar on LargeSyntheticTraces, run
// only with -large (about 19.5 million accesses per policy and size; about
// seven minutes on 2 cores). With -write-results it writes testdata/large.md,
// whose marks use the shared traces' bar (0.5 points) while the test fails
// at synthShortfall, as TestSyntheticBar does.
func TestLargeSyntheticBar(t *testing.T) {
	if !*large {
		t.Skip("the large synthetic set takes minutes: run with -args -large")
	}
	syntheticBar(t, LargeSyntheticTraces(), largeKnown, "large.md", "Hit ratios on the large synthetic traces",
		"-run TestLargeSyntheticBar -count=1 -timeout 40m -args -large -write-results", maxShortfall)
}

// TestSynthConcat checks that SynthConcat plays its parts in order, keeps
// each part's pattern (a part's keys map one to one) and makes the parts'
// keys disjoint, so Distinct is the parts' sum.
func TestSynthConcat(t *testing.T) {
	a, b := SynthZipf(0.8, 1000, 5000, 1), SynthZipf(0.8, 1000, 5000, 1) // the same part twice
	tr := SynthConcat("c", a, b)
	if len(tr.Keys) != 10000 || tr.Name != "c" {
		t.Fatalf("got %d keys named %q, want 10000 named c", len(tr.Keys), tr.Name)
	}
	seen := map[uint64]bool{}
	for _, k := range tr.Keys {
		seen[k] = true
	}
	if len(seen) != tr.Distinct || tr.Distinct != a.Distinct+b.Distinct {
		t.Errorf("Distinct %d, counted %d, want %d", tr.Distinct, len(seen), a.Distinct+b.Distinct)
	}
	for i := range a.Keys {
		if tr.Keys[i] != a.Keys[i] {
			t.Fatalf("key %d of the first part changed", i)
		}
		if (tr.Keys[5000+i] == tr.Keys[5000]) != (a.Keys[i] == a.Keys[0]) {
			t.Fatalf("key %d of the second part no longer repeats as in the part", i)
		}
	}
}
