package cache

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/locuscache/locus/pkg/cache/policy"
)

// Slot flags (slotMeta.flags).
const (
	flagVerified  = 1 << iota // data checksum checked (or written by us)
	flagHeader                // the slot may hold a valid header on disk
	flagPopulated             // the slot's memory was mapped with populate
	flagFree                  // the slot is in its shard's free or pending list
)

// slotMeta is the in-RAM state of one slot: 40 bytes.
type slotMeta struct {
	// Guarded by the mutex of the shard that owns the slot; stable while
	// the slot is pinned.
	obj    *object // nil when free
	page   uint32
	length uint32
	crc    uint32
	// pins counts readers using the slot's memory. A slot with pins > 0 is
	// never reused. Incremented only under the shard lock (after finding the
	// slot in the index), decremented without it.
	pins  atomic.Int32
	flags atomic.Uint32
	// ram is the RAM tier's copy (its slot plus one; 0 none); see ramTier.
	ram atomic.Int32
	// hits counts reads since the page was written, for promotion to the
	// RAM tier (saturating). Guarded by the shard lock.
	hits uint8
}

// shard owns a part of the key space: its index, its policy, its free slots
// and its flights. Every field but the padding is guarded by mu.
type shard struct {
	mu      sync.Mutex
	index   map[uint64]uint32 // page key -> slot
	pol     policy.Policy     // nil when the cache has no slots (pass-through)
	free    []uint32          // slots ready for reuse
	pending []uint32          // dropped slots still pinned by readers
	// stale lists slots released with a header still valid on disk (an
	// evicted page, or one whose write was revoked): a restart would bring
	// their pages back. clearEvictedHeaders zeroes them before an
	// invalidation returns. An entry whose slot was reused since (no
	// flagFree) is skipped.
	stale   []uint32
	flights map[uint64]*flight
	victims []uint64 // scratch for policy.Insert
	closed  bool
	st      shardStats
	_       [64]byte // keep neighbouring shards' locks off one cache line
}

// shardStats are counted under the shard lock and summed by Stats.
type shardStats struct {
	hitPages, hitBytes int64
	misses             [NumMissCauses]MissCount
	warmCached         int64 // pages a Prefetch found cached (not in hitPages)
	warmFetched        int64 // pages a Prefetch fetched or waited for (not in misses)
	evictions          int64
	rejected           int64
	corrupt            int64
	resident           int64
	usedBytes          int64
}

// flight is one page being fetched. The reader that created it (the
// leader) fetches and stores the page; readers that find it in the shard's
// flights map wait on done. Fields other than done and waiters are written
// by the leader before done is closed and read by waiters after.
type flight struct {
	done    chan struct{}
	obj     *object // whose page it fetches: after 2^32 objects an id, and so a page key, can recur
	waiters int32   // guarded by the shard lock
	revoked bool    // guarded by the shard lock: the policy evicted the key mid-write
	cause   MissCause
	err     error
	gaveUp  bool // err came from the leader's own context (not the origin's)
	data    []byte
	buf     *fetchBuf
}

// fetchBuf is a pooled buffer one origin request reads into. It is shared
// by the flights of the run it holds and returned to the pool when the last
// reader releases it.
type fetchBuf struct {
	b     []byte
	class uint8 // len(b) is 1<<class pages
	refs  atomic.Int32
}

// pageKey packs an object id and a page index: the index key. The policy
// and the shard see mix64(pageKey), which unmix64 inverts.
func pageKey(o *object, p int64) uint64 { return uint64(o.id)<<32 | uint64(uint32(p)) }

func (c *Cache) shardFor(k uint64) *shard { return &c.shards[k>>c.shardShift] }

// alloc returns a free slot. Caller holds sh.mu.
func (c *Cache) alloc(sh *shard) (uint32, bool) {
	if n := len(sh.free); n > 0 {
		s := sh.free[n-1]
		sh.free = sh.free[:n-1]
		c.slots[s].flags.And(^uint32(flagFree))
		return s, true
	}
	for i, s := range sh.pending {
		if c.slots[s].pins.Load() == 0 {
			sh.pending[i] = sh.pending[len(sh.pending)-1]
			sh.pending = sh.pending[:len(sh.pending)-1]
			c.slots[s].flags.And(^uint32(flagFree))
			return s, true
		}
	}
	return 0, false
}

