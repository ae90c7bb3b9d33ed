package cache

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
)

// headerRec is one valid page header found at start-up.
type headerRec struct {
	seq    uint64
	slot   uint32
	obj    uint32 // index into the scan's objects
	page   uint32
	length uint32
	crc    uint32
}

type scannedObject struct {
	obj    Object
	maxSeq uint64
}

// loadSlots re-indexes the pages of the slabs that survived from a previous
// run, then hands every other slot to a shard's free list so that each
// shard owns exactly its quota of slots.
//
// Re-indexing reads the packed header area of each slab sequentially,
// keeps valid headers (magic, header checksum, a length that matches the
// object size), resolves conflicts by write sequence (the newest copy of a
// page wins; of two versions of one URI, the one written last wins, the
// other's headers are cleared), and inserts pages into the index and the
// policy oldest first, so an LRU policy starts with write order as recency.
// Data checksums are not read here: each page is verified on its first read.
func (c *Cache) loadSlots() error {
	owned := make([]bool, len(c.slots))
	if c.disk != nil && c.store != nil {
		if err := c.reindex(owned); err != nil {
			return err
		}
	}
	si := 0
	for s := len(c.slots) - 1; s >= 0; s-- {
		if owned[s] {
			continue
		}
		for si < len(c.shards) && len(c.shards[si].index)+len(c.shards[si].free) >= c.quota(si) {
			si++
		}
		if si == len(c.shards) {
			return fmt.Errorf("cache: internal error: slot %d has no shard", s)
		}
		c.shards[si].free = append(c.shards[si].free, uint32(s))
	}
	return nil
}

func (c *Cache) reindex(owned []bool) error {
	recs, objs, err := c.scanHeaders()
	if err != nil {
		return err
	}
	// Of two versions of one URI keep the one written last.
	best := make(map[string]uint32, len(objs))
	for i, so := range objs {
		if b, ok := best[so.obj.URI]; !ok || objs[b].maxSeq < so.maxSeq {
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
	for i, r := range recs {
		maxSeq = max(maxSeq, r.seq)
		dup := i > 0 && recs[i-1].obj == r.obj && recs[i-1].page == r.page
		if dup || best[objs[r.obj].obj.URI] != r.obj {
			c.clearStale(r.slot)
			continue
		}
		keep = append(keep, r)
	}
	recs = keep
	slices.SortFunc(recs, func(a, b headerRec) int { return cmp.Compare(a.seq, b.seq) })
	c.seq.Store(maxSeq)

	interned := make([]*object, len(objs))
	for _, r := range recs {
		o := interned[r.obj]
		if o == nil || o.dead.Load() {
			o, _ = c.objects.lookup(objs[r.obj].obj)
			interned[r.obj] = o
		}
		p := int64(r.page)
		pk := pageKey(o, p)
		k := mix64(pk)
		si := int(k >> c.shardShift)
		sh := &c.shards[si]
		m := &c.slots[r.slot]
		m.flags.Store(flagHeader)
		if len(sh.index)+len(sh.free) >= c.quota(si) {
			continue // this shard is full; the slot goes to another
		}
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
		m.obj, m.page, m.length, m.crc = o, r.page, r.length, r.crc
		sh.index[pk] = r.slot
		sh.st.resident++
		sh.st.usedBytes += int64(r.length)
		owned[r.slot] = true
		c.reindexed++
	}
	return nil
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
	var recs []headerRec
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
				key = append(key[:0], uri...)
				key = append(key, 0)
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
