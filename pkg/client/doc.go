// Package client is the Go client an executor uses to read through Locus.
//
// A task placed on cache node N reads its split from N:
//
//	c, _ := client.New(client.Config{Origin: s3store}) // Origin: optional fallback
//	defer c.Close()
//	sum, err := c.ReadSplit(ctx, placement.Address, client.Split{URI: uri, Offset: off, Length: n}, w)
//	// report sum.LocalHitBytes, sum.PeerHitBytes, sum.OriginBytes with the task's completion
//
// or hands arrow-go a ReaderAt that reads through N:
//
//	r, _ := c.Open(ctx, placement.Address, "s3://lake/t/part-0.parquet")
//	pf, _ := file.NewParquetReader(r)          // r is a parquet.ReaderAtSeeker
//	fr, _ := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
//	tbl, _ := fr.ReadTable(ctx)
//	sum := r.Summary()                         // bytes by source over all reads
//
// # What the client guarantees
//
// Bytes are written to the caller's writer in offset order, each exactly
// once: every Chunk's offset is checked against the next byte expected, and
// a stream that sends a byte out of place, past the range, or ends without
// its ReadSummary counts as a failed node (ErrProtocol), never as data.
// A summary naming another version than the read was pinned to fails the
// read outright (ErrProtocol and origin.ErrVersionChanged). When a call
// fails, what it wrote is a prefix of the range (of the pinned version).
//
// # The fallback ladder
//
// A read goes to the node it is given. If the node fails, that is:
//
//   - it cannot be reached within DialTimeout (dial error, UNAVAILABLE),
//   - the stream breaks (any status other than the ones below), stalls for
//     IdleTimeout, ends without a summary, or breaks the protocol,
//
// and Config.Origin is set, the client reads the rest of the range, from
// the first byte it has not yet written, directly from the origin. Errors
// about the object rather than the node (NOT_FOUND, FAILED_PRECONDITION,
// OUT_OF_RANGE, INVALID_ARGUMENT, PERMISSION_DENIED), the caller's own
// cancellation and errors of the caller's writer are returned as they are,
// without a fallback. Without an Origin, a node failure returns an error
// wrapping ErrNodeUnavailable.
//
// A fallback never mixes versions: with an Origin configured, ReadRange
// first Stats the object (through the node, or the origin if the node is
// down) and pins the read to that version with expected_version; the
// origin read uses the same version (If-Match on S3), so if the object
// changed, the call fails wrapping origin.ErrVersionChanged rather than
// appending new bytes to old ones. Without an Origin there is no fallback
// and no Stat. A ReaderAt is pinned once, at Open.
//
// # Accounting a fallback
//
// The Summary of a read that fell back says so by its miss cause: every
// byte that no node summary vouched for is counted in OriginBytes with the
// cause OwnerUnavailable (the node the read was placed on was unavailable),
// including the bytes the broken stream had delivered, whose source the
// node never reported; NodeID is empty. The scheduler therefore never
// credits a fallback as a cache hit. The cause's Pages count the
// fallback's origin reads (FallbackChunkSize each, 1 MiB by default), not
// cache pages: the client does not know the cluster's page size, and the
// scheduler's accounting uses the bytes only. Client.Stats counts fallbacks and the
// bytes actually read from the origin.
//
// # Connections and threading
//
// A Client keeps ConnsPerNode gRPC connections per node address, made on
// first use and kept until Close, with 16 MiB flow-control windows and a
// receive limit above the node's 1 MiB chunks. All methods are safe for
// concurrent use; a ReaderAt's ReadAt is too, while its Read and Seek
// share one cursor.
//
// # Asking the scheduler
//
// Scheduler is the client of the scheduler's JSON API (scheduler.go; the
// cache-node calls are in cachenode.go). An executor's loop:
//
//	sc, _ := client.NewScheduler(client.SchedulerConfig{URL: "http://127.0.0.1:8080"})
//	p, err := sc.Place(ctx, job, task, split, 500*time.Millisecond) // locality wait
//	start := time.Now()
//	sum, err := c.ReadSplit(ctx, p.Address, split, w)             // on the placed node
//	_, err = sc.Complete(ctx, job, task, client.InfoFromSummary(sum, time.Since(start)))
//
// PlaceBatch and CompleteBatch do a stage in two calls, with the API's
// allocation-light codec (pkg/schedapi). A batch returns as soon as no node has
// a free slot: its remaining tasks come back deferred (Placed false) to be
// resubmitted after some of the placed ones complete.
//
// Every error answer is a *SchedulerError (status, the scheduler's
// message and error code, the leader's address on a follower) wrapping the
// sentinel of its code ({"error": ..., "code": ...}; see pkg/schedapi):
// ErrBadRequest (400 "bad_request"), ErrNotFound (400 "not_found": an
// unknown job or a task not running is bad input to the API, and the code
// tells it from the rest), ErrUnauthorized 401, ErrConflict 409,
// ErrTooLarge 413, and for 503 ErrSchedulerUnavailable plus ErrNoNode (no
// node can take the task: retry later) or ErrNotLeader (an HA follower;
// SchedulerConfig.FollowLeader resends the call to the leader it names,
// X-Locus-Leader, and keeps using it until it stops answering, then goes
// back to SchedulerConfig.URL). An answer without a code (a
// scheduler older than the field, a proxy) maps by its status, a 404 to
// ErrNotFound. A scheduler that
// cannot be reached is ErrSchedulerUnavailable too. These sentinels are
// pkg/schedapi's, which package scheduler exports under the same names, so
// errors.Is works with any of them. Nothing is retried otherwise (but a
// call that could not connect to a followed leader, and so never reached
// it, is resent to SchedulerConfig.URL): Place is not idempotent (a
// retried Place whose first attempt got through is a 409).
//
// The package does not import pkg/scheduler: the API's types and codec come
// from pkg/schedapi, which imports only the standard library, so an
// executor that embeds this client does not link the scheduler's etcd
// client, zap or memberlist (TestImportGraph checks it).
package client
