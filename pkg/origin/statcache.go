package origin

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/sync/singleflight"
)

// StatCacheConfig configures a StatCache.
type StatCacheConfig struct {
	// TTL is how long a Stat answer is trusted. After it expires the next
	// Stat asks the store again (revalidation). A rewrite becomes visible
	// within TTL; reads never mix versions regardless, because ReadAt
	// carries the version. Default 5s.
	TTL time.Duration
	// MaxEntries bounds the cache; the least recently used entry goes
	// first. Default 65536 (a few MiB).
	MaxEntries int
	// Now is the clock. Default time.Now; tests inject a fake.
	Now func() time.Time
}

// Defaults for StatCacheConfig.
const (
	DefaultStatTTL        = 5 * time.Second
	DefaultStatMaxEntries = 1 << 16
)

func (c *StatCacheConfig) validate() error {
	if c.TTL == 0 {
		c.TTL = DefaultStatTTL
	}
	if c.MaxEntries == 0 {
		c.MaxEntries = DefaultStatMaxEntries
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.TTL < 0 {
		return fmt.Errorf("origin: StatCacheConfig.TTL = %s; want > 0", c.TTL)
	}
	if c.MaxEntries < 0 {
		return fmt.Errorf("origin: StatCacheConfig.MaxEntries = %d; want > 0", c.MaxEntries)
	}
	return nil
}

// StatCacheStats counts StatCache outcomes since creation.
type StatCacheStats struct {
	Hits          uint64 // answered from a fresh entry
	Misses        uint64 // no entry: asked the store
	Revalidations uint64 // entry expired: asked the store again
	Changed       uint64 // a revalidation or a read found a new version
	Entries       int    // entries held now
}

// StatCache is a Store that remembers Stat answers for a short TTL, so a
// burst of reads of one object costs one HEAD instead of one per read.
// ReadAt and List pass through, with two side effects: a ReadAt failing
// with ErrVersionChanged drops the entry (the next Stat sees the new
// version), and List refreshes the entries of the objects it lists.
// Concurrent Stats of one URI that miss share one store call. Errors are
// not cached. Safe for concurrent use.
type StatCache struct {
	store Store
	cfg   StatCacheConfig
	group singleflight.Group

	mu     sync.Mutex                        // guards lru and stores
	lru    *simplelru.LRU[string, statEntry] // uri → entry
	stores uint64                            // entries stored so far; an entry's seq is the count when it was stored

	// gens counts invalidations per stripe of URIs (maphash of the URI).
	// A Stat flight is keyed by its URI and stripe generation and stores
	// its answer only if the generation did not move meanwhile: a Stat
	// after an Invalidate neither joins a store call that began before it
	// nor finds that call's (possibly old) answer cached.
	gens [64]atomic.Uint64
	seed maphash.Seed

	hits, misses, revalidations, changed atomic.Uint64
}

type statEntry struct {
	info    Info
	expires time.Time
	seq     uint64 // StatCache.stores when stored: a listing replaces only entries older than itself
}

// NewStatCache wraps store.
func NewStatCache(store Store, cfg StatCacheConfig) (*StatCache, error) {
	if store == nil {
		return nil, errors.New("origin: NewStatCache needs a store")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	lru, err := simplelru.NewLRU[string, statEntry](cfg.MaxEntries, nil)
	if err != nil {
		return nil, err
	}
	return &StatCache{store: store, cfg: cfg, lru: lru, seed: maphash.MakeSeed()}, nil
}

// gen is the invalidation counter of uri's stripe.
func (c *StatCache) gen(uri string) *atomic.Uint64 { return &c.gens[c.stripe(uri)] }

// stripe is the index of uri's stripe in gens.
func (c *StatCache) stripe(uri string) int {
	return int(maphash.String(c.seed, uri) % uint64(len(c.gens)))
}

// Stat implements Store.
func (c *StatCache) Stat(ctx context.Context, uri string) (Info, error) {
	now := c.cfg.Now()
	c.mu.Lock()
	e, ok := c.lru.Get(uri)
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		c.hits.Add(1)
		return e.info, nil
	}
	if ok {
		c.revalidations.Add(1)
	} else {
		c.misses.Add(1)
	}
	g := c.gen(uri).Load()
	ch := c.group.DoChan(uri+"\x00"+strconv.FormatUint(g, 10), func() (any, error) {
		// Detached from the first caller's cancellation so that one
		// caller giving up does not fail the others; the store's own
		// timeout still bounds the call.
		info, err := c.store.Stat(context.WithoutCancel(ctx), uri)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				c.Invalidate(uri)
			}
			return Info{}, err
		}
		c.putIf(uri, info, g, math.MaxUint64)
		return info, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return Info{}, r.Err
		}
		info := r.Val.(Info)
		if ok && info.Version != e.info.Version {
			c.changed.Add(1)
		}
		return info, nil
	case <-ctx.Done():
		return Info{}, ctx.Err()
	}
}

