package policy

// Queues of the ARC policy: two resident lists and their ghosts.
const (
	qT1 uint8 = iota // resident, seen once recently
	qT2              // resident, seen at least twice recently
	qB1              // ghost of a key evicted from T1
	qB2              // ghost of a key evicted from T2
)

// arcPolicy is ARC (Megiddo and Modha, "ARC: A Self-Tuning, Low Overhead
// Replacement Cache", FAST 2003) over the node arena: resident lists T1
// (recency) and T2 (frequency) and ghost lists B1 and B2 of keys recently
// evicted from them, at most 2 x capacity nodes in all. A hit on a ghost
// moves the target size p of T1 towards the list that would have hit. It is
// one of the tuner's candidates (recency-heavy, phase-changing traces where
// ARC's adaptive split beats every W-TinyLFU window).
type arcPolicy struct {
	arena
	idx            table
	t1, t2, b1, b2 list
	c, p           int
}

func newARC(capacity int, seed uint64) *arcPolicy {
	return &arcPolicy{
		arena: newArena(2*capacity + 1),
		idx:   newTable(2*capacity+1, mix64(seed^0x617263)),
		t1:    newList(), t2: newList(), b1: newList(), b2: newList(),
		c: capacity,
	}
}

func (a *arcPolicy) Name() string { return "arc" }
func (a *arcPolicy) Len() int     { return a.t1.len + a.t2.len }
func (a *arcPolicy) Cap() int     { return a.c }

func (a *arcPolicy) list(q uint8) *list {
	switch q {
	case qT1:
		return &a.t1
	case qT2:
		return &a.t2
	case qB1:
		return &a.b1
	default:
		return &a.b2
	}
}

// contains reports whether key is resident.
func (a *arcPolicy) contains(key uint64) bool {
	i := a.idx.get(a.nodes, key)
	return i != nilIdx && a.nodes[i].queue <= qT2
}

func (a *arcPolicy) Touch(key uint64) bool {
	i := a.idx.get(a.nodes, key)
	if i == nilIdx || a.nodes[i].queue > qT2 {
		return false
	}
	a.list(a.nodes[i].queue).unlink(a.nodes, i)
	a.nodes[i].queue = qT2
	a.t2.pushBack(a.nodes, i)
	return true
}

func (a *arcPolicy) Insert(key uint64, victims []uint64) ([]uint64, bool) {
	i := a.idx.get(a.nodes, key)
	if i != nilIdx {
		switch q := a.nodes[i].queue; q {
		case qT1, qT2:
			return victims, true
		case qB1:
			a.p = min(a.c, a.p+max(a.b2.len/a.b1.len, 1))
			victims = a.replace(false, victims)
		default:
			a.p = max(0, a.p-max(a.b1.len/a.b2.len, 1))
			victims = a.replace(true, victims)
		}
		a.list(a.nodes[i].queue).unlink(a.nodes, i)
		a.nodes[i].queue = qT2
		a.t2.pushBack(a.nodes, i)
		return victims, true
	}
	switch l1 := a.t1.len + a.b1.len; {
	case l1 >= a.c:
		if a.t1.len < a.c {
			a.drop(a.b1.head)
			victims = a.replace(false, victims)
		} else {
			j := a.t1.head
			victims = append(victims, a.nodes[j].key)
			a.drop(j)
		}
	case l1 < a.c && l1+a.t2.len+a.b2.len >= a.c:
		if l1+a.t2.len+a.b2.len == 2*a.c {
			a.drop(a.b2.head)
		}
		if a.t1.len+a.t2.len >= a.c {
			victims = a.replace(false, victims)
		}
	}
	j := a.alloc(key, qT1)
	a.idx.put(key, j)
	a.t1.pushBack(a.nodes, j)
	return victims, true
}

// replace evicts T1's or T2's LRU key to its ghost list (ARC's REPLACE;
// inB2 is whether the request hit a B2 ghost).
func (a *arcPolicy) replace(inB2 bool, victims []uint64) []uint64 {
	if a.t1.len+a.t2.len < a.c {
		return victims
	}
	from, to, q := &a.t2, &a.b2, qB2
	if a.t1.len > 0 && (a.t1.len > a.p || (inB2 && a.t1.len == a.p)) || a.t2.len == 0 {
		from, to, q = &a.t1, &a.b1, qB1
	}
	j := from.head
	victims = append(victims, a.nodes[j].key)
	from.unlink(a.nodes, j)
	a.nodes[j].queue = q
	to.pushBack(a.nodes, j)
	return victims
}

func (a *arcPolicy) Remove(key uint64) {
	if i := a.idx.get(a.nodes, key); i != nilIdx && a.nodes[i].queue <= qT2 {
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
