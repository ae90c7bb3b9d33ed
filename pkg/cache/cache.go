package cache

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locuscache/locus/pkg/cache/mrc"
	"github.com/locuscache/locus/pkg/cache/policy"
)

// maxBufClasses is the number of fetch buffer pools (runs of 1, 2, 4, ...
// pages).
const maxBufClasses = 32

// Cache is a node-local page cache. All methods are safe for concurrent
// use. See the package documentation for the design.
type Cache struct {
	cfg          Config
	origin       Origin
	objects      *objectTable
	shards       []shard
	shardShift   uint
	quotas       []int // slots each shard owns (its policy's capacity)
	slots        []slotMeta
	store        store      // nil: no slots, reads pass through
	disk         *diskStore // the SSD tier, when Dir is set
	ram          *ramTier   // hot copies of disk pages, when Dir and MemoryBytes are set
	hist         *history
	window       int        // pages a read plans at once
	sizerMu      sync.Mutex // serialises cfg.Sizer, but for skipSizer.Skip
	skipSizer    SkipSizer  // cfg.Sizer, when it implements SkipSizer
	miniMu       sync.Mutex // serialises mini (taken only for its sampled keys)
	mini         *mrc.Mini  // Config.PolicySizing's miniatures; nil without
	verifyAlways bool

	maxFetchPages int
	states        sync.Pool // *readState
	bufs          [maxBufClasses]sync.Pool

	// closed is set first by Close; each shard has its own flag, checked
	// under the shard lock, so reads share no lock of their own.
	closed  atomic.Bool
	closeMu sync.Mutex // serialises Close
	// drops counts invalidations in progress (Invalidate, dropObject):
	// they write headers, so Close waits for them before it closes the
	// store, and they give up (ErrClosed) once closed is set.
	drops atomic.Int32

	seq atomic.Uint64 // last page write sequence number
	// startReason says why the cache runs below its configuration from
	// New on (slabs that did not fit, no room for the lock file); nil if
	// it does not. Set before New returns, read-only after.
	startReason *string
	// A failed slab write pauses storing new pages: pausedUntil is the
	// pause's end, in nanoseconds on the cache's clock (since epoch; 0: no
	// pause), pauseReason says why. The next store after the end tries
	// again.
	epoch          time.Time
	pausedUntil    atomic.Int64
	pauseReason    atomic.Pointer[string]
	pauseMu        sync.Mutex    // serialises writeFailed; guards the two fields below
	lastPause      time.Duration // the last pause's length (0: none yet)
	lastEnd        int64         // the last pause's end, on the cache's clock
	originRequests atomic.Int64
	originBytes    atomic.Int64
	originErrors   atomic.Int64
	writeErrors    atomic.Int64
	uncacheable    atomic.Int64
	// Cold misses of objects too large to read through flights
	// (readThrough), which no shard counts.
	throughPages, throughBytes atomic.Int64
	invalidatedPages           atomic.Int64

	reindexed   int64
	reindexTime time.Duration
	// diskBytes is the size of the slab files, fixed at New. Stats reads
	// it, not the disk store's slab list, which Close clears while Stats
	// may be running.
	diskBytes int64
}