// release puts a slot that holds no indexed page back for reuse: free, or
// pending while readers pin it. A slot whose header may still be valid on
// disk is also listed as stale. Caller holds sh.mu.
func (c *Cache) release(sh *shard, slot uint32) {
	m := &c.slots[slot]
	f := m.flags.Or(flagFree)
	if f&flagHeader != 0 && f&flagFree == 0 {
		sh.stale = append(sh.stale, slot)
		if n := len(sh.stale); n > 64 && n > 2*(len(sh.free)+len(sh.pending)+1) {
			// Most entries were reused since (an evicted slot usually is,
			// at once): keep the list about the size of the free lists.
			sh.stale = slices.DeleteFunc(sh.stale, func(s uint32) bool {
				f := c.slots[s].flags.Load()
				return f&flagFree == 0 || f&flagHeader == 0
			})
		}
	}
	if m.pins.Load() == 0 {
		sh.free = append(sh.free, slot)
	} else {
		sh.pending = append(sh.pending, slot)
	}
}

// clearEvictedHeaders zeroes the headers of the shards' released slots that still
// hold one (evicted pages), so that no page of an invalidated or replaced
// object comes back after a restart: an evicted page's header names its
// object and would be re-indexed. The writes happen under each shard's
// lock, so no slot is reused meanwhile; there are few such slots (an
// evicted slot is usually rewritten at once by the insert that evicted
// it). A failed write degrades the cache, as any failed slab write.
func (c *Cache) clearEvictedHeaders() {
	if c.store == nil || !c.store.durable() {
		return
	}
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		keep := sh.stale[:0]
		for _, slot := range sh.stale {
			m := &c.slots[slot]
			if f := m.flags.Load(); f&flagFree == 0 || f&flagHeader == 0 {
				continue // reused (its writer replaces the header) or cleared
			}
			if err := c.store.clear(slot); err != nil {
				// Still a valid header on disk: a restart would index
				// the page again. Keep the slot to clear next time
				// (the write pause this starts passes first).
				c.writeFailed(err)
				keep = append(keep, slot)
				continue
			}
			m.flags.And(^uint32(flagHeader))
		}
		sh.stale = keep
		sh.mu.Unlock()
	}
}

// unlink removes a resident page from the index (not from the policy) and
// releases its slot. Caller holds sh.mu.
func (c *Cache) unlink(sh *shard, pk uint64, slot uint32) *object {
	m := &c.slots[slot]
	o := m.obj
	delete(sh.index, pk)
	m.obj = nil
	if c.ram != nil {
		c.ram.drop(slot, m)
	}
	o.pages.Add(-1)
	sh.st.resident--
	sh.st.usedBytes -= int64(m.length)
	c.release(sh, slot)
	return o
}

// evict handles a victim the policy chose. Caller holds sh.mu.
func (c *Cache) evict(sh *shard, k uint64) {
	pk := unmix64(k)
	slot, ok := sh.index[pk]
	if !ok {
		// The victim is still being written: its writer will not publish.
		if fl := sh.flights[pk]; fl != nil {
			fl.revoked = true
		}
		return
	}
	page := int64(c.slots[slot].page)
	o := c.unlink(sh, pk, slot)
	c.hist.add(evictedFP(o, page))
	sh.st.evictions++
}

// dropAndClear removes a resident page that must not come back after a
// restart (invalidated or corrupt): it leaves the index and the policy, and
// its header is zeroed before the slot can be reused. Caller holds sh.mu;
// the function releases it and returns with it released.
func (c *Cache) dropAndClear(sh *shard, pk uint64, slot uint32) {
	m := &c.slots[slot]
	m.pins.Add(1) // hold the slot until its header is gone
	sh.pol.Remove(mix64(pk))
	c.unlink(sh, pk, slot)
	sh.mu.Unlock()
	if m.flags.Load()&flagHeader != 0 && c.store != nil {
		if err := c.store.clear(slot); err != nil {
			c.writeFailed(err)
		} else {
			m.flags.And(^uint32(flagHeader))
		}
	}
	m.flags.And(^uint32(flagVerified))
	m.pins.Add(-1)
}

// complete ends a flight: it leaves the map, waiters are woken. Caller
// holds sh.mu.
func completeFlight(sh *shard, pk uint64, fl *flight, data []byte, buf *fetchBuf, err error) {
	if sh.flights[pk] == fl {
		delete(sh.flights, pk)
	}
	fl.data, fl.err = data, err
	if buf != nil && fl.waiters > 0 {
		fl.buf = buf
		buf.refs.Add(fl.waiters)
	}
	close(fl.done)
}
