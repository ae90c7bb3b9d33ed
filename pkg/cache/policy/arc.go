package policy

// Queues of the ARC policy's resident keys (its ghosts are in a ghosts).
const (
	qT1 uint8 = iota // resident, seen once recently
	qT2              // resident, seen at least twice recently
)

// Ghost lists of the ARC policy.
const (
	gB1 = 0 // ghosts of keys evicted from T1
	gB2 = 1 // ghosts of keys evicted from T2
)

// arcPolicy is ARC (Megiddo and Modha, "ARC: A Self-Tuning, Low Overhead
// Replacement Cache", FAST 2003): resident lists T1 (recency) and T2
// (frequency) over the node arena, and ghost lists B1 and B2 of keys
// recently evicted from them (at most capacity ghosts, 16-byte entries in a
// compact ghosts). A hit on a ghost moves the target size p of T1 towards
// the list that would have hit. It is one of the tuner's candidates
// (recency-heavy, phase-changing traces where ARC's adaptive split beats
// every W-TinyLFU window) and one of the live policy's modes (live.go),
// where it shares the W-TinyLFU's arena and index.
type arcPolicy struct {
	arena
	idx    table
	t1, t2 list
	g      *ghosts
	c, p   int
}

func newARC(capacity int, seed uint64) *arcPolicy {
	return &arcPolicy{
		arena: newArena(capacity),
		idx:   newTable(capacity, mix64(seed^0x617263)),
		t1:    newList(), t2: newList(),
		g: newGhosts(capacity, mix64(seed^0x67686f7374)),
		c: capacity,
	}
}

func (a *arcPolicy) Name() string { return "arc" }
func (a *arcPolicy) Len() int     { return a.t1.len + a.t2.len }
func (a *arcPolicy) Cap() int     { return a.c }

func (a *arcPolicy) list(q uint8) *list {
	if q == qT1 {
		return &a.t1
	}
	return &a.t2
}

// contains reports whether key is resident.
func (a *arcPolicy) contains(key uint64) bool { return a.idx.get(a.nodes, key) != nilIdx }

func (a *arcPolicy) Touch(key uint64) bool {
	i := a.idx.get(a.nodes, key)
	if i == nilIdx {
		return false
	}
	a.list(a.nodes[i].queue).unlink(a.nodes, i)
	a.nodes[i].queue = qT2
	a.t2.pushBack(a.nodes, i)
	return true
}

func (a *arcPolicy) Insert(key uint64, victims []uint64) ([]uint64, bool) {
	if a.idx.get(a.nodes, key) != nilIdx {
		return victims, true
	}
	q := qT1
	if g, l := a.g.find(key); g != nilIdx {
		// A ghost hit: adapt p, make room, and the key comes back in T2.
		b1, b2 := a.g.len(gB1), a.g.len(gB2)
		if l == gB1 {
			a.p = min(a.c, a.p+max(b2/b1, 1))
		} else {
			a.p = max(0, a.p-max(b1/b2, 1))
		}
		a.g.remove(g, l)
		victims = a.replace(l == gB2, victims)
		q = qT2
	} else {
		switch l1 := a.t1.len + a.g.len(gB1); {
		case l1 >= a.c:
			if a.t1.len < a.c {
				a.g.dropHead(gB1)
				victims = a.replace(false, victims)
			} else {
				j := a.t1.head
				victims = append(victims, a.nodes[j].key)
				a.drop(j)
			}
		case l1+a.t2.len+a.g.len(gB2) >= a.c:
			if l1+a.t2.len+a.g.len(gB2) >= 2*a.c {
				a.g.dropHead(gB2)
			}
			victims = a.replace(false, victims)
		}
	}
	j := a.alloc(key, q)
	a.idx.put(key, j)
	a.list(q).pushBack(a.nodes, j)
	return victims, true
}

// replace evicts T1's or T2's LRU key to its ghost list (ARC's REPLACE;
// inB2 is whether the request hit a B2 ghost).
func (a *arcPolicy) replace(inB2 bool, victims []uint64) []uint64 {
	if a.t1.len+a.t2.len < a.c {
		return victims
	}
	from, to := &a.t2, gB2
	if a.t1.len > 0 && (a.t1.len > a.p || (inB2 && a.t1.len == a.p)) || a.t2.len == 0 {
		from, to = &a.t1, gB1
	}
	j := from.head
	k := a.nodes[j].key
	victims = append(victims, k)
	a.drop(j)
	a.g.push(to, k)
	return victims
}

func (a *arcPolicy) Remove(key uint64) {
	if i := a.idx.get(a.nodes, key); i != nilIdx {
		a.drop(i)
	}
}

func (a *arcPolicy) drop(i int32) {
	a.list(a.nodes[i].queue).unlink(a.nodes, i)
	a.idx.del(a.nodes[i].key, i)
	a.release(i)
}

func (a *arcPolicy) missing(other shadow) int {
	n := 0
	for _, l := range [...]*list{&a.t1, &a.t2} {
		for i := l.head; i != nilIdx; i = a.nodes[i].next {
			if !other.contains(a.nodes[i].key) {
				n++
			}
		}
	}
	return n
}
