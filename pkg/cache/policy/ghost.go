package policy

// ghostEntry is one key in a ghost list: 16 bytes.
type ghostEntry struct {
	key        uint64
	prev, next int32
}

// ghostList is an LRU queue of ghost entries (head: oldest).
type ghostList struct {
	head, tail int32
	len        int
}

// ghosts holds ARC's two ghost lists, B1 and B2: keys recently evicted from
// T1 and T2, which hold no data, only their history. It is compact: at most
// max entries of 16 bytes (the key and its links in its list) in a fixed
// pool, indexed by an open-addressed set of 4-byte entry numbers (linear
// probing, backward-shift deletion, 2 x max slots), so about 24 bytes per
// ghost of room. Nothing is allocated after newGhosts.
type ghosts struct {
	e     []ghostEntry
	free  int32
	lists [2]ghostList
	set   []uint32 // entry+1 and 0 for an empty slot; the key is e[entry].key
	seed  uint64
}

func newGhosts(max int, seed uint64) *ghosts {
	g := &ghosts{e: make([]ghostEntry, max), set: make([]uint32, 2*max+1), seed: seed}
	g.reset()
	return g
}

// reset forgets every ghost.
func (g *ghosts) reset() {
	g.free = nilIdx
	for i := len(g.e) - 1; i >= 0; i-- {
		g.e[i] = ghostEntry{next: g.free}
		g.free = int32(i)
	}
	clear(g.set)
	for l := range g.lists {
		g.lists[l] = ghostList{head: nilIdx, tail: nilIdx}
	}
}

func (g *ghosts) len(l int) int { return g.lists[l].len }

func (g *ghosts) home(key uint64) uint64 {
	return (mix64(key^g.seed) >> 32) * uint64(len(g.set)) >> 32
}

func (g *ghosts) nextSlot(s uint64) uint64 {
	if s++; s == uint64(len(g.set)) {
		return 0
	}
	return s
}

// find returns the entry and list of key, or nilIdx.
func (g *ghosts) find(key uint64) (int32, int) {
	for s := g.home(key); ; s = g.nextSlot(s) {
		v := g.set[s]
		if v == 0 {
			return nilIdx, 0
		}
		if i := int32(v&^listBit) - 1; g.e[i].key == key {
			return i, int(v >> 31)
		}
	}
}

// listBit marks a set slot whose entry is in B2 (entry numbers are below
// 2^30), so an entry is 16 bytes with no room for its list number.
const listBit = 1 << 31

// push adds key, which must not be a ghost, at the MRU end of list l. When
// every entry is in use the oldest ghost of B2 (else of B1) makes room.
func (g *ghosts) push(l int, key uint64) {
	if g.free == nilIdx {
		if g.lists[1].len > 0 {
			g.dropHead(1)
		} else {
			g.dropHead(0)
		}
	}
	i := g.free
	g.free = g.e[i].next
	lst := &g.lists[l]
	g.e[i] = ghostEntry{key: key, prev: lst.tail, next: nilIdx}
	if lst.tail != nilIdx {
		g.e[lst.tail].next = i
	} else {
		lst.head = i
	}
	lst.tail = i
	lst.len++
	s := g.home(key)
	for g.set[s] != 0 {
		s = g.nextSlot(s)
	}
	g.set[s] = uint32(i+1) | uint32(l)<<31
}

// dropHead forgets the oldest ghost of list l, if any.
func (g *ghosts) dropHead(l int) {
	if h := g.lists[l].head; h != nilIdx {
		g.remove(h, l)
	}
}

// remove forgets ghost entry i of list l.
func (g *ghosts) remove(i int32, l int) {
	lst := &g.lists[l]
	p, n := g.e[i].prev, g.e[i].next
	if p != nilIdx {
		g.e[p].next = n
	} else {
		lst.head = n
	}
	if n != nilIdx {
		g.e[n].prev = p
	} else {
		lst.tail = p
	}
	lst.len--
	g.unindex(g.e[i].key, i)
	g.e[i].next = g.free
	g.free = i
}

// unindex deletes entry i (holding key) from the set, shifting later
// entries of its cluster back.
func (g *ghosts) unindex(key uint64, i int32) {
	s := g.home(key)
	for g.set[s]&^listBit != uint32(i+1) {
		s = g.nextSlot(s)
	}
	for {
		g.set[s] = 0
		j := s
		for {
			j = g.nextSlot(j)
			v := g.set[j]
			if v == 0 {
				return
			}
			home := g.home(g.e[v&^listBit-1].key)
			if (j > s && (home <= s || home > j)) || (j < s && home <= s && home > j) {
				g.set[s] = v
				s = j
				break
			}
		}
	}
}
