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
	return replay(p, keys)
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
	m, err := NewMini(MiniConfig{Capacity: capacity, New: newLocus, Factors: []float64{0.25, 0.5, 1, 2, 4}, MaxRate: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		m.Access(k)
	}
	if m.Rate() != 1 || m.Replayed() != uint64(len(keys)) {
		t.Fatalf("rate %v, replayed %d of %d: want every key", m.Rate(), m.Replayed(), len(keys))
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
// policy's). With the default MaxRate every trace above 1,024 distinct
// keys samples (its largest miniature holds 256 keys); with MaxRate 1 only
// the two cache2k traces do.
func TestMiniAccuracyOnTraces(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "sim", "testdata", "traces", "*.keys.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no traces (err %v)", err)
	}
	sort.Strings(files)
	type row struct {
		name                        string
		maxRate                     float64
		raw, cal, worstCal, lruErr  float64
		n                           int
		wantRaw, wantCal, wantWorst float64 // bounds
	}
	rows := []*row{
		{name: "default", maxRate: 0, wantRaw: 0.035, wantCal: 0.015, wantWorst: 0.04},
		{name: "MaxRate 1", maxRate: 1, wantRaw: 0.005, wantCal: 0.005, wantWorst: 0.01},
	}
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
			m, err := NewMini(MiniConfig{Capacity: base, New: newLocus, MaxRate: r.maxRate, Seed: 1})
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
			t.Logf("%-9s %-22s rate %.3f: mean abs. error %.4f, calibrated %.4f (the LRU curve: %.4f)", r.name, tr.Name, m.Rate(), raw, cal, lruErr)
		}
	}
	for _, r := range rows {
		raw, cal := r.raw/float64(r.n), r.cal/float64(r.n)
		t.Logf("%s: mean absolute error %.4f, calibrated %.4f (worst trace %.4f); the SHARDS LRU curve against the same truth: %.4f",
			r.name, raw, cal, r.worstCal, r.lruErr/float64(r.n))
		if raw > r.wantRaw || cal > r.wantCal || r.worstCal > r.wantWorst {
			t.Errorf("%s: mean absolute error %.4f (want <= %v), calibrated %.4f (want <= %v), worst trace %.4f (want <= %v)",
				r.name, raw, r.wantRaw, cal, r.wantCal, r.worstCal, r.wantWorst)
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
	for _, capacity := range []int{1 << 20, 1 << 14, 1 << 10} {
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

// TestMiniCalibrated: the anchored curve is every miniature's ratio plus
// (measured - the 1x miniature's), clamped to [0, 1]; a measured ratio
// that is not one, or no sampled access yet, leaves the raw points.
func TestMiniCalibrated(t *testing.T) {
	m, err := NewMini(MiniConfig{Capacity: 100, New: newLocus, MaxRate: 1})
	if err != nil {
		t.Fatal(err)
	}
	if pts := m.Calibrated(0.9); len(pts) != 5 || pts[0].HitRatio != 0 || pts[4].HitRatio != 0 {
		t.Fatalf("before any access: %+v, want the raw points (0)", pts)
	}
	// A loop over 150 keys: LRU-like sizes below it hit nothing, the 2x
	// and 4x miniatures (200, 400 keys) hit every pass after the first.
	for pass := 0; pass < 4; pass++ {
		for k := uint64(0); k < 150; k++ {
			m.Access(k)
		}
	}
	raw := m.Sizing()
	own := raw[m.own].HitRatio
	for _, tc := range []struct {
		measured float64
		shifted  bool
	}{{own + 0.1, true}, {own - 0.05, true}, {1, true}, {0, true}, {-1, false}, {1.5, false}, {math.NaN(), false}} {
		got := m.Calibrated(tc.measured)
		for i, p := range got {
			want := raw[i].HitRatio
			if tc.shifted {
				want = min(max(raw[i].HitRatio+(tc.measured-own), 0), 1)
			}
			if math.Abs(p.HitRatio-want) > 1e-12 || p.Size != raw[i].Size || p.Factor != raw[i].Factor {
				t.Errorf("measured %v, x%v: got %+v, want ratio %v", tc.measured, raw[i].Factor, p, want)
			}
		}
	}
	if got := m.Calibrated(own + 0.5); got[4].HitRatio != 1 {
		t.Errorf("a shift past 1: got %v at x4, want 1 (clamped)", got[4].HitRatio)
	}
}

func ExampleMini() {
	// Miniatures of the default policy, for a cache of 1000 pages.
	m, err := NewMini(MiniConfig{Capacity: 1000, New: newLocus, Seed: 1})
	if err != nil {
		panic(err)
	}
	// A loop over 1500 pages: an LRU smaller than the loop hits nothing
	// (ExampleEstimator), the default policy keeps part of it.
	for round := 0; round < 10; round++ {
		for page := uint64(0); page < 1500; page++ {
			m.Access(page)
		}
	}
	for _, p := range m.Sizing() {
		fmt.Printf("x%v (%d pages): hit ratio %.2f\n", p.Factor, p.Size, p.HitRatio)
	}
	// Output:
	// x0.25 (250 pages): hit ratio 0.16
	// x0.5 (500 pages): hit ratio 0.32
	// x1 (1000 pages): hit ratio 0.65
	// x2 (2000 pages): hit ratio 0.90
	// x4 (4000 pages): hit ratio 0.90
}

// Warm fills the miniatures without counting: nothing is replayed, and a
// later access to a warmed key hits at every size that holds it.
func TestMiniWarm(t *testing.T) {
	m, err := NewMini(MiniConfig{Capacity: 100, New: func(n int) (Sim, error) { return policy.NewLRU(n) }, MaxRate: 1})
	if err != nil {
		t.Fatal(err)
	}
	for k := uint64(0); k < 100; k++ {
		m.Warm(k)
	}
	if m.Replayed() != 0 || m.Accesses() != 0 {
		t.Fatalf("after Warm: %d replayed, %d accesses; want none counted", m.Replayed(), m.Accesses())
	}
	m.Access(99) // the newest warmed key: every LRU of 25 keys or more holds it
	m.Access(0)  // the oldest: only the 100-key and larger ones do
	for _, p := range m.Sizing() {
		want := 0.5
		if p.Size >= 100 {
			want = 1
		}
		if p.HitRatio != want {
			t.Errorf("x%v (%d keys): hit ratio %v, want %v", p.Factor, p.Size, p.HitRatio, want)
		}
	}
}
