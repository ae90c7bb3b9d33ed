package sim

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
// capacity (in keys), in O(n log capacity). Its heap holds at most about
// twice the resident keys: a hit leaves the key's old entry behind
// (stale), and the heap drops its stale entries when they outnumber the
// live ones.
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
	push := func(e entry) {
		h.push(e)
		if len(h) > 2*resident+16 {
			h.compact(due)
		}
	}
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
			push(entry{pos: nx, id: id})
			continue
		}
		if nx == never {
			continue // bypass: never used again
		}
		if resident == capacity {
			for due[h[0].id] != h[0].pos {
				h.pop() // stale
			}
			if h[0].pos < nx {
				continue // bypass: every resident key is needed sooner
			}
			due[h.pop().id] = -1
			resident--
		}
		due[id] = nx
		resident++
		push(entry{pos: nx, id: id})
	}
	return hits
}

type entry struct{ pos, id int32 }

// farthest is a max-heap of resident keys by next-use position (typed,
// so that a push or pop allocates nothing).
type farthest []entry

func (h *farthest) push(e entry) {
	*h = append(*h, e)
	h.up(len(*h) - 1)
}

func (h *farthest) pop() entry {
	old := *h
	e, n := old[0], len(old)-1
	old[0] = old[n]
	*h = old[:n]
	h.down(0)
	return e
}

func (h farthest) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if h[j].pos <= h[i].pos {
			return
		}
		h[i], h[j] = h[j], h[i]
		j = i
	}
}

func (h farthest) down(i int) {
	for {
		j := 2*i + 1
		if j >= len(h) {
			return
		}
		if r := j + 1; r < len(h) && h[r].pos > h[j].pos {
			j = r
		}
		if h[j].pos <= h[i].pos {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

// compact drops the stale entries (those whose key is no longer due at
// their position) and restores the heap order.
func (h *farthest) compact(due []int32) {
	live := (*h)[:0]
	for _, e := range *h {
		if due[e.id] == e.pos {
			live = append(live, e)
		}
	}
	*h = live
	for i := len(live)/2 - 1; i >= 0; i-- {
		live.down(i)
	}
}
