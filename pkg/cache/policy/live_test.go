package policy

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestLiveSwitchKeepsResidents drives the live cache through every pair of
// candidates (W-TinyLFU windows, LRU, ARC), switching every few hundred
// accesses, and checks against a model of the stored keys that a switch
// keeps the resident set exactly (the caller's storage is untouched), that
// Touch answers from it, and that victims are resident, distinct and never
// the key just admitted.
func TestLiveSwitchKeepsResidents(t *testing.T) {
	for _, capacity := range []int{1, 2, 7, 100, 1000} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("cap=%d/seed=%d", capacity, seed), func(t *testing.T) {
				l := newLive(capacity, seed)
				rng := rand.New(rand.NewPCG(seed, uint64(capacity)))
				model := map[uint64]bool{}
				universe := uint64(3*capacity + 3)
				var victims []uint64
				for op := 0; op < 40*capacity+4000; op++ {
					if op%337 == 0 {
						before := l.Len()
						c := candidates[rng.IntN(len(candidates))]
						l.follow(c, rng.Float64())
						if l.Len() != before || l.Len() != len(model) {
							t.Fatalf("op %d: switch to %+v: Len %d -> %d, model %d", op, c, before, l.Len(), len(model))
						}
						for k := range model {
							if !l.contains(k) {
								t.Fatalf("op %d: switch to %+v lost resident key %d", op, c, k)
							}
						}
					}
					k := uint64(rng.ExpFloat64()*float64(capacity)) % universe
					if rng.IntN(40) == 0 {
						l.Remove(k)
						delete(model, k)
						continue
					}
					if got := l.Touch(k); got != model[k] {
						t.Fatalf("op %d: Touch(%d) = %v, model %v (mode %d)", op, k, got, model[k], l.mode)
					}
					if model[k] {
						continue
					}
					var ok bool
					victims, ok = l.Insert(k, victims[:0])
					seen := map[uint64]bool{}
					for _, v := range victims {
						if !model[v] || seen[v] || v == k {
							t.Fatalf("op %d: Insert(%d) evicted %d: not resident, twice or the key itself (%v)", op, k, v, victims)
						}
						seen[v] = true
						delete(model, v)
					}
					if ok {
						model[k] = true
					}
					if l.Len() != len(model) || l.Len() > capacity {
						t.Fatalf("op %d: Len %d, model %d, cap %d", op, l.Len(), len(model), capacity)
					}
				}
			})
		}
	}
}

// contains reports whether key is resident in the live cache.
func (l *live) contains(key uint64) bool { return l.tl.contains(key) }

// TestLiveARCModeIsARC: a live cache switched to ARC while empty behaves
// exactly like ARC (the reference of arc_test.go) from then on.
func TestLiveARCModeIsARC(t *testing.T) {
	const capacity = 50
	l := newLive(capacity, 1)
	l.follow(candidate{kind: kindARC}, 0)
	ref := &refARC{c: capacity}
	rng := rand.New(rand.NewPCG(4, 4))
	var victims []uint64
	for op := 0; op < 20000; op++ {
		k := uint64(rng.IntN(3 * capacity))
		if rng.IntN(2) == 0 {
			k = uint64(rng.IntN(capacity))
		}
		wantHit, wantVictims := ref.access(k)
		hit := l.Touch(k)
		victims = victims[:0]
		if !hit {
			victims, _ = l.Insert(k, victims)
		}
		if hit != wantHit || fmt.Sprint(victims) != fmt.Sprint(wantVictims) {
			t.Fatalf("op %d key %d: hit %v victims %v, reference %v %v", op, k, hit, victims, wantHit, wantVictims)
		}
	}
}

// TestMirrorAdmitsWithoutTouch: a warm restart re-indexes the pages it
// finds with Insert and no Touch; the default policy keeps every one of
// them while it has room, whatever its size (mirror or sampled), and they
// then hit.
func TestMirrorAdmitsWithoutTouch(t *testing.T) {
	for _, capacity := range []int{1, 16, 300, 2048, 5000} {
		p, _ := New(capacity, 1)
		var victims []uint64
		for k := uint64(0); k < uint64(capacity); k++ {
			var ok bool
			victims, ok = p.Insert(mix64(k), victims[:0])
			if !ok || len(victims) != 0 {
				t.Fatalf("cap %d: Insert(%d) without Touch into a cache with room: %v, victims %v", capacity, k, ok, victims)
			}
		}
		if p.Len() != capacity {
			t.Fatalf("cap %d: Len %d after re-indexing %d pages", capacity, p.Len(), capacity)
		}
		for k := uint64(0); k < uint64(capacity); k++ {
			if !p.Touch(mix64(k)) {
				t.Fatalf("cap %d: re-indexed key %d does not hit", capacity, k)
			}
		}
	}
}

// policyBudget is the most memory the default policy may use per key of
// capacity (TestPolicyBytesPerKey). The page cache's budget is 500 bytes of
// index and policy per page, and its own index costs about 80 to 110 bytes
// per page (TestIndexMemoryPerPage in pkg/cache). The worst size is just
// over a power of two at full sampling (1,025 keys: six shadows, and the
// shared sketch rounded up to 2,048 keys): 374 bytes.
const policyBudget = 380

// TestPolicyBytesPerKey measures the default policy's memory per key of
// capacity, filled, at the capacities of small and large shards, and holds
// it to policyBudget. For the sampled sizes the live cache is switched to
// ARC first, so the ghost lists it then allocates are counted (the worst
// case).
func TestPolicyBytesPerKey(t *testing.T) {
	for _, capacity := range []int{16, 63, 64, 256, 1024, 1025, 2048, 2049, 4096, 1 << 16} {
		n := max(1, (1<<21)/(capacity*64)) // enough instances for a few MiB
		ps := make([]Policy, n)
		before := heapBytes()
		for j := range ps {
			p, err := New(capacity, uint64(j))
			if err != nil {
				t.Fatal(err)
			}
			if s, ok := p.(*sampledPolicy); ok {
				s.live.follow(candidate{kind: kindARC}, 0.5)
			}
			var victims []uint64
			for i := 0; i < 3*capacity; i++ {
				if k := mix64(uint64(i % (2 * capacity))); !p.Touch(k) {
					victims, _ = p.Insert(k, victims[:0])
				}
			}
			ps[j] = p
		}
		perKey := float64(heapBytes()-before) / float64(capacity*n)
		runtime.KeepAlive(ps)
		t.Logf("cap %d: %.1f bytes per key of capacity", capacity, perKey)
		if perKey > policyBudget {
			t.Errorf("cap %d: %.1f bytes per key, want at most %d", capacity, perKey, policyBudget)
		}
	}
}
