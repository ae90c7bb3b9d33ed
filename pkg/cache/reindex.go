package cache

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// headerRec is one valid page header found at start-up.
type headerRec struct {
	seq    uint64
	slot   uint32
	obj    uint32 // index into the scan's objects
	page   uint32
	length uint32
	crc    uint32
	shard  uint32
}

type scannedObject struct {
	obj    Object
	maxSeq uint64
}

// loadSlots re-indexes the pages of the slabs that survived from a previous
// run, sets each shard's quota and policy, and hands every other slot to a
// shard's free list so that each shard owns exactly its quota.
//
// Re-indexing reads the packed header area of each slab sequentially,
// keeps valid headers (magic, header checksum, a length that matches the
// object size), resolves conflicts by write sequence (the newest copy of a
// page wins; of two versions of one URI, the one written last wins, the
// other's headers are cleared), and inserts pages into the index and the
// policy oldest first, so an LRU policy starts with write order as recency.
// Data checksums are not read here: each page is verified on its first
// read.
//
// Object ids are handed out afresh, so a page may hash to another shard
// than before the restart. Quotas follow: a shard gets at least the pages
// that hash to it, the rest is spread to even the shards out.
func (c *Cache) loadSlots() error {
	var recs []headerRec
	var objs []*object
	if c.disk != nil && c.store != nil {
		var err error
		if recs, objs, err = c.scan(); err != nil {
			return err
		}
	}
	if c.mini != nil { // its miniatures start from what the cache holds, as its policies do
		for _, r := range recs {
			c.mini.Warm(mix64(pageKey(objs[r.obj], int64(r.page))))
		}
	}
	ns, n := len(c.shards), len(c.slots)
	need := make([]int, ns)
	for _, r := range recs {
		need[r.shard]++
	}
	spare := n
	for i := range need {
		c.quotas[i] = need[i]
		spare -= need[i]
	}
	even := n / ns
	for i := range c.quotas {
		add := min(spare, max(0, even-c.quotas[i]))
		c.quotas[i] += add
		spare -= add
	}
	for i := 0; spare > 0; i = (i + 1) % ns {
		c.quotas[i]++
		spare--
	}
	for i := range c.shards {
		sh := &c.shards[i]
		if c.quotas[i] == 0 {
			continue
		}
		var err error
		if sh.pol, err = c.newPolicy(i); err != nil {
			return err
		}
		sh.index = make(map[uint64]uint32, c.quotas[i])
		sh.free = make([]uint32, 0, c.quotas[i]-need[i])
	}

	// Shards are independent: insert each shard's pages (in write order)
	// on its own goroutine. Workers write distinct elements of owned.
	owned := make([]bool, n)
	byShard := make([][]headerRec, ns)
	for _, r := range recs {
		byShard[r.shard] = append(byShard[r.shard], r)
	}
	counts := make([]int64, ns)
	var wg sync.WaitGroup
	var next atomic.Int32
	for range min(runtime.GOMAXPROCS(0), ns) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < ns; i = int(next.Add(1)) - 1 {
				counts[i] = c.insertReindexed(&c.shards[i], byShard[i], objs, owned)
			}
		}()
	}
	wg.Wait()
	for _, k := range counts {
		c.reindexed += k
	}
	for i := range c.shards { // slots freed by evictions above
		for _, s := range c.shards[i].free {
			owned[s] = true
		}
	}
	si := 0
	for s := n - 1; s >= 0; s-- {
		if owned[s] {
			continue
		}
		for si < ns && len(c.shards[si].index)+len(c.shards[si].free) >= c.quotas[si] {
			si++
		}
		if si == ns {
			return fmt.Errorf("cache: internal error: slot %d has no shard", s)
		}
		c.release(&c.shards[si], uint32(s)) // a header that lost its conflict stays stale
	}
	return nil
}

// insertReindexed adds one shard's re-indexed pages, oldest first, and
// returns how many it kept.
func (c *Cache) insertReindexed(sh *shard, recs []headerRec, objs []*object, owned []bool) int64 {
	var n int64
	for _, r := range recs {
		o := objs[r.obj]
		pk := pageKey(o, int64(r.page))
		k := mix64(pk)
		m := &c.slots[r.slot]
		m.flags.Store(flagHeader)
		var ok bool
		sh.victims, ok = sh.pol.Insert(k, sh.victims[:0])
		for _, v := range sh.victims {
			if v != k {
				c.evict(sh, v)
			}
		}
		if !ok {
			continue
		}
		o.pages.Add(1)
		o.stored.Store(true)
		m.obj, m.page, m.length, m.crc = o, r.page, r.length, r.crc
		sh.index[pk] = r.slot
		sh.st.resident++
		sh.st.usedBytes += int64(r.length)
		owned[r.slot] = true
		n++
	}
	return n
}

