package sim

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/locuscache/locus/pkg/cache/policy"
)

// The seed sweep is an experiment, not a check: it replays the default
// policy with several seeds over the shared traces (or the synthetic ones)
// against the baselines and prints, per seed, the points that miss the bar,
// the mean and worst gap, and per point the worst gap over the seeds (the
// figures the acceptance test's exception lists are made from), and the
// misses a check with a single otter run would expect (otter seeds its
// hashing at random, and its runs spread by up to 4 points on the shared
// traces). The baselines (LRU, ARC, and -sweep-otter-runs otter runs,
// whose median is the bar's W-TinyLFU) do not depend on the policy and are
// cached in a JSON file between runs:
//
//	go test ./pkg/cache/sim -run TestSeedSweep -count=1 -timeout 30m -v \
//	    -args -sweep-seeds 1,2,3,4,5 [-sweep-synth|-sweep-large|-sweep-small] \
//	    [-sweep-otter-runs 40] [-sweep-baselines /tmp/base.json]
var (
	sweepSeeds     = flag.String("sweep-seeds", "", "comma-separated policy seeds for TestSeedSweep (empty: skip)")
	sweepSynth     = flag.Bool("sweep-synth", false, "TestSeedSweep replays the synthetic traces instead of the shared ones")
	sweepLarge     = flag.Bool("sweep-large", false, "TestSeedSweep replays the large synthetic traces instead (misses counted at the shared traces' bar)")
	sweepSmall     = flag.Bool("sweep-small", false, "TestSeedSweep replays the small held-out synthetic traces instead (misses counted at the shared traces' bar)")
	sweepBaselines = flag.String("sweep-baselines", "", "file caching TestSeedSweep's baseline hit ratios")
	sweepOtter     = flag.Int("sweep-otter-runs", 5, "otter runs per point in TestSeedSweep's baselines: their median (the upper one for an even count) is the bar's W-TinyLFU; all of them give the misses a check with one otter run expects")
	sweepDump      = flag.String("sweep-dump", "", "file TestSeedSweep writes every point's gap to, one line per point (trace@percent and a gap per seed)")
	sweepFractions = flag.String("sweep-fractions", "", "comma-separated cache sizes (shares of the distinct keys) for TestSeedSweep instead of the acceptance's 1-50% (sizes the policy was not tuned at; give its own -sweep-baselines file)")
)

// sweepFracs are the cache sizes TestSeedSweep replays: -sweep-fractions,
// or the acceptance's.
func sweepFracs(t *testing.T) []float64 {
	if *sweepFractions == "" {
		return acceptanceFractions
	}
	var fs []float64
	for _, f := range strings.Split(*sweepFractions, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 || v > 1 {
			t.Fatalf("-sweep-fractions: %q is not a share in (0, 1]", f)
		}
		fs = append(fs, v)
	}
	return fs
}

// sweepPoint is one trace and size.
type sweepPoint struct {
	Trace    string
	Fraction float64
	Capacity int
	Base     map[string]float64 // lru, arc, wtinylfu (otter's median run)
	Otter    []float64          // every otter run's hit ratio, ascending
}

func sweepTraces(t *testing.T) []*Trace {
	if *sweepSmall {
		return SmallSyntheticTraces()
	}
	if *sweepLarge {
		return LargeSyntheticTraces()
	}
	if *sweepSynth {
		return SyntheticTraces()
	}
	files, err := filepath.Glob(filepath.Join("testdata", "traces", "*.keys.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no traces (err %v)", err)
	}
	sort.Strings(files)
	var out []*Trace
	for _, f := range files {
		tr, err := ReadFile(f, FormatKeys)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tr)
	}
	return out
}

// parallel runs f(i) for i in [0, n) on two goroutines.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

