package cache

import (
	"fmt"
	"log/slog"

	"golang.org/x/sys/unix"

	"github.com/locuscache/locus/pkg/cache/policy"
)

// Defaults for the zero fields of Config.
const (
	// DefaultPageSize is 1 MiB: large enough that per-page index and policy
	// memory is a rounding error next to the data (about 100 bytes per MiB),
	// small enough that a Parquet column chunk read fetches little it does
	// not need.
	DefaultPageSize = 1 << 20
	// DefaultSlabSize is 1 GiB: a thousand 1 MiB slots per file, so a 1 TiB
	// cache is a thousand files, each mapped once.
	DefaultSlabSize = 1 << 30
	// DefaultMaxFetchBytes bounds one origin request: 8 MiB is where S3 GET
	// throughput levels off, and it bounds the memory one fill holds.
	DefaultMaxFetchBytes = 8 << 20
	// DefaultFetchParallelism is how many origin requests one read keeps in
	// flight for the runs of missing pages it needs.
	DefaultFetchParallelism = 4
	// DefaultPolicy is the policy used when Config.Policy is empty.
	DefaultPolicy = policy.DefaultName

	// MinPageSize is the smallest page size accepted (tests use it to make
	// index cost, which is per page, cheap to measure).
	MinPageSize = 512
	// MaxPageSize is the largest page size accepted.
	MaxPageSize = 64 << 20
	// maxFetchBytes bounds Config.MaxFetchBytes.
	maxFetchBytes = 1 << 30
	// maxShards bounds Config.Shards.
	maxShards = 1024
	// maxFetchParallelism bounds Config.FetchParallelism.
	maxFetchParallelism = 1024
	// maxHistoryPages bounds Config.HistoryPages (about 1.25 bytes each).
	maxHistoryPages = 1 << 30
	// maxSlabs bounds the number of slab files (CapacityBytes / SlabSize).
	maxSlabs = 1 << 16
	// minSlotsPerShard keeps shards from being so small that hash imbalance
	// wastes capacity.
	minSlotsPerShard = 16
)

// Sizer estimates hit ratios at other cache sizes from the stream of page
// keys (the 64-bit keys the policy sees). The cache serialises calls to
// Access and HitRatio under one lock for the whole cache. A Sizer that
// samples keys should also implement SkipSizer, so that the cache takes
// that lock only for the keys it samples.
type Sizer interface {
	Access(key uint64)
	HitRatio(sizePages int) float64
}

// SkipSizer is a Sizer that can record the access to a key it does not
// sample without the cache's lock. Skip must be safe to call from many
// goroutines at once and concurrently with Access and HitRatio; it
// reports whether it recorded the access. When it reports false, the cache
// calls Access under its lock. mrc.Estimator implements it.
type SkipSizer interface {
	Sizer
	Skip(key uint64) bool
}

// VerifyMode says when a cached page's data checksum is checked.
type VerifyMode int

const (
	// VerifyFirstRead checks a page the first time it is read after it was
	// re-indexed from disk at start-up; a page this process wrote itself is
	// trusted (its checksum was computed from the buffer it copied). This
	// is the default: it meets "every page is verified before it is served
	// from disk contents this process did not write" at no steady-state
	// cost.
	VerifyFirstRead VerifyMode = iota
	// VerifyAlways checks the checksum on every read. Reads of 1 MiB pages
	// get about twice as slow; use it where the disk is not trusted.
	VerifyAlways
)

