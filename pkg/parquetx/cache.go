package parquetx

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/sync/singleflight"

	"github.com/locuscache/locus/pkg/origin"
)

// FooterKey identifies one version of one object. Footers are immutable
// per version, so entries never need revalidation: a rewrite has a new
// version and so a new key; the old entry ages out.
type FooterKey struct {
	URI     string
	Version string
}

// FooterCacheConfig bounds a FooterCache.
type FooterCacheConfig struct {
	// MaxEntries bounds the number of footers. Default 1024.
	MaxEntries int
	// MaxBytes bounds the sum of the footers' weights (Footer.Weight, an
	// estimate of their memory). Default 64 MiB.
	MaxBytes int64
}

// Defaults for FooterCacheConfig.
const (
	DefaultFooterCacheEntries = 1024
	DefaultFooterCacheBytes   = 64 << 20
)

func (c *FooterCacheConfig) validate() error {
	if c.MaxEntries == 0 {
		c.MaxEntries = DefaultFooterCacheEntries
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultFooterCacheBytes
	}
	if c.MaxEntries < 0 || c.MaxBytes < 0 {
		return fmt.Errorf("parquetx: FooterCacheConfig bounds must be positive (MaxEntries %d, MaxBytes %d)", c.MaxEntries, c.MaxBytes)
	}
	return nil
}

// Weight estimates the heap a parsed footer holds, in bytes: what
// FooterCacheConfig.MaxBytes bounds. arrow-go's parsed Thrift structures
// take about 8 times the serialized footer; the derived layout adds about
// 64 bytes per column chunk. Calibrated against measured heap growth
// (TestFooterWeightMatchesHeap: within a factor of 2 either way).
func (f *Footer) Weight() int64 {
	chunks := 0
	for _, rg := range f.RowGroups {
		chunks += len(rg.Columns)
	}
	return int64(f.MetadataLen)*8 + int64(chunks)*64 + 4096
}

// FooterCacheStats counts FooterCache outcomes.
type FooterCacheStats struct {
	Hits, Misses, Evictions uint64
	Entries                 int
	Bytes                   int64
}

// FooterCache is a small LRU of parsed footers keyed by (URI, version),
// bounded by entry count and by total Weight. Concurrent loads of one key
// share one load. Safe for concurrent use.
type FooterCache struct {
	cfg   FooterCacheConfig
	group singleflight.Group

	mu    sync.Mutex // guards lru and bytes
	lru   *simplelru.LRU[FooterKey, *Footer]
	bytes int64

	hits, misses, evictions atomic.Uint64
}

// NewFooterCache returns an empty cache.
func NewFooterCache(cfg FooterCacheConfig) (*FooterCache, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &FooterCache{cfg: cfg}
	lru, err := simplelru.NewLRU[FooterKey, *Footer](cfg.MaxEntries, func(_ FooterKey, f *Footer) {
		c.bytes -= f.Weight() // called with mu held, from Add/Remove/RemoveOldest
	})
	if err != nil {
		return nil, err
	}
	c.lru = lru
	return c, nil
}

// Get returns the cached footer for k.
func (c *FooterCache) Get(k FooterKey) (*Footer, bool) {
	c.mu.Lock()
	f, ok := c.lru.Get(k)
	c.mu.Unlock()
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	return f, ok
}

// Add caches f under k. A footer heavier than MaxBytes is not cached.
func (c *FooterCache) Add(k FooterKey, f *Footer) {
	w := f.Weight()
	if w > c.cfg.MaxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(k) // a replacement, not an eviction
	if c.lru.Add(k, f) {
		c.evictions.Add(1) // over MaxEntries
	}
	c.bytes += w
	for c.bytes > c.cfg.MaxBytes {
		c.lru.RemoveOldest()
		c.evictions.Add(1)
	}
}

// Remove drops k.
func (c *FooterCache) Remove(k FooterKey) {
	c.mu.Lock()
	c.lru.Remove(k)
	c.mu.Unlock()
}

// GetOrLoad returns the cached footer for k, or calls load once for all
// concurrent callers and caches its result. Errors are not cached.
func (c *FooterCache) GetOrLoad(ctx context.Context, k FooterKey, load func(context.Context) (*Footer, error)) (*Footer, error) {
	if f, ok := c.Get(k); ok {
		return f, nil
	}
	return c.LoadMissed(ctx, k, load)
}

// LoadMissed is GetOrLoad for a caller whose own Get just missed k (and
// counted the miss): it loads without looking k up, and counting, again.
func (c *FooterCache) LoadMissed(ctx context.Context, k FooterKey, load func(context.Context) (*Footer, error)) (*Footer, error) {
	ch := c.group.DoChan(k.URI+"\x00"+k.Version, func() (any, error) {
		c.mu.Lock()
		f, ok := c.lru.Peek(k) // filled while we waited for the flight
		c.mu.Unlock()
		if ok {
			return f, nil
		}
		f, err := load(context.WithoutCancel(ctx))
		if err != nil {
			return nil, err
		}
		c.Add(k, f)
		return f, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*Footer), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Load returns the footer of one object version from the cache, reading it
// from store on a miss.
func (c *FooterCache) Load(ctx context.Context, store origin.Store, info origin.Info) (*Footer, error) {
	if store == nil {
		return nil, errors.New("parquetx: FooterCache.Load needs a store")
	}
	return c.GetOrLoad(ctx, FooterKey{info.URI, info.Version}, func(ctx context.Context) (*Footer, error) {
		return ReadObjectFooter(ctx, store, info)
	})
}

// Stats returns the counters.
func (c *FooterCache) Stats() FooterCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return FooterCacheStats{
		Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evictions.Load(),
		Entries: c.lru.Len(), Bytes: c.bytes,
	}
}

// ReadObjectFooter reads the footer of one version of an origin object.
func ReadObjectFooter(ctx context.Context, store origin.Store, info origin.Info) (*Footer, error) {
	f, err := ReadFooter(origin.NewReaderAt(ctx, store, info), info.Size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", info.URI, err)
	}
	return f, nil
}
