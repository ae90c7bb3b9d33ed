package policy

// table maps a key to its node index: open addressing with linear probing and
// backward-shift deletion (no tombstones, so it never degrades or grows). A
// slot packs the low 32 bits of the key's hash (a tag whose multiply-shift
// reduction gives the home slot) with index+1; 0 is an empty slot. The table
// has exactly 2 x capacity slots (not a power of two: the home slot is
// (tag x n) >> 32), a load factor of at most 1/2, so it costs 16 bytes per
// key of capacity and never allocates after construction.
type table struct {
	slots []uint64
	n     uint64 // len(slots)
	seed  uint64
}

func newTable(capacity int, seed uint64) table {
	n := uint64(max(8, 2*capacity))
	return table{slots: make([]uint64, n), n: n, seed: seed}
}

// home is the first slot probed for a key with this tag.
func (t *table) home(tag uint32) uint64 { return uint64(tag) * t.n >> 32 }

// nextSlot is the slot after s, wrapping.
func (t *table) nextSlot(s uint64) uint64 {
	if s++; s == t.n {
		return 0
	}
	return s
}

// hash mixes key with the table's seed (the finaliser of SplitMix64), so
// keys that are not well mixed still spread, and a seed varies the layout.
func (t *table) hash(key uint64) uint32 {
	return uint32(mix64(key ^ t.seed))
}

func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// get returns the node index of key, or nilIdx.
func (t *table) get(nodes []node, key uint64) int32 {
	tag := t.hash(key)
	for s := t.home(tag); ; s = t.nextSlot(s) {
		v := t.slots[s]
		if v == 0 {
			return nilIdx
		}
		if uint32(v>>32) == tag {
			if i := int32(uint32(v)) - 1; nodes[i].key == key {
				return i
			}
		}
	}
}

// put records key -> i; key must be absent.
func (t *table) put(key uint64, i int32) {
	tag := t.hash(key)
	s := t.home(tag)
	for t.slots[s] != 0 {
		s = t.nextSlot(s)
	}
	t.slots[s] = uint64(tag)<<32 | uint64(uint32(i+1))
}

// del removes key, which must be present at node index i.
func (t *table) del(key uint64, i int32) {
	tag := t.hash(key)
	want := uint64(uint32(i + 1))
	s := t.home(tag)
	for uint32(t.slots[s]) != uint32(want) {
		s = t.nextSlot(s)
	}
	// Backward-shift: pull later entries of the cluster into the hole when
	// the hole lies between their home slot and their current slot.
	for {
		t.slots[s] = 0
		j := s
		for {
			j = t.nextSlot(j)
			v := t.slots[j]
			if v == 0 {
				return
			}
			home := t.home(uint32(v >> 32))
			// Move v to s unless home lies cyclically in (s, j].
			if (j > s && (home <= s || home > j)) || (j < s && home <= s && home > j) {
				t.slots[s] = v
				s = j
				break
			}
		}
	}
}

// contains reports whether key is present.
func (t *table) contains(nodes []node, key uint64) bool { return t.get(nodes, key) != nilIdx }
