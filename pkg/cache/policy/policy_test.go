package policy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// constructors under test, by name.
var allPolicies = []string{DefaultName, "lru"}

func mustByName(t testing.TB, name string, capacity int, seed uint64) Policy {
	t.Helper()
	p, err := ByName(name, capacity, seed)
	if err != nil {
		t.Fatalf("ByName(%q, %d): %v", name, capacity, err)
	}
	return p
}

func TestConstructorsRejectBadCapacity(t *testing.T) {
	for _, c := range []int{0, -1, -1 << 40, MaxCapacity + 1} {
		if _, err := New(c, 1); !errors.Is(err, ErrCapacity) {
			t.Errorf("New(%d): got %v, want ErrCapacity", c, err)
		}
		if _, err := NewLRU(c); !errors.Is(err, ErrCapacity) {
			t.Errorf("NewLRU(%d): got %v, want ErrCapacity", c, err)
		}
		for _, n := range allPolicies {
			if _, err := ByName(n, c, 1); !errors.Is(err, ErrCapacity) {
				t.Errorf("ByName(%q, %d): got %v, want ErrCapacity", n, c, err)
			}
		}
	}
}

func TestByName(t *testing.T) {
	if _, err := ByName("lfu", 10, 1); !errors.Is(err, ErrUnknownPolicy) {
		t.Errorf("ByName(lfu): got %v, want ErrUnknownPolicy", err)
	}
	if got := Names(); !slices.Contains(got, DefaultName) || !slices.Contains(got, "lru") {
		t.Errorf("Names() = %v, want locus and lru", got)
	}
	for _, n := range allPolicies {
		p := mustByName(t, n, 7, 1)
		if p.Name() != n || p.Cap() != 7 || p.Len() != 0 {
			t.Errorf("ByName(%q, 7): Name %q Cap %d Len %d", n, p.Name(), p.Cap(), p.Len())
		}
	}
}

// refLRU is the dumb reference: a slice in recency order, LRU first.
type refLRU struct {
	keys []uint64
	cap  int
}

func (r *refLRU) touch(k uint64) bool {
	i := slices.Index(r.keys, k)
	if i < 0 {
		return false
	}
	r.keys = append(slices.Delete(r.keys, i, i+1), k)
	return true
}

func (r *refLRU) insert(k uint64) (victims []uint64) {
	if slices.Contains(r.keys, k) {
		return nil
	}
	if len(r.keys) == r.cap {
		victims = append(victims, r.keys[0])
		r.keys = r.keys[1:]
	}
	r.keys = append(r.keys, k)
	return victims
}

func (r *refLRU) remove(k uint64) {
	if i := slices.Index(r.keys, k); i >= 0 {
		r.keys = slices.Delete(r.keys, i, i+1)
	}
}

// TestLRUMatchesReference drives NewLRU and the slice reference with the same
// random operations and compares every answer and victim.
func TestLRUMatchesReference(t *testing.T) {
	for _, capacity := range []int{1, 2, 3, 5, 16, 100} {
		for seed := uint64(1); seed <= 5; seed++ {
			rng := rand.New(rand.NewPCG(seed, uint64(capacity)))
			p, err := NewLRU(capacity)
			if err != nil {
				t.Fatal(err)
			}
			ref := &refLRU{cap: capacity}
			universe := uint64(3 * capacity)
			var victims []uint64
			for op := 0; op < 5000; op++ {
				k := rng.Uint64N(universe)
				if rng.IntN(10) == 0 {
					p.Remove(k)
					ref.remove(k)
					continue
				}
				got, want := p.Touch(k), ref.touch(k)
				if got != want {
					t.Fatalf("cap %d seed %d op %d: Touch(%d) = %v, want %v", capacity, seed, op, k, got, want)
				}
				if got {
					continue
				}
				var ok bool
				victims, ok = p.Insert(k, victims[:0])
				wantV := ref.insert(k)
				if !ok || !slices.Equal(victims, wantV) {
					t.Fatalf("cap %d seed %d op %d: Insert(%d) = %v, %v; want %v, true", capacity, seed, op, k, victims, ok, wantV)
				}
				if p.Len() != len(ref.keys) {
					t.Fatalf("Len = %d, want %d", p.Len(), len(ref.keys))
				}
			}
		}
	}
}

