// Package cache is the node-local page cache every Locus cache node runs:
// it serves byte ranges of origin objects (Parquet files on S3) from local
// SSD and RAM, fetching what is missing from an Origin, and says for every
// read how its bytes were served and why each miss happened.
//
// # Pages and keys
//
// Objects are cached in fixed-size pages (Config.PageSize, 1 MiB by
// default). Page i of an object covers bytes [i*PageSize, (i+1)*PageSize);
// the last page may be short. A page is keyed by (URI, Version, Size, page
// index): the caller, which learned the object's size and version from the
// origin's Stat, passes an Object with every read, so a new version never
// sees old bytes. Internally each object is interned to a 32-bit id and a
// page is the 64-bit key id<<32|index; the policy sees a bijective mix of it.
//
// A read of an arbitrary range [off, off+length) is assembled from the pages
// it covers. A range that runs past the end of the object is truncated
// (ReadResult.Bytes says how much was read); a negative offset, a length
// below 1, an overflowing range (ErrInvalidRange) and an offset past the end
// (ErrOutOfRange) are errors, never panics.
//
// # Tiers
//
// The SSD tier (Config.Dir set) is a set of preallocated slab files. Each
// is mapped once, read-only and MAP_SHARED, at start; pages live in
// fixed-size slots and are read straight from the mapping (no copy with
// View, one copy with Get). Pages are written with pwrite, never through
// the mapping, so a full disk is an error, not a SIGBUS. Slab files are
// preallocated with fallocate to exactly Config.CapacityBytes or less,
// headers and superblocks included, each file a whole number of 4 KiB
// blocks (the unit the file system allocates), and a restart with a
// smaller capacity removes the surplus slab files before it preallocates:
// the cache never grows on disk.
//
// With Config.MemoryBytes as well, a RAM tier keeps copies of the hottest
// disk pages: a page read twice since it was written is copied in, and a
// CLOCK hand picks the copy to drop. It is inclusive, so it adds speed, not
// capacity, and dropping a copy costs nothing. Without Config.Dir the cache
// is RAM-only: the same slots, index and policy over MemoryBytes of memory.
//
// # Eviction
//
// The key space is split into shards (Config.Shards) by key hash. Each
// shard owns a fixed quota of slots and runs its own Policy (package
// policy: "locus" by default, "lru") over them, so a shard never holds more
// pages than its quota. Eviction happens only when a fetched page is offered
// to a full shard: the policy returns victims (their slots are freed, and
// reused once no reader pins them) and may refuse the new page (admission).
// Invalidate and a new version drop pages explicitly.
//
// # Reads, misses and the fill path
//
// Get copies a range into a buffer; View calls a function with slices of the
// cache's own memory, valid only during the call (the slot is pinned so
// eviction cannot reuse it); Prefetch only fills. All three plan a window of
// pages at a time (about FetchParallelism x MaxFetchBytes), so a huge range
// is served in bounded memory. For each page, under its shard lock, a read
// finds it resident (a hit: pinned), or finds another read fetching it (it
// waits for that flight), or registers a flight and fetches it itself.
// Registration and the index lookup happen under one lock, so each missing
// page is fetched once however many readers want it at the same time. This
// is singleflight per page; golang.org/x/sync/singleflight is not used
// because its flights are keyed per request, and one request per
// contiguous run of missing pages (the next rule) cannot share a key with an
// overlapping run of another reader.
//
// The pages a read fetches itself are grouped into contiguous runs, each
// fetched with one origin request of at most Config.MaxFetchBytes, up to
// Config.FetchParallelism requests at once. The origin must return exactly
// the bytes the object's size implies (ErrShortRead otherwise) and must
// refuse a changed object with an error wrapping ErrVersionChanged; either
// way nothing from that request is cached and the error is returned.
//
// Each missed page has a MissCause: MissCold (never seen), MissCapacity
// (seen and not kept: evicted, refused by admission, or not stored while
// storing is paused after a failed write, when Stats.Degraded says so;
// remembered by a rotating Bloom filter of Config.HistoryPages entries),
// MissInvalidated (another version of the
// URI was cached, or Invalidate dropped it), MissCorrupt (failed its
// checksum, or dropped for it and not stored again yet). ReadResult and
// Stats count pages and bytes by cause. An object of more than 2^32 pages
// is read straight through (its pages are cold misses, never cached).
// A Prefetch's result counts hits and misses as a read's does, but Stats
// counts its pages apart (PrefetchCachedPages, PrefetchFetchedPages), so
// that HitPages and Misses are the readers': a warm-up is not a read, and
// neither it nor its pages' later hits would otherwise say what the
// readers found. The sizing estimators below see only reads.
//
// Which version of a URI is current is decided by the origin, not by the
// order readers ask: when the origin serves a version, the pages of every
// other version of that URI are dropped; when it refuses one, that one's
// pages are. So a reader with a stale Stat cannot evict the new version.
//
// # Sizing
//
// Stats estimates the hit ratio the cache would have at 0.25x, 0.5x, 2x
// and 4x its page capacity two ways, both fed every page a read asks for
// (once, even when a retry or a refetch plans it again):
// Config.Sizer (a SHARDS estimator, package mrc) gives the LRU curve in
// Stats.Sizing, and Config.PolicySizing runs miniature simulations of the
// cache's own policy (mrc.Mini), anchored at the measured hit ratio, in
// Stats.PolicySizing. The second is the one to size a cache by: the
// default policy's hit ratio is often far from LRU's (scans, loops). After
// a warm restart the miniatures are first filled with the re-indexed pages
// (mrc.Mini.Warm), as the policies are. Neither takes a shard's lock: the
// Sizer has one lock for the cache, taken only for the keys it samples
// when it implements SkipSizer (mrc.Estimator does), and the miniatures
// have their own, taken only for theirs.
//
// # Integrity, crash safety and warm restart
//
// Each slot has a 512-byte header in a packed header area at the front of
// its slab. It names the full key (URI, version, size, page index), the
// data length, the data's CRC-32C, a write sequence number and its own
// CRC-32C (a URI plus version longer than 464 bytes does not fit: such
// pages are served but not cached on disk, Stats.Uncacheable counts them).
// Writing a page zeroes the slot's old header (if it had a valid
// one), writes the data, then writes the header: at any instant a valid
// header describes completely written data. Pages live in the kernel's page
// cache until written back, so a killed process loses nothing it wrote and
// never leaves a torn page that looks complete (TestCrashRecovery kills a
// writer mid-write and checks every byte). No fsync is issued: after a power
// loss a header may survive without its data, which the data checksum
// catches on first read; a page is then refetched, never served wrong.
//
// New re-indexes the slabs from their headers (no separate metadata store):
// it reads the header areas sequentially, keeps the newest copy of each
// page and the most recently written version of each URI, and serves hits
// at once. Data checksums are checked on the first read of each page after
// a restart (Config.Verify = VerifyFirstRead); a page this process wrote is
// trusted, since its checksum was computed from the very buffer written.
// VerifyAlways checks every read. A page that fails is counted, dropped (its
// header zeroed) and refetched. Evicted pages keep their headers until
// their slot is reused, so a restart may bring them back, until an
// invalidation: Invalidate, and the drop of a replaced version, zero the
// headers of the object's pages and of every evicted page still on disk,
// and wait for writes of the object in progress, so that once they
// return no page of it comes back after a restart or a crash.
//
// # Degraded operation
//
// If the disk is too full to preallocate every slab, New keeps the slabs
// that fit and caches on them, or runs with none: then it caches in RAM
// (MemoryBytes, the RAM tier's budget, holds the pages as it does without
// a directory), or with no RAM budget passes every read through to the
// origin. It asks the file system first and stops short of its end: the
// slabs may use the space the slab files already there hold (a warm
// restart on a disk that filled up since keeps them all) and the free
// space less 5% of the file system, at most 1 GiB, so a capacity larger
// than the disk never fills it for the rest of the machine; preallocation
// failing with ENOSPC or EDQUOT (quotas) stops it too. A file system
// without an inode left for the lock file counts as full (no slab), and
// the cache touches nothing in the directory. A sparse slab (a file
// system without fallocate) already there needs its holes from the free
// space, so on a full disk it is dropped with its pages rather than
// allowed to eat the reserve. If a slab write fails later, the cache
// stops storing new pages for a pause (30 s, doubling up to 10 min while
// failures recur) and keeps serving the cached ones and the origin; the
// first store after the pause tries again (pages it did not keep miss
// again as capacity misses). Stats.Degraded and DegradedReason say so
// while it lasts. A cache directory that is a file
// or is not writable is a configuration error (ErrBadDir); one in use by
// another cache is ErrDirLocked.
//
// # Concurrency
//
// Every method of Cache is safe for concurrent use. Each shard has one
// mutex guarding its index, policy, free slots, flights and counters; a hit
// takes it once per page. Object lookup is lock-free (sync.Map). Origin
// calls, checksums and slab writes run outside every lock. Stats sums the
// shards' counters. Close waits for reads in progress (their pins and
// fetches) and for invalidations (their header writes) before unmapping
// the slabs; a View callback must not call Close. A View callback that
// panics releases its pages as the panic unwinds; an Origin that panics
// fails the read with ErrOriginPanic (the panic is logged with its stack),
// so neither leaves a page pinned or a fetch that others wait for.
//
// # Memory
//
// Per page the cache keeps a slot record (40 bytes), an index entry (a Go
// map of uint64 to uint32) and the policy's own entry: about 110-140 bytes
// per page measured (TestIndexMemoryPerPage), 0.013% of a 1 MiB page.
package cache
