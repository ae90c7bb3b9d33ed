package mrc

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"

	"github.com/locuscache/locus/pkg/cache/policy"
	"github.com/locuscache/locus/pkg/cache/sim"
)

// lruHitRatio simulates an LRU of the given size: the dumb reference.
func lruHitRatio(t testing.TB, keys []uint64, size int) float64 {
	p, err := policy.NewLRU(size)
	if err != nil {
		t.Fatal(err)
	}
	return replay(p, keys)
}

// replay returns p's hit ratio over keys.
func replay(p policy.Policy, keys []uint64) float64 {
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

func TestExactMatchesLRU(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for trial := 0; trial < 20; trial++ {
		n, u := 2000, 1+rng.IntN(400)
		keys := make([]uint64, n)
		for i := range keys {
			keys[i] = uint64(float64(u) * math.Pow(rng.Float64(), 2)) // skewed
		}
		sizes := []int{1, 2, 5, 17, 64, 200, 1000}
		got := Exact(keys, sizes)
		for i, s := range sizes {
			if want := lruHitRatio(t, keys, s); math.Abs(got[i]-want) > 1e-12 {
				t.Fatalf("trial %d size %d: Exact = %v, LRU simulation = %v", trial, s, got[i], want)
			}
		}
	}
}

// TestFullSampleIsExact: while every key fits the budget, SHARDS samples all
// keys and its curve is the exact one (up to the histogram's bin width).
func TestFullSampleIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	keys := make([]uint64, 50000)
	for i := range keys {
		keys[i] = uint64(rng.ExpFloat64() * 300)
	}
	e, err := New(Config{SampleBudget: 4096})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		e.Access(k)
	}
	if e.Rate() != 1 {
		t.Fatalf("rate %v, want 1 (all keys fit the budget)", e.Rate())
	}
	sizes := []int{10, 50, 100, 300, 1000}
	exact := Exact(keys, sizes)
	for i, s := range sizes {
		if got := e.HitRatio(s); math.Abs(got-exact[i]) > 0.01 {
			t.Errorf("size %d: HitRatio = %.4f, exact %.4f", s, got, exact[i])
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{SampleBudget: -1}, {SampleBudget: 1 << 27}, {InitialRate: 1.5}, {InitialRate: -0.1}, {InitialRate: math.NaN()}} {
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v): got %v, want ErrConfig", c, err)
		}
	}
	e, err := New(Config{})
	if err != nil || e.budget != DefaultSampleBudget || e.Rate() != 1 {
		t.Errorf("New(Config{}): budget %d rate %v err %v", e.budget, e.Rate(), err)
	}
	if got := e.HitRatio(10); got != 0 {
		t.Errorf("HitRatio before any access = %v, want 0", got)
	}
	e.Access(1)
	e.Access(1)
	if got := e.HitRatio(0); got != 0 {
		t.Errorf("HitRatio(0) = %v, want 0", got)
	}
	if got := e.HitRatio(1); got != 0.5 {
		t.Errorf("HitRatio(1) after 1,1 = %v, want 0.5", got)
	}
}

// TestBudgetBounded: the sample set never exceeds the budget and the rate
// falls as distinct keys grow.
func TestBudgetBounded(t *testing.T) {
	e, _ := New(Config{SampleBudget: 100, Seed: 9})
	for i := uint64(0); i < 100000; i++ {
		e.Access(i % 20000)
		if len(e.last) > 100 || len(e.heap) > 100 {
			t.Fatalf("after %d accesses: %d tracked keys, budget 100", i, len(e.last))
		}
	}
	if r := e.Rate(); r > 0.01 || r < 0.002 {
		t.Errorf("rate %v, want about 100/20000", r)
	}
}