// TestPolicyContract checks the Policy protocol against a model of the
// resident set for every policy and many small capacities: Touch answers
// from the resident set, victims are resident and distinct, Len never passes
// Cap, Remove and re-Insert behave.
func TestPolicyContract(t *testing.T) {
	for _, name := range allPolicies {
		for _, capacity := range []int{1, 2, 3, 4, 7, 64, 1500} {
			for seed := uint64(1); seed <= 3; seed++ {
				t.Run(fmt.Sprintf("%s/cap=%d/seed=%d", name, capacity, seed), func(t *testing.T) {
					checkContract(t, mustByName(t, name, capacity, seed), seed)
				})
			}
		}
	}
}

func checkContract(t *testing.T, p Policy, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	model := map[uint64]bool{}
	universe := uint64(4*p.Cap() + 4)
	var victims []uint64
	steps := max(20000, 30*p.Cap())
	for op := 0; op < steps; op++ {
		// Mix a skewed and a uniform stream with occasional scans.
		var k uint64
		switch r := rng.IntN(100); {
		case r < 50:
			k = uint64(rng.ExpFloat64()*float64(p.Cap())/2) % universe
		case r < 95:
			k = rng.Uint64N(universe)
		default:
			k = universe + uint64(op) // never seen again
		}
		if rng.IntN(50) == 0 {
			p.Remove(k)
			delete(model, k)
			continue
		}
		if got := p.Touch(k); got != model[k] {
			t.Fatalf("op %d: Touch(%d) = %v, model says %v", op, k, got, model[k])
		}
		if model[k] {
			// Inserting a resident key is a no-op.
			v, ok := p.Insert(k, victims[:0])
			if !ok || len(v) != 0 {
				t.Fatalf("op %d: Insert(resident %d) = %v, %v; want [], true", op, k, v, ok)
			}
			continue
		}
		var ok bool
		victims, ok = p.Insert(k, victims[:0])
		seen := map[uint64]bool{}
		for _, v := range victims {
			if !model[v] || seen[v] {
				t.Fatalf("op %d: Insert(%d) evicted %d: not resident or twice (victims %v)", op, k, v, victims)
			}
			seen[v] = true
			delete(model, v)
		}
		if ok {
			model[k] = true
		}
		if p.Len() != len(model) || p.Len() > p.Cap() {
			t.Fatalf("op %d: Len = %d, model %d, Cap %d", op, p.Len(), len(model), p.Cap())
		}
	}
	for k := range model {
		if !p.Touch(k) {
			t.Fatalf("resident key %d not found at the end", k)
		}
	}
}

// TestDeterministic replays one stream twice per seed and wants the same
// victims in the same order.
func TestDeterministic(t *testing.T) {
	run := func(seed uint64) []uint64 {
		p, err := New(300, seed)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(7, 7))
		var all, victims []uint64
		for i := 0; i < 200000; i++ {
			k := uint64(rng.ExpFloat64() * 400)
			if !p.Touch(k) {
				victims, _ = p.Insert(k, victims[:0])
				all = append(all, victims...)
			}
		}
		return all
	}
	for _, seed := range []uint64{0, 1, 42} {
		if a, b := run(seed), run(seed); !slices.Equal(a, b) {
			t.Errorf("seed %d: two runs evicted differently", seed)
		}
	}
}

// TestScanResistance: a hot set that fits the cache survives a long scan of
// keys used once under the default policy, while LRU loses it.
func TestScanResistance(t *testing.T) {
	const capacity, hot = 1000, 500
	hitsAfterScan := func(p Policy) float64 {
		var victims []uint64
		access := func(k uint64) bool {
			if p.Touch(k) {
				return true
			}
			victims, _ = p.Insert(k, victims[:0])
			return false
		}
		for round := 0; round < 20; round++ {
			for k := uint64(0); k < hot; k++ {
				access(k)
			}
		}
		for k := uint64(1 << 32); k < 1<<32+20*capacity; k++ {
			access(k)
		}
		hits := 0
		for k := uint64(0); k < hot; k++ {
			if access(k) {
				hits++
			}
		}
		return float64(hits) / hot
	}
	def, _ := New(capacity, 1)
	lru, _ := NewLRU(capacity)
	d, l := hitsAfterScan(def), hitsAfterScan(lru)
	if d < 0.9 || l > 0.1 {
		t.Errorf("hot-set hit ratio after a scan: locus %.2f (want >= 0.9), lru %.2f (want <= 0.1)", d, l)
	}
}

