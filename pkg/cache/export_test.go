package cache

// Test-only access to internals, for the external test package.

// Faults injects failures and delays into the disk path of the Cache that
// cfg will build.
type Faults struct {
	Pwrite    func(fd int, p []byte, off int64) (int, error)
	Fallocate func(fd int, off, n int64) error
	AfterData func()
}

// WithFaults returns cfg with f installed.
func WithFaults(cfg Config, f Faults) Config {
	cfg.hooks = &hooks{pwrite: f.Pwrite, fallocate: f.Fallocate, afterData: f.AfterData}
	return cfg
}

// SlotLocation says where page p of obj lives on disk.
type SlotLocation struct {
	Path            string
	HeaderOff, Data int64
}

// Locate returns the disk location of a resident page.
func (c *Cache) Locate(obj Object, p int64) (SlotLocation, bool) {
	c.objects.mu.RLock()
	o := find(c.objects.byURI[obj.URI], obj)
	c.objects.mu.RUnlock()
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
