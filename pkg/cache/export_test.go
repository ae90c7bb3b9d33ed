package cache

import "time"

// Test-only access to internals, for the external test package.

// Faults injects failures and delays into the disk path of the Cache that
// cfg will build.
type Faults struct {
	Pwrite    func(fd int, p []byte, off int64) (int, error)
	Fallocate func(fd int, off, n int64) error
	AfterData func()
	// Clock replaces time.Now for the pauses after a failed write.
	Clock func() time.Time
}

// WithFaults returns cfg with f installed.
func WithFaults(cfg Config, f Faults) Config {
	cfg.hooks = &hooks{pwrite: f.Pwrite, fallocate: f.Fallocate, afterData: f.AfterData, clock: f.Clock}
	return cfg
}

// SlotLocation says where page p of obj lives on disk.
type SlotLocation struct {
	Path            string
	HeaderOff, Data int64
}

// Locate returns the disk location of a resident page.
func (c *Cache) Locate(obj Object, p int64) (SlotLocation, bool) {
	c.objects.mu.Lock()
	o := find(c.objects.byURI[obj.URI], obj)
	c.objects.mu.Unlock()
	if o == nil || c.disk == nil {
		return SlotLocation{}, false
	}
	pk := pageKey(o, p)
	sh := c.shardFor(mix64(pk))
	sh.mu.Lock()
	slot, ok := sh.index[pk]
	sh.mu.Unlock()
	if !ok {
		return SlotLocation{}, false
	}
	sl, j := c.disk.locate(slot)
	return SlotLocation{
		Path:      sl.path,
		HeaderOff: sl.geo.hdrOff + int64(j)*headerSize,
		Data:      sl.geo.dataOff + int64(j)*int64(c.disk.slotSize),
	}, true
}

// NumShards is the number of shards.
func (c *Cache) NumShards() int { return len(c.shards) }

// CheckInvariants verifies the shards' bookkeeping: every slot is in
// exactly one of an index, a free list or a pending list; the policy holds
// what the index holds; the counters match.
func (c *Cache) CheckInvariants() error {
	return c.checkInvariants()
}

// WriteSyntheticPages writes a valid header into every slot of c's slabs,
// naming full pages of objects of perObject pages each (the data stays
// zero; the header's checksum is that of a zero page), as a fast way to
// build a full cache directory for re-index tests. It returns the number of
// pages written. Close c and re-open the directory to re-index them.
func (c *Cache) WriteSyntheticPages(perObject int) (int, error) {
	ps := c.cfg.PageSize
	crc := checksum(make([]byte, ps))
	var seq uint64
	n := 0
	buf := make([]byte, 8192*headerSize)
	for _, sl := range c.disk.slabs {
		total := sl.geo.nslots * headerSize
		for off := 0; off < total; off += len(buf) {
			b := buf[:min(len(buf), total-off)]
			for j := 0; j < len(b)/headerSize; j++ {
				obj, page := n/perObject, n%perObject
				seq++
				encodeHeader(b[j*headerSize:], &pageHeader{
					uri: SyntheticURI(obj), version: "v1", size: int64(perObject * ps),
					page: int64(page), length: uint32(ps), crc: crc, seq: seq,
				})
				n++
			}
			if err := c.disk.pwriteFull(sl.fd, b, sl.geo.hdrOff+int64(off)); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// SyntheticURI names object i of WriteSyntheticPages.
func SyntheticURI(i int) string {
	return "s3://warehouse/db/table/part=" + itoa(i%1000) + "/file-" + itoa(i) + ".parquet"
}

func itoa(i int) string {
	var b [20]byte
	p := len(b)
	for {
		p--
		b[p] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[p:])
		}
	}
}

// StaleHeaderSlots is the length of the shards' lists of released slots
// with a header still on disk.
func (c *Cache) StaleHeaderSlots() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += len(sh.stale)
		sh.mu.Unlock()
	}
	return n
}
