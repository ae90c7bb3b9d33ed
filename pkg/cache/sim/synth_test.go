package sim

import (
	"bytes"
	"os"
	"path/filepath"
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
	policies := []string{policy.DefaultName, "lru", NameARC}
	if *writeResults {
		policies = append(policies, NameBelady)
	}
	all := replayTraces(t, SyntheticTraces(), policies)
	for _, tr := range all {
		for _, row := range tr.rows {
			gap, _ := row.Gap(policy.DefaultName)
			key := shortfallKey(tr.trace.Name, row.Fraction)
			if bound, ok := synthKnown[key]; ok && gap*100 >= bound {
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
		var buf bytes.Buffer
		writeResultsTable(&buf, "Hit ratios on the synthetic traces", "TestSyntheticBar", synthShortfall, all)
		if err := os.WriteFile(filepath.Join("testdata", "synthetic.md"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