// New opens a cache. With Config.Dir set it creates or re-opens the slab
// files there and re-indexes the pages they hold (a warm restart: the
// cache serves them at once). If the disk is too full to preallocate the
// slabs, New still succeeds: the cache uses the slabs that fit, or passes
// reads through to the origin, and says so in Stats.Degraded.
//
// Errors: ErrInvalidConfig (also for a nil Origin), ErrBadDir,
// ErrDirLocked, and I/O errors opening the slab files.
func New(cfg Config) (*Cache, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if cfg.Origin == nil {
		return nil, fmt.Errorf("%w: Origin is nil", ErrInvalidConfig)
	}
	c := &Cache{
		cfg:           cfg,
		origin:        cfg.Origin,
		objects:       newObjectTable(cfg.PageSize, maxKeyBytes),
		verifyAlways:  cfg.Verify == VerifyAlways,
		maxFetchPages: int(cfg.MaxFetchBytes / int64(cfg.PageSize)),
	}
	c.window = c.maxFetchPages * cfg.FetchParallelism
	c.epoch = cfg.hooks.now()
	c.states.New = func() any { return &readState{} }
	if cfg.Dir != "" {
		ds, reason, err := openDiskStore(cfg.Dir, cfg.CapacityBytes, cfg.SlabSize, cfg.PageSize, cfg.hooks, cfg.Logger)
		if err != nil {
			return nil, err
		}
		c.disk = ds
		c.diskBytes = ds.diskBytes()
		ramPages := int(cfg.MemoryBytes / int64(cfg.PageSize))
		switch {
		case ds.nslots() > 0:
			c.store = ds
			if ramPages > 0 {
				c.ram = newRAMTier(ramPages, cfg.PageSize)
			}
		case ramPages > 0:
			// No slab fits (a full disk): the RAM budget caches pages
			// rather than nothing, as a cache without a directory does.
			c.store = newMemStore(ramPages, cfg.PageSize)
			c.objects.maxKey = math.MaxInt // no page headers in RAM
			reason = strings.TrimPrefix(reason+fmt.Sprintf("; caching %d pages in RAM (MemoryBytes) instead", ramPages), "; ")
		}
		if reason != "" {
			c.startReason = &reason
		}
	} else {
		c.store = newMemStore(int(cfg.MemoryBytes/int64(cfg.PageSize)), cfg.PageSize)
		c.objects.maxKey = math.MaxInt // no page headers in RAM
	}
	nslots := 0
	if c.store != nil {
		nslots = c.store.nslots()
	}
	c.makeShards(nslots)
	hp := cfg.HistoryPages
	if hp == 0 {
		hp = max(4*nslots, 4096)
	}
	c.hist = newHistory(hp)
	c.skipSizer, _ = cfg.Sizer.(SkipSizer)
	if cfg.PolicySizing && nslots > 0 {
		if c.mini, err = c.newMini(nslots); err != nil {
			c.closeStores()
			return nil, err
		}
	}
	start := time.Now()
	if err := c.loadSlots(); err != nil {
		c.closeStores()
		return nil, err
	}
	c.reindexTime = time.Since(start)
	if c.reindexed > 0 {
		cfg.Logger.Info("cache: warm restart", "dir", cfg.Dir, "pages", c.reindexed, "took", c.reindexTime)
	}
	return c, nil
}

// makeShards creates the shards (their policies come in loadSlots, once
// the quotas are known).
func (c *Cache) makeShards(nslots int) {
	n := c.cfg.Shards
	if n == 0 {
		n = min(4*runtime.GOMAXPROCS(0), 256)
	}
	n = min(n, max(1, nslots/minSlotsPerShard))
	n = 1 << (bits.Len(uint(n)) - 1) // round down to a power of two
	c.shardShift = uint(64 - bits.TrailingZeros(uint(n)))
	c.shards = make([]shard, n)
	c.slots = make([]slotMeta, nslots)
	c.quotas = make([]int, n)
	for i := range c.shards {
		c.shards[i].flights = make(map[uint64]*flight)
	}
}

// newPolicy builds shard i's policy for its quota.
func (c *Cache) newPolicy(i int) (policy.Policy, error) {
	var p policy.Policy
	var err error
	seed := c.cfg.Seed + uint64(i)
	if c.cfg.NewPolicy != nil {
		p, err = c.cfg.NewPolicy(c.quotas[i], seed)
	} else {
		p, err = policy.ByName(c.cfg.Policy, c.quotas[i], seed)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: policy for shard %d: %w", ErrInvalidConfig, i, err)
	}
	return p, nil
}