// scan reads the headers, resolves conflicts, interns the objects and
// returns the surviving pages oldest first, each with its shard.
func (c *Cache) scan() ([]headerRec, []*object, error) {
	recs, scanned, err := c.scanHeaders()
	if err != nil {
		return nil, nil, err
	}
	// Of two versions of one URI keep the one written last.
	best := make(map[string]uint32, len(scanned))
	for i, so := range scanned {
		if b, ok := best[so.obj.URI]; !ok || scanned[b].maxSeq < so.maxSeq {
			best[so.obj.URI] = uint32(i)
		}
	}
	// Of two copies of one page keep the newest.
	slices.SortFunc(recs, func(a, b headerRec) int {
		if c := cmp.Compare(a.obj, b.obj); c != 0 {
			return c
		}
		if c := cmp.Compare(a.page, b.page); c != 0 {
			return c
		}
		return cmp.Compare(b.seq, a.seq)
	})
	keep := recs[:0]
	var maxSeq uint64
	objs := make([]*object, len(scanned))
	for i, r := range recs {
		maxSeq = max(maxSeq, r.seq)
		dup := i > 0 && recs[i-1].obj == r.obj && recs[i-1].page == r.page
		if dup || best[scanned[r.obj].obj.URI] != r.obj {
			c.clearStale(r.slot)
			continue
		}
		o := objs[r.obj]
		if o == nil {
			o = c.objects.intern(scanned[r.obj].obj)
			objs[r.obj] = o
		}
		r.shard = uint32(mix64(pageKey(o, int64(r.page))) >> c.shardShift)
		keep = append(keep, r)
	}
	c.seq.Store(maxSeq)
	slices.SortFunc(keep, func(a, b headerRec) int { return cmp.Compare(a.seq, b.seq) })
	return keep, objs, nil
}

// clearStale zeroes the header of a slot whose page lost a conflict.
func (c *Cache) clearStale(slot uint32) {
	if err := c.store.clear(slot); err != nil {
		c.slots[slot].flags.Store(flagHeader)
		c.writeFailed(err)
	}
}

// scanHeaders reads the header areas of the re-used slabs.
func (c *Cache) scanHeaders() ([]headerRec, []scannedObject, error) {
	ps := c.cfg.PageSize
	buf := make([]byte, 1024*headerSize)
	reused := 0
	for _, sl := range c.disk.slabs {
		if sl.reused {
			reused += sl.geo.nslots
		}
	}
	recs := make([]headerRec, 0, reused)
	var objs []scannedObject
	index := make(map[string]uint32)
	var key []byte
	base := 0
	for _, sl := range c.disk.slabs {
		if !sl.reused {
			base += sl.geo.nslots
			continue
		}
		total := sl.geo.nslots * headerSize
		for off := 0; off < total; off += len(buf) {
			b := buf[:min(len(buf), total-off)]
			if _, err := sl.f.ReadAt(b, sl.geo.hdrOff+int64(off)); err != nil {
				return nil, nil, fmt.Errorf("cannot read headers of %q: %w", sl.path, err)
			}
			for j := 0; j < len(b)/headerSize; j++ {
				h, uri, ver, ok := decodeHeader(b[j*headerSize:(j+1)*headerSize], ps)
				if !ok {
					continue
				}
				// The URI's length first: ("a\x00b", "") and ("a", "b\x00")
				// are two objects.
				key = binary.AppendUvarint(key[:0], uint64(len(uri)))
				key = append(key, uri...)
				key = append(key, ver...)
				key = binary.LittleEndian.AppendUint64(key, uint64(h.size))
				oi, found := index[string(key)]
				if !found {
					oi = uint32(len(objs))
					objs = append(objs, scannedObject{obj: Object{URI: string(uri), Version: string(ver), Size: h.size}})
					index[string(key)] = oi
				}
				objs[oi].maxSeq = max(objs[oi].maxSeq, h.seq)
				recs = append(recs, headerRec{
					seq: h.seq, slot: uint32(base + off/headerSize + j), obj: oi,
					page: uint32(h.page), length: h.length, crc: h.crc,
				})
			}
		}
		base += sl.geo.nslots
	}
	return recs, objs, nil
}