// TestSkipThenAccess: calling Skip first, and Access only for the keys it
// leaves, gives the estimates Access alone gives, and Skip passes exactly
// the keys outside the sample.
func TestSkipThenAccess(t *testing.T) {
	a, _ := New(Config{SampleBudget: 100, Seed: 3})
	b, _ := New(Config{SampleBudget: 100, Seed: 3})
	r := rand.New(rand.NewPCG(1, 2))
	skipped := 0
	for i := 0; i < 200000; i++ {
		k := uint64(r.IntN(5000))
		if r.IntN(2) == 0 {
			k = uint64(r.IntN(200)) // a hot set, so that sampled keys recur
		}
		a.Access(k)
		sampled := a.hash(k) < b.threshold.Load()
		if b.Skip(k) {
			skipped++
			if sampled {
				t.Fatalf("access %d: Skip passed key %d, which is in the sample", i, k)
			}
			continue
		}
		if !sampled {
			t.Fatalf("access %d: Skip left key %d, which is outside the sample", i, k)
		}
		b.Access(k)
	}
	if skipped == 0 {
		t.Fatal("Skip passed no key; the test needs a sampling rate under 1")
	}
	if a.Accesses() != b.Accesses() || a.Rate() != b.Rate() {
		t.Fatalf("accesses %d/%d, rate %v/%v; want the same", a.Accesses(), b.Accesses(), a.Rate(), b.Rate())
	}
	for _, size := range []int{10, 100, 1000, 5000} {
		if x, y := a.HitRatio(size), b.HitRatio(size); x != y {
			t.Errorf("HitRatio(%d): Access alone %v, Skip first %v", size, x, y)
		}
	}
}

// TestSkipConcurrent runs Skip on several goroutines while one goroutine
// calls Access and HitRatio under a lock, as the page cache does (run it
// with -race); every access is counted once.
func TestSkipConcurrent(t *testing.T) {
	e, _ := New(Config{SampleBudget: 64, Seed: 5})
	var mu sync.Mutex
	const workers, each = 4, 20000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				k := uint64(w*each + i)
				if !e.Skip(k) {
					mu.Lock()
					e.Access(k)
					_ = e.HitRatio(100)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if got := e.Accesses(); got != workers*each {
		t.Fatalf("Accesses() = %d, want %d", got, workers*each)
	}
}

// TestAccuracyOnTraces compares SHARDS with exact LRU hit ratios on the 14
// shared traces, at 1, 5, 10, 25 and 50% of each trace's distinct keys and
// at 0.25x, 0.5x, 2x and 4x of a cache of 10%, and reports the mean absolute
// error. With the default budget (8192 keys) most of these traces fit the
// sample whole; the 1024-key budget exercises the sampled path.
func TestAccuracyOnTraces(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "sim", "testdata", "traces", "*.keys.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no traces (err %v)", err)
	}
	sort.Strings(files)
	for _, budget := range []int{1024, DefaultSampleBudget} {
		var sum float64
		var n int
		worstTrace := 0.0
		for _, f := range files {
			tr, err := sim.ReadFile(f, sim.FormatKeys)
			if err != nil {
				t.Fatal(err)
			}
			base := max(1, tr.Distinct/10)
			var sizes []int
			for _, fr := range []float64{0.01, 0.05, 0.10, 0.25, 0.50} {
				sizes = append(sizes, max(1, int(fr*float64(tr.Distinct))))
			}
			for _, m := range []float64{0.25, 0.5, 2, 4} {
				sizes = append(sizes, max(1, int(m*float64(base))))
			}
			exact := Exact(tr.Keys, sizes)
			e, err := New(Config{SampleBudget: budget, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tr.Keys {
				e.Access(k)
			}
			est := e.Curve(sizes)
			var mae float64
			for i := range sizes {
				mae += math.Abs(est[i] - exact[i])
			}
			mae /= float64(len(sizes))
			sum += mae
			n++
			worstTrace = max(worstTrace, mae)
			t.Logf("budget %d %-22s rate %.3f MAE %.4f", budget, tr.Name, e.Rate(), mae)
		}
		mean := sum / float64(n)
		t.Logf("budget %d: mean absolute error %.4f (hit ratio), worst trace %.4f", budget, mean, worstTrace)
		if mean > 0.02 || worstTrace > 0.05 {
			t.Errorf("budget %d: mean absolute error %.4f (want <= 0.02), worst trace %.4f (want <= 0.05)", budget, mean, worstTrace)
		}
	}
}

// BenchmarkAccess compares Access with its floor, the spatial hash alone,
// for a cache whose keys are mostly not sampled (the live-cache case: a
// budget of 8192 keys over 2^22 distinct pages), and with an LRU policy's
// Touch for scale.
func BenchmarkAccess(b *testing.B) {
	const distinct = 1 << 22
	rng := rand.New(rand.NewPCG(1, 1))
	keys := make([]uint64, 1<<20)
	for i := range keys {
		keys[i] = rng.Uint64N(distinct) * 0x9e3779b97f4a7c15
	}
	b.Run("shards", func(b *testing.B) {
		e, _ := New(Config{})
		for _, k := range keys {
			e.Access(k)
		}
		for i := 0; i < 4*len(keys); i++ {
			e.Access(rng.Uint64N(distinct) * 0x9e3779b97f4a7c15)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			e.Access(keys[i&(len(keys)-1)])
		}
		b.ReportMetric(e.Rate(), "rate")
	})
	b.Run("baseline=hash-only", func(b *testing.B) {
		e, _ := New(Config{})
		var sink uint64
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			sink += e.hash(keys[i&(len(keys)-1)])
		}
		runtime.KeepAlive(sink)
	})
	b.Run("baseline=lru-touch", func(b *testing.B) {
		p, _ := policy.NewLRU(1 << 16)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p.Touch(keys[i&(len(keys)-1)])
		}
	})
}