// newMini builds the miniature simulations of the cache's policy for
// Config.PolicySizing, at nslots pages.
func (c *Cache) newMini(nslots int) (*mrc.Mini, error) {
	seed := c.cfg.Seed ^ 0x6d696e69 // not a shard's seed
	m, err := mrc.NewMini(mrc.MiniConfig{
		Capacity: nslots,
		Factors:  sizingFactors,
		Seed:     seed,
		New: func(capacity int) (mrc.Sim, error) {
			if c.cfg.NewPolicy != nil {
				return c.cfg.NewPolicy(capacity, seed)
			}
			return policy.ByName(c.cfg.Policy, capacity, seed)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: policy sizing: %w", ErrInvalidConfig, err)
	}
	return m, nil
}

// quota is how many slots shard i owns: its policy's capacity.
func (c *Cache) quota(i int) int { return c.quotas[i] }

// Pauses in storing new pages after a failed slab write: the first, and
// the longest.
const (
	minStorePause = 30 * time.Second
	maxStorePause = 10 * time.Minute
)

// now is the cache's clock: nanoseconds since New, monotonic (the hooks'
// clock in tests).
func (c *Cache) now() int64 { return int64(c.cfg.hooks.now().Sub(c.epoch)) }

// writeFailed counts a failed slab write and pauses storing new pages
// (reads of cached pages and pass-through reads go on), so that a disk
// that is full or failing for a while is used again without a restart: 30
// s after a first failure, twice the last pause after a failure within 10
// min of the last pause's end (writes that succeed in between, as into
// the allocated part of a sparse slab, do not reset it), at most 10 min.
func (c *Cache) writeFailed(err error) {
	c.writeErrors.Add(1)
	c.pauseMu.Lock()
	defer c.pauseMu.Unlock()
	now := c.now()
	if until := c.pausedUntil.Load(); until != 0 && now < until {
		return // a write that began before the pause
	}
	pause := minStorePause
	if c.lastPause > 0 && now-c.lastEnd <= int64(maxStorePause) {
		pause = min(2*c.lastPause, maxStorePause)
	}
	c.lastPause, c.lastEnd = pause, now+int64(pause)
	reason := fmt.Sprintf("slab write failed, no new pages are cached for %s: %v", pause, err)
	c.pauseReason.Store(&reason)
	c.pausedUntil.Store(now + int64(pause))
	c.cfg.Logger.Error("cache degraded to pass-through for new pages", "dir", c.cfg.Dir, "err", err, "retry_in", pause)
}

// paused says whether a pause after a failed write is running (new pages
// are not stored).
func (c *Cache) paused() bool {
	until := c.pausedUntil.Load()
	return until != 0 && c.now() < until
}

// writeSucceeded notes that storing works again after a pause.
func (c *Cache) writeSucceeded() {
	if c.pausedUntil.Load() == 0 {
		return
	}
	c.pauseMu.Lock()
	defer c.pauseMu.Unlock()
	if until := c.pausedUntil.Load(); until == 0 || c.now() < until {
		return // already noted, or a write that began before a new pause
	}
	c.pausedUntil.Store(0)
	c.cfg.Logger.Info("cache stores new pages again: a slab write succeeded", "dir", c.cfg.Dir)
}

// degradedReason says why the cache runs below its configuration now ("":
// it does not): its start, and a pause that is running.
func (c *Cache) degradedReason() string {
	var rs []string
	if c.startReason != nil {
		rs = append(rs, *c.startReason)
	}
	if r := c.pauseReason.Load(); r != nil && c.paused() {
		rs = append(rs, *r)
	}
	return strings.Join(rs, "; ")
}

// Invalidate drops every cached page of uri, whatever its version, so the
// next read of it goes to the origin (miss cause MissInvalidated). Their
// headers are cleared on disk: they do not come back after a restart. It
// returns the number of pages dropped, and ErrClosed if the cache is (or
// was meanwhile) closed, in which case pages of uri may come back after a
// restart.
func (c *Cache) Invalidate(uri string) (int, error) {
	if !c.enterDrop() {
		return 0, ErrClosed
	}
	defer c.drops.Add(-1)
	n := 0
	for _, o := range c.objects.remove(uri) {
		n += c.drop(o)
	}
	// Evicted pages keep valid headers until an invalidation clears them,
	// also those of a uri the object table has since forgotten (it
	// forgets objects with no resident page), for which there was nothing
	// to drop above.
	c.clearEvictedHeaders()
	return n, nil
}

// enterDrop registers an invalidation in progress (the caller then calls
// c.drops.Add(-1)), or reports false if the cache is closed. Close sets
// closed before it waits for drops to reach zero, so an invalidation that
// entered finishes its header writes before the store closes.
func (c *Cache) enterDrop() bool {
	c.drops.Add(1)
	if c.closed.Load() {
		c.drops.Add(-1)
		return false
	}
	return true
}

// Close waits for reads in progress to finish (their pinned pages and
// their fetches), then releases the slab files and the directory lock.
// Reads that start later, and reads in progress when they reach their next
// page, return ErrClosed. Pages stay on disk for the next New. Close is
// idempotent. A View callback must not call Close (it would wait for
// itself).
func (c *Cache) Close() error {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed.Load() {
		return nil
	}
	c.closed.Store(true)
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		sh.closed = true
		sh.mu.Unlock()
	}
	for c.drops.Load() != 0 || !c.quiet() {
		time.Sleep(time.Millisecond)
	}
	return c.closeStores()
}

// quiet reports whether no read holds a page or a fetch.
func (c *Cache) quiet() bool {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n := len(sh.flights)
		sh.mu.Unlock()
		if n > 0 {
			return false
		}
	}
	for i := range c.slots {
		if c.slots[i].pins.Load() != 0 {
			return false
		}
	}
	if c.ram != nil {
		for i := range c.ram.pins {
			if c.ram.pins[i].Load() != 0 {
				return false
			}
		}
	}
	return true
}

func (c *Cache) closeStores() error {
	var err error
	if c.disk != nil {
		err = c.disk.close()
	} else if c.store != nil {
		err = c.store.close()
	}
	return err
}
