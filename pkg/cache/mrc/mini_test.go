package mrc

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"testing"

	"github.com/locuscache/locus/pkg/cache/policy"
	"github.com/locuscache/locus/pkg/cache/sim"
)

// newLocus builds the default policy with a fixed seed, as a Mini's New.
func newLocus(capacity int) (Sim, error) { return policy.New(capacity, 1) }

// policyHitRatio replays keys through the default policy at size: the
// reference a miniature stands for.
func policyHitRatio(t testing.TB, keys []uint64, size int) float64 {
	p, err := policy.New(size, 1)
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	var victims []uint64
	for _, k := range keys {
		if p.Touch(k) {
			hits++
		} else {
			victims, _ = p.Insert(k, victims[:0])
		}
	}
	return float64(hits) / float64(len(keys))
}

func TestMiniConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  MiniConfig
	}{
		{"no capacity", MiniConfig{New: newLocus}},
		{"negative capacity", MiniConfig{Capacity: -1, New: newLocus}},
		{"no New", MiniConfig{Capacity: 10}},
		{"zero factor", MiniConfig{Capacity: 10, New: newLocus, Factors: []float64{0, 1}}},
		{"huge factor", MiniConfig{Capacity: 10, New: newLocus, Factors: []float64{65}}},
		{"NaN factor", MiniConfig{Capacity: 10, New: newLocus, Factors: []float64{math.NaN()}}},
		{"negative budget", MiniConfig{Capacity: 10, New: newLocus, SampleBudget: -1}},
		{"huge budget", MiniConfig{Capacity: 10, New: newLocus, SampleBudget: 1<<26 + 1}},
	} {
		if _, err := NewMini(tc.cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: got %v, want ErrConfig", tc.name, err)
		}
	}
	failing := func(int) (Sim, error) { return nil, errors.New("no policy") }
	if _, err := NewMini(MiniConfig{Capacity: 10, New: failing}); err == nil {
		t.Error("New's error: got nil, want it returned")
	}
	// The largest capacity the page cache allows, at the largest factor:
	// the sizes do not overflow and the miniatures stay within budget.
	m, err := NewMini(MiniConfig{Capacity: 1 << 40, New: newLocus, Factors: []float64{0.25, 64}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range m.sims {
		if s.mini < 1 || s.mini > DefaultMiniBudget {
			t.Errorf("factor %v: miniature of %d keys, want 1 to %d", s.factor, s.mini, DefaultMiniBudget)
		}
	}
}

// TestMiniFullRateIsExact: when the budget covers the largest size, every
// key is replayed and each miniature is the policy at full size, so the
// estimate equals a direct replay (the dumb reference) exactly.
func TestMiniFullRateIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	keys := make([]uint64, 50_000)
	for i := range keys {
		if i%5 == 0 {
			keys[i] = uint64(1_000_000 + i) // a one-time scan key
		} else {
			keys[i] = uint64(math.Pow(rng.Float64(), 3) * 4000) // skewed reuse
		}
	}
	const capacity = 300
	m, err := NewMini(MiniConfig{Capacity: capacity, New: newLocus, Factors: []float64{0.25, 0.5, 1, 2, 4}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		m.Access(k)
	}
	if m.Rate() != 1 || m.Sampled() != uint64(len(keys)) {
		t.Fatalf("rate %v, sampled %d of %d: want every key", m.Rate(), m.Sampled(), len(keys))
	}
	for _, p := range m.Sizing() {
		want := policyHitRatio(t, keys, p.Size)
		if p.HitRatio != want {
			t.Errorf("size %d (x%v): got %.6f, want %.6f", p.Size, p.Factor, p.HitRatio, want)
		}
	}
	// Between simulated sizes the estimate interpolates; outside, it holds.
	lo, hi := m.HitRatio(150), m.HitRatio(300)
	if mid := m.HitRatio(212); mid < min(lo, hi) || mid > max(lo, hi) {
		t.Errorf("HitRatio(212) = %v, want between %v and %v", mid, lo, hi)
	}
	if got, want := m.HitRatio(1), m.HitRatio(75); got != want {
		t.Errorf("below the smallest size: got %v, want %v", got, want)
	}
	if got, want := m.HitRatio(1<<30), m.HitRatio(1200); got != want {
		t.Errorf("above the largest size: got %v, want %v", got, want)
	}
}

// TestMiniAccuracyOnTraces compares the miniatures' estimate of the
// default policy's hit ratio at 0.25x to 4x of 10% of each shared trace's
// distinct keys with the policy replayed at those sizes, raw and anchored
// at the policy's true ratio at 10% (Calibrated, what the page cache
// reports), and logs the SHARDS LRU curve's distance from the same truth:
// the reason Mini exists (on the scan traces LRU's curve is far below the
// policy's). A budget of 512 keys makes every trace above 2,048 distinct
// keys sample.
func TestMiniAccuracyOnTraces(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "sim", "testdata", "traces", "*.keys.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no traces (err %v)", err)
	}
	sort.Strings(files)
	type row struct {
		budget                     int
		raw, cal, worstCal, lruErr float64
		n                          int
	}
	rows := []*row{{budget: 512}, {budget: DefaultMiniBudget}}
	for _, f := range files {
		tr, err := sim.ReadFile(f, sim.FormatKeys)
		if err != nil {
			t.Fatal(err)
		}
		base := max(1, tr.Distinct/10)
		lru, err := New(Config{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range tr.Keys {
			lru.Access(k)
		}
		truth := map[int]float64{}
		truthAt := func(size int) float64 {
			if _, ok := truth[size]; !ok {
				truth[size] = policyHitRatio(t, tr.Keys, size)
			}
			return truth[size]
		}
		for _, r := range rows {
			m, err := NewMini(MiniConfig{Capacity: base, New: newLocus, SampleBudget: r.budget, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tr.Keys {
				m.Access(k)
			}
			var raw, cal, lruErr float64
			n := 0
			calibrated := m.Calibrated(truthAt(base))
			for i, p := range m.Sizing() {
				if p.Factor == 1 {
					continue
				}
				want := truthAt(p.Size)
				raw += math.Abs(p.HitRatio - want)
				cal += math.Abs(calibrated[i].HitRatio - want)
				lruErr += math.Abs(lru.HitRatio(p.Size) - want)
				n++
			}
			raw, cal, lruErr = raw/float64(n), cal/float64(n), lruErr/float64(n)
			r.raw += raw
			r.cal += cal
			r.lruErr += lruErr
			r.worstCal = max(r.worstCal, cal)
			r.n++
			t.Logf("budget %4d %-22s rate %.3f: mean abs. error %.4f, calibrated %.4f (the LRU curve: %.4f)", r.budget, tr.Name, m.Rate(), raw, cal, lruErr)
		}
	}
	for _, r := range rows {
		raw, cal := r.raw/float64(r.n), r.cal/float64(r.n)
		t.Logf("budget %d: mean absolute error %.4f, calibrated %.4f (worst trace %.4f); the SHARDS LRU curve against the same truth: %.4f",
			r.budget, raw, cal, r.worstCal, r.lruErr/float64(r.n))
		if raw > 0.02 || cal > 0.01 || r.worstCal > 0.03 {
			t.Errorf("budget %d: mean absolute error %.4f (want <= 0.02), calibrated %.4f (want <= 0.01), worst trace %.4f (want <= 0.03)",
				r.budget, raw, cal, r.worstCal)
		}
	}
}

// BenchmarkMiniAccess: the cost of Access for a large cache (a rate of
// 0.1%, most keys not sampled) and for a small one (every key replayed
// through four miniatures), against SHARDS' Access on the same keys.
func BenchmarkMiniAccess(b *testing.B) {
	const distinct = 1 << 22
	rng := rand.New(rand.NewPCG(1, 1))
	keys := make([]uint64, 1<<20)
	for i := range keys {
		keys[i] = uint64(math.Pow(rng.Float64(), 2)*distinct) * 0x9e3779b97f4a7c15
	}
	for _, capacity := range []int{1 << 20, 1 << 10} {
		b.Run(fmt.Sprintf("mini/capacity=%d", capacity), func(b *testing.B) {
			m, err := NewMini(MiniConfig{Capacity: capacity, New: newLocus})
			if err != nil {
				b.Fatal(err)
			}
			for _, k := range keys {
				m.Access(k)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.Access(keys[i&(len(keys)-1)])
			}
			b.ReportMetric(m.Rate(), "rate")
		})
	}
	b.Run("baseline=shards", func(b *testing.B) {
		e, _ := New(Config{})
		for _, k := range keys {
			e.Access(k)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			e.Access(keys[i&(len(keys)-1)])
		}
	})
}

var large = flag.Bool("large", false, "TestMiniAccuracyLarge replays the large synthetic traces (minutes)")

// TestMiniAccuracyLarge is TestMiniAccuracyOnTraces on package sim's large
// synthetic traces, where the miniatures sample 0.5 to 25% of the keys,
// at 2% and 10% of each trace's distinct keys (only with -args -large:
// about two minutes on 2 cores).
func TestMiniAccuracyLarge(t *testing.T) {
	if !*large {
		t.Skip("the large synthetic traces take minutes: run with -args -large")
	}
	var raw, cal, lruRaw, lruCal, worst float64
	n := 0
	for _, tr := range sim.LargeSyntheticTraces() {
		for _, frac := range []float64{0.02, 0.10} {
			base := int(frac * float64(tr.Distinct))
			lru, _ := New(Config{Seed: 1})
			m, err := NewMini(MiniConfig{Capacity: base, New: newLocus, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tr.Keys {
				lru.Access(k)
				m.Access(k)
			}
			own := policyHitRatio(t, tr.Keys, base)
			calibrated := m.Calibrated(own)
			var r, c, lr, lc float64
			pts := 0
			for i, p := range m.Sizing() {
				if p.Factor == 1 {
					continue
				}
				want := policyHitRatio(t, tr.Keys, p.Size)
				r += math.Abs(p.HitRatio - want)
				c += math.Abs(calibrated[i].HitRatio - want)
				lr += math.Abs(lru.HitRatio(p.Size) - want)
				lc += math.Abs(lru.HitRatio(p.Size) - lru.HitRatio(base) + own - want)
				pts++
			}
			r, c, lr, lc = r/float64(pts), c/float64(pts), lr/float64(pts), lc/float64(pts)
			t.Logf("%-22s %2.0f%% rate %.4f: mean abs. error %.4f, calibrated %.4f; the LRU curve %.4f, anchored %.4f",
				tr.Name, 100*frac, m.Rate(), r, c, lr, lc)
			raw, cal, lruRaw, lruCal = raw+r, cal+c, lruRaw+lr, lruCal+lc
			worst = max(worst, c)
			n++
		}
	}
	fn := float64(n)
	t.Logf("mean absolute error %.4f, calibrated %.4f (worst %.4f); the LRU curve %.4f, anchored %.4f",
		raw/fn, cal/fn, worst, lruRaw/fn, lruCal/fn)
	if cal/fn > 0.01 || worst > 0.03 {
		t.Errorf("calibrated mean absolute error %.4f (want <= 0.01), worst %.4f (want <= 0.03)", cal/fn, worst)
	}
}
