package policy

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// refARC is ARC exactly as Megiddo and Modha's pseudo-code states it, on
// slices (MRU last): the brute-force reference for arcPolicy.
type refARC struct {
	t1, t2, b1, b2 []uint64
	c, p           int
}

func del(s []uint64, k uint64) []uint64 {
	i := slices.Index(s, k)
	return slices.Delete(s, i, i+1)
}

func (r *refARC) replace(inB2 bool) (victim uint64) {
	if len(r.t1) > 0 && (len(r.t1) > r.p || (inB2 && len(r.t1) == r.p)) || len(r.t2) == 0 {
		victim, r.t1 = r.t1[0], r.t1[1:]
		r.b1 = append(r.b1, victim)
	} else {
		victim, r.t2 = r.t2[0], r.t2[1:]
		r.b2 = append(r.b2, victim)
	}
	return victim
}

// access returns whether k hit and the evicted resident key, if any.
func (r *refARC) access(k uint64) (hit bool, victims []uint64) {
	switch {
	case slices.Contains(r.t1, k):
		r.t1 = del(r.t1, k)
		r.t2 = append(r.t2, k)
		return true, nil
	case slices.Contains(r.t2, k):
		r.t2 = append(del(r.t2, k), k)
		return true, nil
	case slices.Contains(r.b1, k):
		r.p = min(r.c, r.p+max(len(r.b2)/len(r.b1), 1))
		if len(r.t1)+len(r.t2) >= r.c {
			victims = append(victims, r.replace(false))
		}
		r.b1 = del(r.b1, k)
		r.t2 = append(r.t2, k)
		return false, victims
	case slices.Contains(r.b2, k):
		r.p = max(0, r.p-max(len(r.b1)/len(r.b2), 1))
		if len(r.t1)+len(r.t2) >= r.c {
			victims = append(victims, r.replace(true))
		}
		r.b2 = del(r.b2, k)
		r.t2 = append(r.t2, k)
		return false, victims
	}
	l1 := len(r.t1) + len(r.b1)
	total := l1 + len(r.t2) + len(r.b2)
	if l1 == r.c {
		if len(r.t1) < r.c {
			r.b1 = r.b1[1:]
			victims = append(victims, r.replace(false))
		} else {
			victims = append(victims, r.t1[0])
			r.t1 = r.t1[1:]
		}
	} else if total >= r.c {
		if total == 2*r.c {
			r.b2 = r.b2[1:]
		}
		victims = append(victims, r.replace(false))
	}
	r.t1 = append(r.t1, k)
	return false, victims
}

// TestARCMatchesReference replays random streams with reuse at several
// capacities through arcPolicy and the reference and compares every hit and
// victim.
func TestARCMatchesReference(t *testing.T) {
	for _, capacity := range []int{1, 2, 5, 16, 64} {
		rng := rand.New(rand.NewPCG(uint64(capacity), 2))
		a := newARC(capacity, 1)
		ref := &refARC{c: capacity}
		var victims []uint64
		for op := 0; op < 20000; op++ {
			var k uint64
			if rng.IntN(2) == 0 {
				k = uint64(rng.IntN(capacity + 2)) // a hot set near the capacity
			} else {
				k = uint64(rng.IntN(4 * capacity))
			}
			wantHit, wantVictims := ref.access(k)
			hit := a.Touch(k)
			victims = victims[:0]
			if !hit {
				victims, _ = a.Insert(k, victims)
			}
			if hit != wantHit || !slices.Equal(victims, wantVictims) {
				t.Fatalf("cap %d op %d key %d: hit %v victims %v, reference %v %v", capacity, op, k, hit, victims, wantHit, wantVictims)
			}
			if a.Len() != len(ref.t1)+len(ref.t2) || a.p != ref.p || a.g.len(gB1) != len(ref.b1) || a.g.len(gB2) != len(ref.b2) {
				t.Fatalf("cap %d op %d: sizes %d/%d/%d p %d, reference %d/%d/%d p %d", capacity, op,
					a.Len(), a.g.len(gB1), a.g.len(gB2), a.p, len(ref.t1)+len(ref.t2), len(ref.b1), len(ref.b2), ref.p)
			}
		}
	}
}
