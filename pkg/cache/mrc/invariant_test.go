package mrc

import (
	"math"
	"math/rand/v2"
	"testing"
)

// After every Access the tree holds exactly one count per tracked key,
// also when a reuse triggers a compaction (it once counted the key twice).
func TestTreeCountsEachTrackedKeyOnce(t *testing.T) {
	e, _ := New(Config{SampleBudget: 4})
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1000; i++ {
		e.Access(uint64(rng.IntN(4)))
		if got, want := int(e.tree.prefix(e.tree.len())), len(e.last); got != want {
			t.Fatalf("access %d: tree counts %d keys, %d tracked (clock %d)", i, got, want, e.clock)
		}
	}
}

// With every key in the sample (rate 1), each reuse distance the estimator
// computes must equal the exact LRU stack distance.
func TestDistancesExactAtRate1(t *testing.T) {
	const budget = 4
	e, _ := New(Config{SampleBudget: budget})
	rng := rand.New(rand.NewPCG(1, 2))
	var stack []uint64 // MRU first
	bad := 0
	for i := 0; i < 200; i++ {
		k := uint64(rng.IntN(budget))
		exact := -1
		for j, s := range stack {
			if s == k {
				exact = j
				stack = append(stack[:j], stack[j+1:]...)
				break
			}
		}
		stack = append([]uint64{k}, stack...)
		h := e.hash(k)
		var got int32 = -1
		if tt, ok := e.last[h]; ok {
			got = e.tree.sumFrom(tt + 1)
		}
		e.Access(k)
		if int(got) != exact {
			bad++
			if bad <= 5 {
				t.Errorf("access %d key %d: estimator distance %d, exact %d", i, k, got, exact)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of 200 distances wrong", bad)
	}
}

// Sizing's sizes never overflow: they grow with the factor and saturate at
// MaxInt.
func TestSizingHugeCurrent(t *testing.T) {
	e, _ := New(Config{SampleBudget: 64})
	for _, cur := range []int{math.MaxInt / 4, math.MaxInt} {
		prev := 0
		for _, p := range e.Sizing(cur) {
			if p.Size < prev || p.Size < 1 {
				t.Fatalf("Sizing(%d): %+v, sizes must grow", cur, e.Sizing(cur))
			}
			prev = p.Size
		}
	}
}

// The key whose hash is MaxUint64 (sampled at rate 1 since
// TestShardsKeyNeverSampled's fix) keeps its place in the tree across a
// compaction, and its distances stay exact. Was: compact marked the times
// it renumbers with hash+1, 0 meaning free, so that key's time read as
// free: it left the tree with its old time still in last, and the next
// reuse counted the wrong keys and decremented another key's count.
func TestCompactionKeepsTheTopHashKey(t *testing.T) {
	const seed = 7
	top := unsplitmix(math.MaxUint64) ^ seed
	e, _ := New(Config{SampleBudget: 4, Seed: seed})
	keys := []uint64{top, 1, 2}
	var trace []uint64
	for i := 0; i < 60; i++ {
		k := keys[i%len(keys)]
		trace = append(trace, k)
		e.Access(k)
		if got, want := int(e.tree.prefix(e.tree.len())), len(e.last); got != want {
			t.Fatalf("access %d: tree counts %d keys, %d tracked (clock %d)", i, got, want, e.clock)
		}
	}
	sizes := []int{1, 2, 3, 4}
	exact := Exact(trace, sizes)
	for i, s := range sizes {
		if got := e.HitRatio(s); math.Abs(got-exact[i]) > 1e-9 {
			t.Errorf("HitRatio(%d) = %v, exact %v", s, got, exact[i])
		}
	}
}
