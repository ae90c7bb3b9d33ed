package sim

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// optBrute is the dumb reference for the offline optimum with bypass: an
// exhaustive search over every admit/evict choice (tiny traces only).
func optBrute(keys []uint64, capacity int) int64 {
	var best int64
	var rec func(i int, resident []uint64, hits int64)
	rec = func(i int, resident []uint64, hits int64) {
		if i == len(keys) {
			best = max(best, hits)
			return
		}
		k := keys[i]
		for _, r := range resident {
			if r == k {
				rec(i+1, resident, hits+1)
				return
			}
		}
		rec(i+1, resident, hits) // bypass
		if len(resident) < capacity {
			rec(i+1, append(append([]uint64(nil), resident...), k), hits)
			return
		}
		for j := range resident {
			next := append([]uint64(nil), resident...)
			next[j] = k
			rec(i+1, next, hits)
		}
	}
	rec(0, nil, 0)
	return best
}

func TestOracleMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 300; trial++ {
		n := 1 + rng.IntN(11)
		keys := make([]uint64, n)
		u := uint64(1 + rng.IntN(5))
		for i := range keys {
			keys[i] = rng.Uint64N(u)
		}
		o := NewOracle(keys)
		for c := 1; c <= 3; c++ {
			if got, want := o.Hits(c), optBrute(keys, c); got != want {
				t.Fatalf("keys %v capacity %d: Oracle.Hits = %d, want %d", keys, c, got, want)
			}
		}
	}
}

// TestOracleBoundsPolicies: no online policy beats the optimum.
func TestOracleBoundsPolicies(t *testing.T) {
	tr, err := ReadFile("testdata/traces/lirs-cpp.keys.gz", FormatKeys)
	if err != nil {
		t.Fatal(err)
	}
	o := NewOracle(tr.Keys)
	for _, c := range []int{1, 12, 122, 612} {
		opt := o.Hits(c)
		for _, name := range []string{"locus", "lru", NameARC, NameWTinyLFU} {
			cache, err := NewCache(name, c, 1)
			if err != nil {
				t.Fatal(err)
			}
			if h := Replay(tr.Keys, cache); h > opt {
				t.Errorf("capacity %d: %s hit %d times, more than the optimum %d", c, name, h, opt)
			}
		}
	}
}

// TestOracleHeapStaysSmall: Hits keeps its heap of resident keys near the
// capacity, whatever the hit ratio. Was: every hit pushed the key's next
// use and left its old entry in the heap (stale entries are dropped only
// when they reach the top, and one whose position has passed never does),
// so the heap grew by one entry per hit: on a 20M-access trace of 1,000
// keys `cache-sim --policy belady` peaked at 1.38 GB RSS against 0.74 GB
// for lru, where the trace's memory comment counts 4 bytes per access for
// Belady.
func TestOracleHeapStaysSmall(t *testing.T) {
	tests := []struct {
		name     string
		distinct int
		capacity int
	}{
		{"every key fits", 1000, 1000},
		{"a capacity above the keys", 1000, 5000},
		{"a tenth of the keys", 1000, 100},
		{"one key", 1, 1},
	}
	const n = 1 << 20
	for _, tc := range tests {
		rng := rand.New(rand.NewPCG(5, 6))
		keys := make([]uint64, n)
		for i := range keys {
			keys[i] = rng.Uint64N(uint64(tc.distinct))
		}
		o := NewOracle(keys)
		want := optHitsReference(keys, tc.capacity)
		runtime.GC()
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		got := o.Hits(tc.capacity)
		runtime.ReadMemStats(&b)
		if got != want {
			t.Errorf("%s: Oracle.Hits = %d, want %d", tc.name, got, want)
		}
		// due: 4 bytes per distinct key; the heap: 8 bytes per entry,
		// a few times the capacity at most.
		limit := 4*uint64(tc.distinct) + 8*8*uint64(min(tc.capacity, tc.distinct)) + 64<<10
		if alloc := b.TotalAlloc - a.TotalAlloc; alloc > limit {
			t.Errorf("%s: Hits allocated %d bytes over %d accesses (%.1f per access), want at most %d (a heap of a few times the capacity)",
				tc.name, alloc, n, float64(alloc)/n, limit)
		}
	}
}

// optHitsReference is the offline optimum with bypass computed by a
// linear scan over the resident keys (O(n x capacity)), for the traces
// too long for optBrute.
func optHitsReference(keys []uint64, capacity int) int64 {
	next := make([]int, len(keys))
	last := map[uint64]int{}
	for i := len(keys) - 1; i >= 0; i-- {
		if j, ok := last[keys[i]]; ok {
			next[i] = j
		} else {
			next[i] = len(keys)
		}
		last[keys[i]] = i
	}
	resident := map[uint64]int{} // key -> its next use
	var hits int64
	for i, k := range keys {
		if _, ok := resident[k]; ok {
			hits++
		}
		if next[i] == len(keys) {
			delete(resident, k)
			continue
		}
		if _, ok := resident[k]; ok || len(resident) < capacity {
			resident[k] = next[i]
			continue
		}
		far, farPos := uint64(0), -1
		for r, p := range resident {
			if p > farPos {
				far, farPos = r, p
			}
		}
		if farPos > next[i] {
			delete(resident, far)
			resident[k] = next[i]
		}
	}
	return hits
}
