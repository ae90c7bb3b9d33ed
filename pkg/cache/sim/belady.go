package sim

import "container/heap"

// never is the next-use position of a key that is not accessed again.
const never = int32(1<<31 - 1)

// Oracle computes the offline optimum (Belady's MIN) for a trace. It knows
// every future access, evicts the resident key whose next use is farthest
// away, and does not admit a missed key whose next use is farther than every
// resident key's (bypass). With bypass it is the optimum for policies that
// may reject a key, as the page cache's may, so it bounds every hit ratio in
// a table from above.
type Oracle struct {
	ids  []int32 // dense id of each access's key
	next []int32 // position of the next access to the same key, or never
	n    int     // distinct keys
}

// NewOracle precomputes next-use positions for keys (O(n) time and memory);
// one Oracle answers any number of capacities.
func NewOracle(keys []uint64) *Oracle {
	ids := make([]int32, len(keys))
	dense := make(map[uint64]int32)
	for i, k := range keys {
		id, ok := dense[k]
		if !ok {
			id = int32(len(dense))
			dense[k] = id
		}
		ids[i] = id
	}
	return oracleOfIDs(ids, len(dense))
}

// oracleOfIDs is NewOracle over dense ids (0 to n-1) already assigned, as
// Read assigns them; the Oracle keeps ids (read-only).
func oracleOfIDs(ids []int32, n int) *Oracle {
	o := &Oracle{ids: ids, next: make([]int32, len(ids)), n: n}
	last := make([]int32, o.n)
	for i := range last {
		last[i] = never
	}
	for i := len(ids) - 1; i >= 0; i-- {
		id := o.ids[i]
		o.next[i] = last[id]
		last[id] = int32(i)
	}
	return o
}

// Hits returns the number of hits of the optimal policy with the given
// capacity (in keys), in O(n log n).
func (o *Oracle) Hits(capacity int) int64 {
	if capacity < 1 {
		return 0
	}
	// due[id] is the position at which resident key id is next accessed;
	// -1 when not resident. A heap entry is live iff due[id] == its pos.
	due := make([]int32, o.n)
	for i := range due {
		due[i] = -1
	}
	var h farthest
	resident := 0
	var hits int64
	for t, id := range o.ids {
		nx := o.next[t]
		if due[id] == int32(t) {
			hits++
			if nx == never {
				due[id] = -1
				resident--
				continue
			}
			due[id] = nx
			heap.Push(&h, entry{pos: nx, id: id})
			continue
		}
		if nx == never {
			continue // bypass: never used again
		}
		if resident == capacity {
			for due[h[0].id] != h[0].pos {
				heap.Pop(&h) // stale
			}
			if h[0].pos < nx {
				continue // bypass: every resident key is needed sooner
			}
			due[heap.Pop(&h).(entry).id] = -1
			resident--
		}
		due[id] = nx
		heap.Push(&h, entry{pos: nx, id: id})
		resident++
	}
	return hits
}

type entry struct{ pos, id int32 }

// farthest is a max-heap of resident keys by next-use position.
type farthest []entry

func (h farthest) Len() int           { return len(h) }
func (h farthest) Less(i, j int) bool { return h[i].pos > h[j].pos }
func (h farthest) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *farthest) Push(x any)        { *h = append(*h, x.(entry)) }
func (h *farthest) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