func sweepBase(t *testing.T, traces []*Trace, fracs []float64) [][]sweepPoint {
	var cached [][]sweepPoint
	if *sweepBaselines != "" {
		if b, err := os.ReadFile(*sweepBaselines); err == nil && json.Unmarshal(b, &cached) == nil && len(cached) == len(traces) &&
			len(cached[0]) == len(fracs) && len(cached[0][0].Otter) == *sweepOtter {
			return cached
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	out := make([][]sweepPoint, len(traces))
	parallel(len(traces), func(i int) {
		tr := traces[i]
		rs, err := Run(tr, Options{Policies: []string{"lru", NameARC}, Fractions: fracs})
		if err != nil {
			panic(err)
		}
		rows := Rows(rs)
		otter := make([][]float64, len(rows))
		for range *sweepOtter {
			ors, err := Run(tr, Options{Policies: []string{NameWTinyLFU}, Fractions: fracs})
			if err != nil {
				panic(err)
			}
			for j, r := range Rows(ors) {
				otter[j] = append(otter[j], r.Ratio[NameWTinyLFU])
			}
		}
		for j, r := range rows {
			sort.Float64s(otter[j])
			r.Ratio[NameWTinyLFU] = otter[j][*sweepOtter/2]
			out[i] = append(out[i], sweepPoint{Trace: strings.TrimSuffix(tr.Name, ".keys.gz"), Fraction: r.Fraction, Capacity: r.Capacity, Base: r.Ratio, Otter: otter[j]})
		}
	})
	if *sweepBaselines != "" {
		b, _ := json.Marshal(out)
		if err := os.WriteFile(*sweepBaselines, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestSeedSweep(t *testing.T) {
	if *sweepSeeds == "" {
		t.Skip("an experiment: run with -args -sweep-seeds 1,2,3")
	}
	var seeds []uint64
	for _, s := range strings.Split(*sweepSeeds, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, v)
	}
	bar := maxShortfall
	if *sweepSynth && !*sweepLarge {
		bar = synthShortfall
	}
	if *sweepOtter < 1 {
		t.Fatalf("-sweep-otter-runs %d: want at least 1", *sweepOtter)
	}
	traces := sweepTraces(t)
	fracs := sweepFracs(t) // parsed once, outside the parallel replays
	base := sweepBase(t, traces, fracs)
	// gaps[trace][fraction][seed], in points; worstBest the worst gap over
	// the seeds against otter's best run instead of its median.
	gaps := make([][][]float64, len(traces))
	worstBest := make([][]float64, len(traces))
	parallel(len(traces), func(i int) {
		gaps[i] = make([][]float64, len(fracs))
		worstBest[i] = make([]float64, len(fracs))
		for j := range worstBest[i] {
			worstBest[i][j] = math.Inf(1)
		}
		for _, seed := range seeds {
			rs, err := Run(traces[i], Options{Policies: []string{policy.DefaultName}, Fractions: fracs, Seed: seed})
			if err != nil {
				panic(err)
			}
			for j, r := range rs {
				b := base[i][j].Base
				best := max(b["lru"], b[NameARC], b[NameWTinyLFU])
				gaps[i][j] = append(gaps[i][j], (r.HitRatio-best)*100)
				hi := max(best, base[i][j].Otter[len(base[i][j].Otter)-1]) // otter's best run
				worstBest[i][j] = min(worstBest[i][j], (r.HitRatio-hi)*100)
			}
		}
	})
	var b strings.Builder
	for si, seed := range seeds {
		misses, sum, worst, expected := 0, 0.0, math.Inf(1), 0.0
		var missed []string
		for i := range traces {
			for j := range fracs {
				g := gaps[i][j][si]
				sum += g
				worst = min(worst, g)
				expected += oneRunMisses(base[i][j], g, bar)
				if g < -bar {
					misses++
					missed = append(missed, fmt.Sprintf("%s@%g%%(%+.2f)", base[i][j].Trace, base[i][j].Fraction*100, g))
				}
			}
		}
		n := len(traces) * len(fracs)
		fmt.Fprintf(&b, "seed %d: %d of %d miss, mean %+.3f, worst %+.2f, expected against one otter run %.2f: %s\n",
			seed, misses, n, sum/float64(n), worst, expected, strings.Join(missed, " "))
	}
	b.WriteString("points missing the bar or within 0.25 of it for some seed (worst over seeds; all seeds):\n")
	for i := range traces {
		for j := range fracs {
			g := gaps[i][j]
			if w := sliceMin(g); w < -bar+0.25 || worstBest[i][j] < -bar {
				fmt.Fprintf(&b, "  %s@%g%% (cap %d): worst %+.2f (against otter's best run %+.2f)  [", base[i][j].Trace, base[i][j].Fraction*100, base[i][j].Capacity, w, worstBest[i][j])
				for _, v := range g {
					fmt.Fprintf(&b, " %+.2f", v)
				}
				b.WriteString(" ]\n")
			}
		}
	}
	t.Log("\n" + b.String())
	if *sweepDump != "" {
		var d strings.Builder
		for i := range traces {
			for j := range fracs {
				fmt.Fprintf(&d, "%s@%g", base[i][j].Trace, base[i][j].Fraction*100)
				for _, v := range gaps[i][j] {
					fmt.Fprintf(&d, "\t%+.2f", v)
				}
				d.WriteString("\n")
			}
		}
		if err := os.WriteFile(*sweepDump, []byte(d.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// oneRunMisses is the chance that the default policy, gap points from the
// best baseline of p (otter's median run), misses the bar against a single
// otter run: the share of p's otter runs against which it does.
func oneRunMisses(p sweepPoint, gap, bar float64) float64 {
	b := p.Base
	locus := max(b["lru"], b[NameARC], b[NameWTinyLFU]) + gap/100
	n := 0
	for _, o := range p.Otter {
		if (max(b["lru"], b[NameARC], o)-locus)*100 > bar {
			n++
		}
	}
	return float64(n) / float64(len(p.Otter))
}

func sliceMin(v []float64) float64 {
	m := math.Inf(1)
	for _, x := range v {
		m = min(m, x)
	}
	return m
}
