package cache

import (
	"sync"
	"sync/atomic"
)

// ramTier keeps RAM copies of the hottest disk pages (Config.MemoryBytes
// with a Dir). It is inclusive: a page in RAM still has its disk slot, so
// the capacity and the policy are the disk's and dropping a RAM copy costs
// nothing. A disk page read twice since it was written (or re-indexed) is
// promoted; when the tier is full, CLOCK picks the copy to drop (a copy
// read since the hand last passed gets a second chance).
//
// Threading: a disk slot's RAM copy is slotMeta.ram (r+1; 0: none). Readers
// load it under their shard lock, pin the RAM slot, then check that ram
// still names it; the CLOCK hand (under mu, not the shard lock) clears ram
// first, then checks the pins. Either the reader sees the copy gone and
// reads the disk slot, or the hand sees the pin and leaves the RAM slot
// alone (Dekker, with sequentially consistent atomics).
type ramTier struct {
	mem   *memStore
	pins  []atomic.Int32 // readers using each RAM slot
	ref   []atomic.Bool  // read since the hand last passed
	mu    sync.Mutex     // guards owner and hand
	owner []int32        // disk slot the copy belongs to; -1 free, -2 being filled
	hand  int

	hits, promotions atomic.Int64
}

const (
	ramFree    = -1
	ramFilling = -2
)

func newRAMTier(n, pageSize int) *ramTier {
	t := &ramTier{
		mem:   newMemStore(n, pageSize),
		pins:  make([]atomic.Int32, n),
		ref:   make([]atomic.Bool, n),
		owner: make([]int32, n),
	}
	for i := range t.owner {
		t.owner[i] = ramFree
	}
	return t
}

// reserve picks a RAM slot for a new copy, dropping the copy the CLOCK hand
// chooses. It returns -1 if every slot is pinned or being filled.
func (t *ramTier) reserve(slots []slotMeta) int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.owner)
	for i := 0; i < 2*n+1; i++ {
		r := t.hand
		t.hand = (t.hand + 1) % n
		switch d := t.owner[r]; {
		case d == ramFilling:
			continue
		case d >= 0:
			if t.ref[r].Swap(false) {
				continue // second chance
			}
			slots[d].ram.CompareAndSwap(int32(r)+1, 0)
			t.owner[r] = ramFree
		}
		if t.pins[r].Load() != 0 {
			continue // a reader still copies from it
		}
		t.owner[r] = ramFilling
		return int32(r)
	}
	return -1
}

// publish records the filled slot r as the copy of disk slot d, or frees
// it (d < 0).
func (t *ramTier) publish(r int32, d int32) {
	t.mu.Lock()
	t.owner[r] = d
	t.mu.Unlock()
}

// drop frees the RAM copy of disk slot d (meta m) as it leaves the index.
// Caller holds the shard lock of the disk slot.
func (t *ramTier) drop(d uint32, m *slotMeta) {
	if r := m.ram.Swap(0) - 1; r >= 0 {
		t.mu.Lock()
		if t.owner[r] == int32(d) { // else the hand took it already
			t.owner[r] = ramFree
		}
		t.mu.Unlock()
	}
}

// pin pins the RAM copy of disk slot m and returns its index plus one, or
// 0 if there is none. Caller holds the shard lock.
func (t *ramTier) pin(m *slotMeta) int32 {
	r1 := m.ram.Load()
	if r1 == 0 {
		return 0
	}
	t.pins[r1-1].Add(1)
	if m.ram.Load() != r1 {
		t.pins[r1-1].Add(-1)
		return 0
	}
	t.ref[r1-1].Store(true)
	t.hits.Add(1)
	return r1
}

func (t *ramTier) resident() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var n int64
	for _, d := range t.owner {
		if d >= 0 {
			n++
		}
	}
	return n
}