// BenchmarkAccessParallel feeds the estimator from all cores, as the page
// cache's reads do: every access under one lock ("lock"), or Skip first and
// the lock only for sampled keys ("skip-first", what the cache does).
func BenchmarkAccessParallel(b *testing.B) {
	const distinct = 1 << 22
	for _, skipFirst := range []bool{false, true} {
		name := "lock"
		if skipFirst {
			name = "skip-first"
		}
		b.Run(name, func(b *testing.B) {
			e, _ := New(Config{})
			rng := rand.New(rand.NewPCG(1, 1))
			for i := 0; i < 1<<22; i++ {
				e.Access(rng.Uint64N(distinct) * 0x9e3779b97f4a7c15)
			}
			var mu sync.Mutex
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
				for pb.Next() {
					k := rng.Uint64N(distinct) * 0x9e3779b97f4a7c15
					if skipFirst && e.Skip(k) {
						continue
					}
					mu.Lock()
					e.Access(k)
					mu.Unlock()
				}
			})
			b.ReportMetric(e.Rate(), "rate")
		})
	}
}

// TestMemoryPerSampledKey logs the estimator's memory per tracked key.
func TestMemoryPerSampledKey(t *testing.T) {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	e, _ := New(Config{SampleBudget: 1 << 16})
	for i := uint64(0); i < 1<<18; i++ {
		e.Access(i)
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	per := float64(m1.HeapAlloc-m0.HeapAlloc) / float64(1<<16)
	runtime.KeepAlive(e)
	t.Logf("%.1f bytes per sampled key (budget 65536)", per)
	if per > 100 {
		t.Errorf("%.1f bytes per sampled key, want <= 100", per)
	}
}

func ExampleEstimator() {
	e, err := New(Config{SampleBudget: 8192, Seed: 1})
	if err != nil {
		panic(err)
	}
	// A loop over 1000 pages: an LRU that holds the loop hits every access
	// after the first round, one of 500 pages never does.
	for round := 0; round < 10; round++ {
		for page := uint64(0); page < 1000; page++ {
			e.Access(page)
		}
	}
	for _, size := range []int{500, 1200, 2000} {
		fmt.Printf("LRU of %d pages: hit ratio %.2f\n", size, e.HitRatio(size))
	}
	// Output:
	// LRU of 500 pages: hit ratio 0.00
	// LRU of 1200 pages: hit ratio 0.90
	// LRU of 2000 pages: hit ratio 0.90
}

func TestSizing(t *testing.T) {
	e, _ := New(Config{})
	for round := 0; round < 10; round++ {
		for page := uint64(0); page < 1000; page++ {
			e.Access(page)
		}
	}
	pts := e.Sizing(600)
	want := []int{150, 300, 600, 1200, 2400}
	for i, p := range pts {
		if p.Size != want[i] || p.Factor != SizingFactors[i] {
			t.Errorf("point %d: %+v, want size %d", i, p, want[i])
		}
	}
	// A 1000-page loop: LRU misses everything below 1000 pages.
	if pts[2].HitRatio != 0 || pts[3].HitRatio < 0.89 {
		t.Errorf("loop of 1000 at 600 and 1200 pages: %v, %v; want 0 and 0.9", pts[2].HitRatio, pts[3].HitRatio)
	}
}
