// Package node is the Locus cache node as a library: it wires a page cache
// (pkg/cache), a seat in the cluster gossip (pkg/membership, whose views
// carry the ring), an origin store (pkg/origin), a gRPC CacheService
// (proto/cache/v1) and an HTTP listener (/metrics, /healthz, /readyz and the
// S3 gateway). Package daemon (pkg/node/daemon) adds the flags, the origin
// built from them, logging and signals; cmd/cachenode is its main. Package
// nodetest starts real nodes for tests, in process or as daemon processes.
//
// # Reading
//
// Read (gRPC ReadRange, the gateway's GETs, Stat's footer reads) follows
// DESIGN.md "Reading":
//
//  1. Stat the object through a StatCache (Config.StatTTL, default 5s): its
//     size and version. A request with ExpectedVersion that the stat cache
//     contradicts asks the origin once more before failing.
//  2. Split [off, end) by block (Config.BlockSize). For block i the
//     preference list is ring.Owners(BlockKey(uri, i), Config.Replication).
//     If this node is in it, or the request is a peer read (Peer: never
//     forwarded again), the pages come from the local cache. On a miss the
//     cache fills from the origin, except on a replica (below). Otherwise
//     the node reads the block through the first reachable node of the
//     list with ReadRange{Peer: true, ExpectedVersion: version}.
//     Consecutive blocks served the same way make one cache read or one
//     peer stream.
//  3. If no node of the list answers (dial failure, UNAVAILABLE, a peer silent for
//     Config.PeerIdleTimeout, a broken stream), the rest of the block comes
//     straight from the origin, uncached here (the pages are not ours),
//     counted as owner_unavailable misses. A peer that fails mid-stream is
//     left at the byte it reached. A peer that could not be reached (or
//     went silent) is skipped for Config.PeerBackoff, so a dead owner costs
//     one failure, not one per block, until the gossip declares it dead; a
//     peer whose handler answered with an error is not skipped. NOT_FOUND,
//     FAILED_PRECONDITION and OUT_OF_RANGE from a peer are about the object
//     and end the read. A ReadRange stream names the version of its bytes
//     in its header metadata ("locus-version"), ahead of the first chunk,
//     and a peer read checks it before using a byte: a peer that ignored
//     ExpectedVersion is refused (ErrPeerVersion) and the read continues
//     elsewhere. A peer that names no version there (an older node) is
//     still checked by its summary, which comes after its bytes: then
//     those bytes cannot be taken back, the read fails with
//     ErrPeerVersion (DATA_LOSS, which pkg/client does not continue from
//     the origin), and a replica's fill drops them (below).
//
// Every piece of one read comes from one version of the object: local
// pages are keyed by version, peers are asked for that version, and origin
// reads carry it (S3 If-Match), so a change shows up as a version-changed
// error, never as bytes of another version. When that happens before the
// first byte reached the caller, the read drops its stat entry and starts
// over once with the new version; after it, the read fails
// (FAILED_PRECONDITION) and the caller starts over. A read whose stat entry
// is still fresh and whose pages are all cached is served from the old
// version, consistently, until the entry expires.
//
// Replication (default 2, DefaultReplication) is part of the cluster's data
// layout, like the block size: the node announces it in its gossip metadata
// and the membership refuses a node whose replication differs from the
// cluster's (the error names the --replication to use). The scheduler takes
// the nodes' value for its preference lists, so a task it counts DATA_LOCAL
// runs on a node of its block's list and reads from that node's own cache.
// With 2, a block is cached on its owner and on the next node of the ring
// once a task reads it there (the second node fills from the owner's
// cache); when the owner is down, a non-member of the list reads through
// the second node (a peer hit) instead of the origin.
//
// Filling a replica. A node at position k > 0 of a block's list (a
// replica) fills its cache misses from the nodes before it in the list, not
// straight from the origin, so that a task placed DATA_LOCAL on a replica
// hits the cluster's cache. The rule, for this node's own reads (client reads, the gateway,
// footer reads, and Prefetch):
//
//   - The cache's fill of the missing pages (whole pages, one request per
//     run of missing pages, as the cache fills) is a peer read,
//     ReadRange{Peer: true, ExpectedVersion: version}, from the earlier
//     nodes of the list in order, owner first, skipping those known down
//     (Config.PeerBackoff) or absent from the view. The owner serves it
//     from its cache and fills its own cache from the origin on a miss, so
//     the origin is read once per page cluster-wide, by the owner.
//   - The pages are then cached here too: the next read on the replica is
//     a local hit.
//   - A node that fails mid-fill is left at the byte it reached and the
//     next earlier node continues; only when none of them can serve does
//     the replica read the rest from the origin itself (owner_unavailable).
//     A peer's answer about the object (version changed, not found, out of
//     range) fails the fill like an origin error would: the version rule
//     above applies, so a replica never caches or mixes bytes of another
//     version. Bytes a peer sent under a summary of another version
//     (ErrPeerVersion) are dropped, and the fill continues from the next
//     node or the origin.
//   - A peer read is served with cache.ViewVerified: every page's checksum
//     is checked whatever Config.CacheVerifyAlways says, since the reader
//     may cache the bytes (a page changed on disk under this process,
//     which the default mode trusts, would outlive its own repair there).
//   - A peer read is served from the receiver's cache, which fills from
//     the origin even when the receiver is a replica: requests from other
//     nodes are never sent on, which keeps fills loop-free whatever the
//     views say. A forwarded Prefetch is the same.
//
// The cache does the fill through its Origin (fillOrigin): a read on a
// replica's blocks puts the list's earlier nodes in the context of its
// cache read, and the adapter fills through them; without them it reads
// the origin. pkg/cache is unchanged.
//
// Prefetch on a replica's blocks therefore warms the replica and, when the
// owner did not hold the pages, the owner too (it fetched them from the
// origin to serve the replica); its FetchedBytes are the bytes the origin
// served (to the owner or to the replica), CachedBytes those found in the
// replica's or the owner's cache. Prefetch on the owner, or forwarded to
// it by a node outside the list, warms the owner only.
//
// # How bytes are counted
//
// The Summary of a read splits its bytes into local hits (this node's
// cache), peer hits (the owner's cache: the owner's local hits) and origin
// bytes (the owner's misses, or this node's, or owner-unavailable reads),
// with miss causes. When a peer stream breaks mid-way, the bytes it had
// delivered count as peer hits.
//
// On a replica the rule is the same, by where the bytes were when the read
// asked for them: a page found in this cache is a local hit; a page this
// cache filled from an earlier node counts as that node's answer said: a
// peer hit if it was in that node's cache (the task stays DATA_LOCAL and
// its bytes hit the cluster's cache), origin bytes with that node's miss
// cause if it fetched them from the origin, and owner_unavailable when the
// replica read the origin itself because no earlier node could serve. The
// cache engine still counts the page as a miss of its own (Stats,
// locus_cache_misses_total{cause}, with its own cause): that is this
// cache's behaviour; the read's summary and locus_cache_bytes_read_total
// say where the bytes came from.
//
// How the read knows: the fill adapter records, for each page it filled
// through the list (from a peer, or from the origin when none could
// serve), where its bytes came from and where in the fill buffer
// the cache holds it (fillLog: the last 4096 to 8192 pages filled, so it
// stays small). The cache serves a missed page to every read that wanted
// it, the one that fetched it and those that waited for the same fetch,
// from that very buffer, and a hit from its own memory; so the read
// recognises a filled page by the address of the slice it is handed, and
// counts it as the fill did, whoever led the fetch. The bytes of a page the
// read took from another fill (from the origin: another node's peer read
// on this replica), or whose record was dropped before the read got to it
// (thousands of fills later), keep the cache's cause. Exact per page when a peer's
// answer covered pages of one kind (all in its cache, or all fetched with
// one cause: the usual case); a peer answer that mixed both spreads its
// totals over its pages in order (hits first), exact in total.
//
// Metrics (prefix locus_, private registry, plus Go and process
// collectors):
//
//	locus_cache_hits_total                      pages served by this node's cache (own reads and peer reads)
//	locus_cache_misses_total{cause}             pages missed: cold, capacity, invalidated, corrupt (this cache), owner_unavailable (this node's readers, read around this cache)
//	locus_cache_prefetch_pages_total{result}    pages prefetches asked this cache for: cached, fetched (not hits or misses:
//	                                     a warm-up is not a read, so the hit ratio above is the readers')
//	locus_cache_bytes_read_total{source}        bytes returned to this node's readers (not peers) by source: local, peer, origin
//	locus_peer_served_bytes_total{source}       bytes served to other nodes' peer reads: local, origin
//	locus_cache_used_bytes, _capacity_bytes     page data cached, and the capacity
//	locus_cache_evictions_total                 pages evicted for space
//	locus_read_duration_seconds{kind}           histogram of reads: client, peer
//	locus_reads_total{kind,code}                reads by outcome as a gRPC code (OK, NotFound, Canceled, ...)
//	locus_origin_requests_total{op,status}      origin calls (stat, read, list) by outcome
//	locus_origin_http_attempts_total{method,code} S3 HTTP attempts (ObserveOriginAttempt)
//	locus_peer_reads_total{result}              peer reads made (forwarded reads, a replica's fills) by outcome
//	locus_cache_estimated_hit_ratio{size_factor,model} hit ratio estimated at other sizes (Config.CacheSizer):
//	                                     model="policy" simulates the cache's own policy (miniature
//	                                     simulation anchored at the measured ratio), model="lru" the
//	                                     LRU curve (SHARDS); read "policy" for sizing decisions
//	locus_cache_sizing_sampled_reads_total      page reads the "policy" estimate replayed (its sample)
//
// and gauges for the node's state (locus_node_ready, locus_node_draining,
// locus_inflight_reads, locus_node_info) and the stat and footer caches.
//
// A client read is one gRPC ReadRange or one S3 gateway GET of an object
// (Node implements gateway.RequestObserver), counted once whatever its
// answer, in locus_reads_total and locus_read_duration_seconds: a GET that
// starts over after a version change is one read, and GETs answered
// without bytes count too, with the code the gRPC path would give: 404
// NoSuchKey/NoSuchBucket NotFound, 412 FailedPrecondition, 416 OutOfRange,
// 400 InvalidArgument, 403 PermissionDenied, a client that went away
// Canceled, a backend failure its error's code; 304 Not Modified, which
// gRPC has no code for, is NotModified. A HEAD is a Stat, not a read.
// The origin calls those answers made (a Stat that found no object)
// count in locus_origin_requests_total as always.
//
// # Serving
//
// The gRPC server registers the CacheService, the standard health service
// (SERVING once Start joined, NOT_SERVING while draining; for "" and
// ServiceName) and reflection. Flow-control windows are 16 MiB per stream
// and per connection on both sides, so a 1 MiB-chunk stream does not stall
// on window updates. Peer connections are pooled, one per address, with
// keepalives, and closed when the member leaves the view.
//
// The bulk path avoids gRPC's copies where the API allows, without changing
// a byte on the wire (Codec, named "proto"):
//
//   - ReadRange sends each chunk (at most MaxChunkSize, 1 MiB) straight from
//     the cache's pinned page: the codec wraps the page in a gRPC buffer and
//     the handler waits until gRPC's writer has copied it into the
//     connection's write buffer before the page is unpinned.
//   - Peer reads decode chunks into RawResponse, whose data are gRPC's
//     receive buffers themselves (referenced, not copied).
//   - gRPC's buffers come from a pool that does not zero them.
//
// What remains is gRPC's own copy into its write buffer, the client's copy
// from its read buffer into frame buffers, and the kernel's. Memory per
// stream is bounded by the cache's read window and the flow-control
// windows, whatever the range's size.
//
// Parquet: Stat recognises Parquet objects (by extension or magic), reads
// their footers through the cluster cache and keeps them parsed in a
// parquetx.FooterCache keyed by (URI, version), and remembers the versions
// whose magic said they are not Parquet or whose footer is not usable
// (corrupt, encrypted: the magic or footer is read once per version); it
// returns row groups and column chunks. Prefetch loads byte
// ranges or the column chunks of row groups into the caches of the blocks'
// lists: a node in the list into its
// own cache (a replica through the owner, see "Filling a replica"), a node
// outside it forwards the part to the first reachable node of the list
// (its Prefetch, marked so it is not forwarded again).
//
// # Lifecycle
//
//	n, err := node.New(cfg)  // opens (re-indexes) the cache, binds the listeners and the gossip port
//	err = n.Start(ctx)       // serves, joins Config.Join, becomes ready
//	...
//	err = n.Stop(ctx)        // Drain, Leave, stop the servers, close the cache (warm on restart)
//
// Drain sets the membership state to draining (schedulers stop placing
// tasks; the node keeps its ring ownership so peers still read through it),
// makes /readyz answer 503 and health NOT_SERVING, and waits up to
// Config.DrainTimeout for the reads in flight. Abort imitates a crash.
//
// Partitions. The gossip declares the members across a network partition
// dead and forgets them after the tuning's GossipToTheDeadTime, after which
// memberlist alone never contacts them again: the halves would stay two
// clusters with two rings after the network heals. The node therefore
// remembers the gossip address of every member that vanished while alive
// (not draining) and joins it again every GossipToTheDeadTime, for up to
// RejoinWindow (rejoin.go); one successful join merges both sides.
// During the partition each side reads the other side's blocks from the
// origin (owner_unavailable) until its ring drops them. TestPartition
// checks all of it with two network namespaces.
//
// # Security
//
// With Config.TLSCertFile and TLSKeyFile both listeners speak TLS; with
// TLSCAFile as well they require client certificates signed by that CA
// (mTLS), and peers are dialed with that CA as the root and this node's
// certificate as the client certificate. Listeners default to 127.0.0.1.
//
// # Threading
//
// All exported methods are safe for concurrent use. Read calls emit on the
// calling goroutine, in offset order; it must not retain the slice. A read
// in flight holds the node open: Stop's drain waits for it.
package node