func (c *StatCache) put(uri string, info Info) {
	c.putIf(uri, info, c.gen(uri).Load(), math.MaxUint64)
}

// putIf caches info unless uri's stripe was invalidated since generation
// g, or uri has an entry stored after the first before stores (a
// listing's answer, read before that entry's Stat, must not replace it).
func (c *StatCache) putIf(uri string, info Info, g, before uint64) {
	if info.Version == "" {
		// No version (a listing entry of an object the store gave no
		// ETag): a Stat must ask the store, which refuses it
		// (ErrNoVersion), rather than serve bytes no rewrite could be
		// told from.
		return
	}
	expires := c.cfg.Now().Add(c.cfg.TTL)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen(uri).Load() != g {
		return
	}
	if e, ok := c.lru.Peek(uri); ok && e.seq >= before {
		return
	}
	c.lru.Add(uri, statEntry{info: info, expires: expires, seq: c.stores})
	c.stores++
}

// Invalidate drops the entry for uri; a Stat of uri already in flight will
// not cache its answer.
func (c *StatCache) Invalidate(uri string) {
	c.mu.Lock()
	c.gen(uri).Add(1)
	c.lru.Remove(uri)
	c.mu.Unlock()
}

// ReadAt implements Store.
func (c *StatCache) ReadAt(ctx context.Context, uri, version string, p []byte, off int64) (int, error) {
	n, err := c.store.ReadAt(ctx, uri, version, p, off)
	if err != nil && (errors.Is(err, ErrVersionChanged) || errors.Is(err, ErrNotFound)) {
		c.Invalidate(uri)
		if errors.Is(err, ErrVersionChanged) {
			c.changed.Add(1)
		}
	}
	return n, err
}

// List implements Store. It caches each entry listed unless its URI's
// stripe was invalidated after the listing began (the store may have read
// that entry before the invalidation), or its URI was stored after the
// listing began (a Stat that saw a newer version while the listing walked
// its pages: the listing's answer may be older, and would roll the entry
// back to it for a whole TTL).
func (c *StatCache) List(ctx context.Context, prefix string, fn func(Info) error) error {
	var start [len(c.gens)]uint64
	for i := range c.gens {
		start[i] = c.gens[i].Load()
	}
	c.mu.Lock()
	before := c.stores
	c.mu.Unlock()
	return c.store.List(ctx, prefix, func(info Info) error {
		c.putIf(info.URI, info, start[c.stripe(info.URI)], before)
		return fn(info)
	})
}

// Stats returns the counters.
func (c *StatCache) Stats() StatCacheStats {
	c.mu.Lock()
	n := c.lru.Len()
	c.mu.Unlock()
	return StatCacheStats{
		Hits:          c.hits.Load(),
		Misses:        c.misses.Load(),
		Revalidations: c.revalidations.Load(),
		Changed:       c.changed.Load(),
		Entries:       n,
	}
}
