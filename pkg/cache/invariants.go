package cache

import "fmt"

// checkInvariants verifies the bookkeeping while no read is in progress:
// every slot is in exactly one shard's index, free list or pending list;
// each shard holds exactly its quota; the policy's resident count equals
// the index size; resident counters match. Used by tests.
func (c *Cache) checkInvariants() error {
	seen := make([]int8, len(c.slots))
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n := len(sh.index) + len(sh.free) + len(sh.pending)
		var used int64
		for pk, s := range sh.index {
			seen[s]++
			m := &c.slots[s]
			if m.obj == nil || pageKey(m.obj, int64(m.page)) != pk {
				sh.mu.Unlock()
				return fmt.Errorf("shard %d: slot %d indexed under %x holds another page", i, s, pk)
			}
			used += int64(m.length)
		}
		for _, s := range sh.free {
			seen[s]++
		}
		for _, s := range sh.pending {
			seen[s]++
		}
		polLen := -1
		if sh.pol != nil {
			polLen = sh.pol.Len()
		}
		st, idx, fl := sh.st, len(sh.index), len(sh.flights)
		sh.mu.Unlock()
		if n != c.quota(i) {
			return fmt.Errorf("shard %d owns %d slots, quota %d", i, n, c.quota(i))
		}
		if sh.pol != nil && polLen != idx {
			return fmt.Errorf("shard %d: policy holds %d keys, index %d", i, polLen, idx)
		}
		if st.resident != int64(idx) || st.usedBytes != used {
			return fmt.Errorf("shard %d: counters say %d pages / %d bytes, index %d / %d", i, st.resident, st.usedBytes, idx, used)
		}
		if fl != 0 {
			return fmt.Errorf("shard %d: %d flights left", i, fl)
		}
	}
	if c.ram != nil {
		c.ram.mu.Lock()
		defer c.ram.mu.Unlock()
		for r, d := range c.ram.owner {
			if d == ramFilling {
				return fmt.Errorf("RAM slot %d still being filled", r)
			}
			if d >= 0 && (c.slots[d].ram.Load() != int32(r)+1 || c.slots[d].obj == nil) {
				return fmt.Errorf("RAM slot %d owned by disk slot %d, which does not point back or is free", r, d)
			}
			if p := c.ram.pins[r].Load(); p != 0 {
				return fmt.Errorf("RAM slot %d still pinned %d times", r, p)
			}
		}
		for s := range c.slots {
			if r1 := c.slots[s].ram.Load(); r1 != 0 && c.ram.owner[r1-1] != int32(s) {
				return fmt.Errorf("disk slot %d points to RAM slot %d owned by %d", s, r1-1, c.ram.owner[r1-1])
			}
		}
	}
	for s, n := range seen {
		if n != 1 {
			return fmt.Errorf("slot %d appears %d times", s, n)
		}
		if p := c.slots[s].pins.Load(); p != 0 {
			return fmt.Errorf("slot %d still pinned %d times", s, p)
		}
	}
	return nil
}