// TestStickyAdmission checks the admission margin on a fixed 1% window:
// over a pass of distinct keys and its reversal (zigzag's first turn), a
// key coming round again beats an incumbent that has not under Caffeine's
// rule (its count already includes the access that brought it in), so the
// first pass's keys are flushed just before they would hit; with margin 1
// they stay and hit at the end of the reversal, about as often as LRU's
// most recent keys hit at its start. The contest itself is table-tested.
func TestStickyAdmission(t *testing.T) {
	for _, tc := range []struct {
		cf, vf, margin int
		want           bool
	}{
		{2, 1, 0, true}, {1, 1, 0, false}, {2, 1, 1, false}, {3, 1, 1, true}, {1, 0, 1, false}, {4, 1, 2, true},
	} {
		p := newTinyLFU(64, 1, 0.01)
		p.margin = tc.margin
		cand, victim := mix64(1), mix64(2)
		for range tc.cf {
			p.freq.increment(cand)
		}
		for range tc.vf {
			p.freq.increment(victim)
		}
		if got := p.admit(cand, victim); got != tc.want {
			t.Errorf("admit with counts %d against %d, margin %d = %v, want %v", tc.cf, tc.vf, tc.margin, got, tc.want)
		}
	}
	const capacity, keys = 200, 800
	reversalHits := func(p Policy) int {
		var victims []uint64
		hits := 0
		for pass := 0; pass < 2; pass++ {
			for i := 0; i < keys; i++ {
				k := i
				if pass == 1 {
					k = keys - 1 - i
				}
				key := mix64(uint64(k) + 1)
				if p.Touch(key) {
					hits++
				} else {
					victims, _ = p.Insert(key, victims[:0])
				}
			}
		}
		return hits
	}
	newTL := func(margin int) Policy {
		p := newTinyLFU(capacity, 1, 0.01)
		p.margin = margin
		return p
	}
	lru, _ := NewLRU(capacity)
	caffeine, sticky, l := reversalHits(newTL(0)), reversalHits(newTL(1)), reversalHits(lru)
	t.Logf("reversal hits at %d keys: caffeine's rule %d, sticky %d, lru %d", capacity, caffeine, sticky, l)
	if sticky < l*9/10 || caffeine > l/2 {
		t.Errorf("reversal hits: sticky %d (want >= 0.9 x LRU's %d), caffeine's rule %d (want <= half)", sticky, l, caffeine)
	}
}

// TestTableMatchesMap checks the open-addressing index against a map under
// random puts and deletes (backward-shift deletion is the subtle part).
func TestTableMatchesMap(t *testing.T) {
	const n = 64
	a := newArena(n)
	tb := newTable(n, 3)
	ref := map[uint64]int32{}
	rng := rand.New(rand.NewPCG(1, 2))
	for op := 0; op < 100000; op++ {
		// Few distinct keys with colliding low bits stress the clusters.
		k := rng.Uint64N(200) << 40
		if i, ok := ref[k]; ok {
			if got := tb.get(a.nodes, k); got != i {
				t.Fatalf("get(%x) = %d, want %d", k, got, i)
			}
			tb.del(k, i)
			a.release(i)
			delete(ref, k)
		} else if len(ref) < n {
			i := a.alloc(k, 0)
			tb.put(k, i)
			ref[k] = i
		}
		for k, i := range ref {
			if got := tb.get(a.nodes, k); got != i {
				t.Fatalf("op %d: get(%x) = %d, want %d", op, k, got, i)
			}
			break
		}
	}
	for k, i := range ref {
		if got := tb.get(a.nodes, k); got != i {
			t.Fatalf("get(%x) = %d, want %d", k, got, i)
		}
	}
	if got := tb.get(a.nodes, 1<<62); got != nilIdx {
		t.Fatalf("get(absent) = %d", got)
	}
}

// TestSketchEstimates: the count-min estimate never undercounts before the
// first halving, saturates at 15, and halving halves.
func TestSketchEstimates(t *testing.T) {
	s := newSketch(1024, 5)
	for k := uint64(0); k < 200; k++ {
		for i := uint64(0); i <= k%20; i++ {
			s.increment(k)
		}
	}
	for k := uint64(0); k < 200; k++ {
		want := int(min(k%20+1, 15))
		if got := s.frequency(k); got < want || got > 15 {
			t.Fatalf("frequency(%d) = %d, want in [%d, 15]", k, got, want)
		}
	}
	before := s.frequency(19)
	s.reset()
	if got := s.frequency(19); got != before/2 {
		t.Fatalf("after reset frequency = %d, want %d", got, before/2)
	}
}