// Config configures a Cache. The zero value of every field but the sizes
// means "use the default"; New validates the Config and fills the defaults.
type Config struct {
	// Origin is where missing pages come from. Required.
	Origin Origin
	// Dir is the cache directory holding the slab files. Empty means a
	// RAM-only cache of MemoryBytes (or CapacityBytes when MemoryBytes is
	// 0). The directory is created if missing; it must be writable and must
	// not be used by another cache at the same time (New takes a lock).
	Dir string
	// CapacityBytes is the disk budget: the slab files (page data, page
	// headers and the per-slab superblock) add up to at most this many
	// bytes. It is a hard limit: files are preallocated at start and never
	// grow. Required when Dir is set.
	CapacityBytes int64
	// MemoryBytes is the RAM budget for page data. With Dir empty it is the
	// cache's whole capacity. With Dir set it sizes a RAM tier that keeps
	// copies of the hottest disk pages (a page read twice since it was
	// written is promoted; the RAM tier evicts with CLOCK). 0 = no RAM tier.
	// At most the machine's memory.
	MemoryBytes int64
	// PageSize is the unit of caching, in bytes: a multiple of 512 between
	// MinPageSize and MaxPageSize. Default DefaultPageSize (1 MiB). A cache
	// directory written with another page size is discarded at start.
	PageSize int
	// SlabSize is the size of one slab file. Default DefaultSlabSize (1 GiB),
	// lowered to CapacityBytes for a smaller cache. CapacityBytes / SlabSize
	// must stay under 65,536 files.
	SlabSize int64
	// Shards is the number of lock shards (rounded down to a power of two,
	// at most 1024). Default 4 per CPU, at most 256. Fewer are used when
	// the cache is so small that a shard would hold fewer than 16 pages.
	Shards int
	// Policy names the admission/eviction policy: "locus" (default) or "lru"
	// (see policy.Names). Each shard runs its own instance.
	Policy string
	// NewPolicy, if set, builds each shard's policy instead of Policy (for
	// tests and experiments). capacity is the shard's page count. With
	// PolicySizing it also builds the miniatures (five more policies, of
	// up to mrc.DefaultMiniBudget pages).
	NewPolicy func(capacity int, seed uint64) (policy.Policy, error)
	// Seed seeds the policies (shard i uses Seed+i). Same seed, same
	// decisions.
	Seed uint64
	// MaxFetchBytes bounds one origin request: a run of missing pages is
	// fetched in requests of at most this many bytes (rounded down to whole
	// pages, at least one page). Default DefaultMaxFetchBytes.
	MaxFetchBytes int64
	// FetchParallelism is how many origin requests one read runs at once.
	// Default DefaultFetchParallelism, at most 1024.
	FetchParallelism int
	// HistoryPages is how many evicted pages the miss classifier remembers
	// (a rotating Bloom filter, about 1.25 bytes per page): a miss on a page
	// in the history is a capacity miss, otherwise a cold one. Default 4x
	// the page capacity, at least 4096; at most 2^30.
	HistoryPages int
	// Verify says when data checksums are checked. Default VerifyFirstRead.
	Verify VerifyMode
	// Sizer, if set, sees every page access and estimates the hit ratio
	// the cache would have at other sizes (a SHARDS estimator such as
	// package mrc's); Stats.Sizing reports it at 0.25x, 0.5x, 2x and 4x
	// the page capacity. Calls are serialised by the cache, one per page
	// read, so keep it sampling. Nil: no estimate.
	Sizer Sizer
	// PolicySizing runs miniature simulations of the cache's own policy
	// (package mrc's Mini: a spatially hashed sample of the page keys
	// replayed through the policy at the sample's share of each size,
	// the largest holding mrc.DefaultMiniBudget keys) and reports them in
	// Stats.PolicySizing at 0.25x, 0.5x, 2x and 4x the page capacity,
	// anchored at the hit ratio the cache measures. Unlike Sizer's LRU
	// curve it models the policy the cache runs: on the shared traces
	// the LRU curve is 0.12 from the default policy's true hit ratio on
	// average, the anchored miniatures 0.013 (BENCHMARKS.md). Cost:
	// on average about 9 ns per page read at a million pages, 220 ns at
	// 16,384, 350 ns at 1,024, and more below that, where the miniatures
	// keep at least 256 keys by sampling more: 670 ns at 512 pages, 1.3 us
	// at 256, 5.4 us at 64 (a sampled read replays through five policies,
	// under a lock of their own); at most about 2 MiB.
	PolicySizing bool
	// Logger receives start-up, degradation and corruption messages.
	// Default slog.Default().
	Logger *slog.Logger

	// hooks lets tests inject failures; nil in production.
	hooks *hooks
}

