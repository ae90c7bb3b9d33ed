package sim

import (
	"math/rand/v2"
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
