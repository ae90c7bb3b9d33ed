package policy

import "math/bits"

// table maps a key to its node index: open addressing with linear probing and
// backward-shift deletion (no tombstones, so it never degrades or grows). A
// slot packs the low 32 bits of the key's hash (a tag that also gives the
// home slot) with index+1; 0 is an empty slot. The table is sized once for a
// load factor of at most 1/2, so it costs 16 to 32 bytes per resident key and
// never allocates after construction.
type table struct {
	slots []uint64
	mask  uint64
	seed  uint64
}

func newTable(capacity int, seed uint64) table {
	n := uint64(1) << bits.Len64(uint64(2*capacity-1)) // next power of two >= 2*capacity
	if n < 8 {
		n = 8
	}
	return table{slots: make([]uint64, n), mask: n - 1, seed: seed}
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
	for s := uint64(tag) & t.mask; ; s = (s + 1) & t.mask {
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
	s := uint64(tag) & t.mask
	for t.slots[s] != 0 {
		s = (s + 1) & t.mask
	}
	t.slots[s] = uint64(tag)<<32 | uint64(uint32(i+1))
}

// del removes key, which must be present at node index i.
func (t *table) del(key uint64, i int32) {
	tag := t.hash(key)
	want := uint64(uint32(i + 1))
	s := uint64(tag) & t.mask
	for uint32(t.slots[s]) != uint32(want) {
		s = (s + 1) & t.mask
	}
	// Backward-shift: pull later entries of the cluster into the hole when
	// the hole lies between their home slot and their current slot.
	for {
		t.slots[s] = 0
		j := s
		for {
			j = (j + 1) & t.mask
			v := t.slots[j]
			if v == 0 {
				return
			}
			home := uint64(uint32(v>>32)) & t.mask
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