// validate returns cfg with defaults filled, or an error wrapping
// ErrInvalidConfig.
func (cfg Config) validate() (Config, error) {
	bad := func(format string, a ...any) (Config, error) {
		return cfg, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, a...)...)
	}
	if cfg.CapacityBytes < 0 || cfg.MemoryBytes < 0 || cfg.SlabSize < 0 || cfg.MaxFetchBytes < 0 {
		return bad("sizes must not be negative (capacity %d, memory %d, slab %d, max fetch %d)",
			cfg.CapacityBytes, cfg.MemoryBytes, cfg.SlabSize, cfg.MaxFetchBytes)
	}
	if cfg.Shards < 0 || cfg.FetchParallelism < 0 || cfg.HistoryPages < 0 || cfg.PageSize < 0 {
		return bad("counts must not be negative")
	}
	if cfg.PageSize == 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.PageSize < MinPageSize || cfg.PageSize > MaxPageSize || cfg.PageSize%512 != 0 {
		return bad("page size %d must be a multiple of 512 in [%d, %d]", cfg.PageSize, MinPageSize, MaxPageSize)
	}
	if cfg.Dir == "" {
		if cfg.MemoryBytes == 0 {
			cfg.MemoryBytes = cfg.CapacityBytes
		}
		cfg.CapacityBytes = 0
		if cfg.MemoryBytes < int64(cfg.PageSize) {
			return bad("a RAM-only cache (no Dir) needs MemoryBytes of at least one page (%d), got %d", cfg.PageSize, cfg.MemoryBytes)
		}
	} else if cfg.CapacityBytes <= 0 {
		return bad("CapacityBytes must be set when Dir is set")
	}
	if cfg.SlabSize == 0 {
		cfg.SlabSize = DefaultSlabSize
	}
	if cfg.Dir != "" && cfg.SlabSize > cfg.CapacityBytes {
		cfg.SlabSize = cfg.CapacityBytes
	}
	if cfg.Policy == "" {
		cfg.Policy = DefaultPolicy
	}
	if cfg.NewPolicy == nil {
		if _, err := policy.ByName(cfg.Policy, 1, 0); err != nil {
			return bad("%v", err)
		}
	}
	if cfg.MaxFetchBytes == 0 {
		cfg.MaxFetchBytes = DefaultMaxFetchBytes
	}
	if cfg.MaxFetchBytes > maxFetchBytes {
		return bad("MaxFetchBytes %d above the maximum %d", cfg.MaxFetchBytes, maxFetchBytes)
	}
	cfg.MaxFetchBytes -= cfg.MaxFetchBytes % int64(cfg.PageSize)
	if cfg.MaxFetchBytes < int64(cfg.PageSize) {
		cfg.MaxFetchBytes = int64(cfg.PageSize)
	}
	if cfg.FetchParallelism == 0 {
		cfg.FetchParallelism = DefaultFetchParallelism
	}
	if cfg.FetchParallelism > maxFetchParallelism {
		return bad("FetchParallelism %d above the maximum %d", cfg.FetchParallelism, maxFetchParallelism)
	}
	if cfg.HistoryPages > maxHistoryPages {
		return bad("HistoryPages %d above the maximum %d", cfg.HistoryPages, maxHistoryPages)
	}
	if cfg.Dir != "" {
		if geometryFor(cfg.SlabSize, cfg.PageSize).nslots == 0 {
			least := MinDiskCapacity(cfg.PageSize)
			what := "SlabSize"
			if cfg.SlabSize == cfg.CapacityBytes {
				what = "CapacityBytes"
			}
			return bad("%s %d cannot hold one %d-byte page with its header and the slab's superblock: give at least %d bytes",
				what, cfg.SlabSize, cfg.PageSize, least)
		}
		if n := cfg.CapacityBytes / cfg.SlabSize; n >= maxSlabs {
			return bad("CapacityBytes %d in slabs of %d bytes makes %d slab files, more than %d: raise SlabSize",
				cfg.CapacityBytes, cfg.SlabSize, n, maxSlabs)
		}
	}
	if ram := physicalMemory(); ram > 0 && cfg.MemoryBytes > ram {
		return bad("MemoryBytes %d is more than this machine's memory (%d bytes)", cfg.MemoryBytes, ram)
	}
	if cfg.Shards > maxShards {
		return bad("Shards %d above the maximum %d", cfg.Shards, maxShards)
	}
	if cfg.Verify != VerifyFirstRead && cfg.Verify != VerifyAlways {
		return bad("unknown Verify mode %d", cfg.Verify)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg, nil
}

// physicalMemory is the machine's RAM in bytes, 0 if unknown.
func physicalMemory() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// MinDiskCapacity is the least CapacityBytes (and SlabSize) of a disk cache
// of pageSize-byte pages: one page, its header and a slab's superblock, in
// whole 4 KiB blocks.
func MinDiskCapacity(pageSize int) int64 {
	return roundUp(superSize+roundUp(headerSize, 4096)+int64(slotSizeFor(pageSize)), 4096)
}
