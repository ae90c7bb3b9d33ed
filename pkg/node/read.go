package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/objuri"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/readpath"
	"github.com/locuscache/locus/pkg/ring"
)

// causeOf maps the cache's miss causes to readpath's (their orders differ).
var causeOf = [cache.NumMissCauses]readpath.MissCause{
	cache.MissCold:             readpath.Cold,
	cache.MissCapacity:         readpath.Capacity,
	cache.MissInvalidated:      readpath.Invalidated,
	cache.MissCorrupt:          readpath.Corrupt,
	cache.MissOwnerUnavailable: readpath.OwnerUnavailable,
}

// localSummary converts the result of a read of this node's cache.
func localSummary(r cache.ReadResult) readpath.Summary {
	s := readpath.Summary{Bytes: r.Bytes, LocalHitBytes: r.HitBytes, OriginBytes: r.MissBytes}
	for c, m := range r.Misses {
		s.Misses[causeOf[c]].Pages += m.Pages
		s.Misses[causeOf[c]].Bytes += m.Bytes
	}
	return s
}

// errVersionChanged wraps both version sentinels around err, so callers can
// test for either (the gateway's contract names origin's, the cache's own
// contract names cache's).
func errVersionChanged(err error) error {
	if errors.Is(err, origin.ErrVersionChanged) && errors.Is(err, cache.ErrVersionChanged) {
		return err
	}
	if errors.Is(err, origin.ErrVersionChanged) {
		return fmt.Errorf("%w: %w", cache.ErrVersionChanged, err)
	}
	return fmt.Errorf("%w: %w", origin.ErrVersionChanged, err)
}

func isVersionChanged(err error) bool {
	return errors.Is(err, origin.ErrVersionChanged) || errors.Is(err, cache.ErrVersionChanged)
}

// Stat returns the object's size, version and modification time, through
// the node's stat cache (answers are trusted for Config.StatTTL). Errors
// wrap origin.ErrInvalidURI (also for a listing prefix), ErrOutsideRoot,
// ErrUnsupportedScheme, ErrNotFound, ErrAccessDenied, ErrUnavailable,
// ErrTimeout.
func (n *Node) Stat(ctx context.Context, uri string) (origin.Info, error) {
	if err := checkURI(uri); err != nil {
		return origin.Info{}, err
	}
	return n.stats.Stat(ctx, uri)
}

// Revalidate is Stat without trusting the stat cache: it asks the origin
// and refreshes the entry. The S3 gateway calls it before failing a
// request's If-Match or If-Unmodified-Since against a cached answer, and
// before answering an If-None-Match or If-Range that names another ETag.
func (n *Node) Revalidate(ctx context.Context, uri string) (origin.Info, error) {
	if err := checkURI(uri); err != nil {
		return origin.Info{}, err
	}
	n.stats.Invalidate(uri)
	return n.stats.Stat(ctx, uri)
}

// List passes a listing through to the origin (so the S3 gateway can answer
// ListObjects); see origin.Store.List.
func (n *Node) List(ctx context.Context, prefix string, fn func(origin.Info) error) error {
	return n.stats.List(ctx, prefix, fn)
}

// checkURI refuses URIs that are malformed, not canonical, or a prefix.
func checkURI(uri string) error { return objuri.CheckObject(uri) }

// statVersion stats uri and, when want is set and differs from what the
// stat cache says, asks the origin again once (the entry may be stale in
// either direction). It fails with a version-changed error if the object
// still is not at want.
func (n *Node) statVersion(ctx context.Context, uri, want string) (origin.Info, error) {
	info, err := n.stats.Stat(ctx, uri)
	if err != nil || want == "" || info.Version == want {
		return info, err
	}
	n.stats.Invalidate(uri)
	info, err = n.stats.Stat(ctx, uri)
	if err != nil || info.Version == want {
		return info, err
	}
	return info, errVersionChanged(fmt.Errorf("%s is at version %s, not %s", uri, info.Version, want))
}

// Read streams bytes [req.Offset, req.Offset+req.Length) of one version of
// the object through the cluster cache, calling emit with consecutive
// pieces in offset order; a slice passed to emit is valid only during the
// call. The range is truncated at the end of the object. See the package
// documentation for the rules (ownership, peer reads, fallback to the
// origin, versions).
//
// Errors wrap readpath.ErrInvalidRequest and cache.ErrInvalidRange (bad
// offset or length), origin.ErrInvalidURI, ErrOutsideRoot,
// ErrUnsupportedScheme, ErrNotFound, ErrAccessDenied, ErrUnavailable,
// ErrTimeout, origin.ErrVersionChanged together with
// cache.ErrVersionChanged, cache.ErrOutOfRange (offset past the end),
// ErrStopped, context errors, or emit's error unchanged.
func (n *Node) Read(ctx context.Context, req readpath.Request, emit func(p []byte) error) (sum readpath.Summary, err error) {
	return n.read(ctx, req, emit, true)
}

// ObserveRequest implements gateway.RequestObserver: the S3 gateway's GETs
// count in the read metrics (locus_reads_total{kind="client"},
// locus_read_duration_seconds, locus_cache_bytes_read_total) once per
// client request, whatever the answer (gatewayCode names it), and the
// Reads made with the returned context are not counted on their own.
func (n *Node) ObserveRequest(ctx context.Context) (context.Context, func(status int, sum readpath.Summary, err error)) {
	start := time.Now()
	var once sync.Once
	return context.WithValue(ctx, observedRequestKey{}, true), func(status int, sum readpath.Summary, err error) {
		once.Do(func() {
			n.metrics.observe(false, gatewayCode(status, err), sum, time.Since(start))
		})
	}
}

// observedRequestKey marks the context of a request that ObserveRequest
// records as a whole.
type observedRequestKey struct{}

// read is Read; observe says whether the read is recorded in the read
// metrics (locus_reads_total, locus_read_duration_seconds,
// locus_cache_bytes_read_total): not for the node's own reads of a Parquet
// footer or magic for Stat, which no client asked for (their pages still
// count as cache hits and misses), nor for the Reads of a request that
// ObserveRequest records.
func (n *Node) read(ctx context.Context, req readpath.Request, emit func(p []byte) error, observe bool) (sum readpath.Summary, err error) {
	start := time.Now()
	if ctx.Value(observedRequestKey{}) != nil {
		observe = false
	}
	if !n.enter() {
		return sum, ErrStopped
	}
	defer n.exit()
	emitFailed := false // emit's error ends the read: the reader went away, not this node
	defer func() {
		if !observe {
			return
		}
		merr := err
		if emitFailed {
			merr = context.Canceled // recorded as the gRPC path records a client hang-up
		}
		n.metrics.observeRead(req.Peer, sum, merr, time.Since(start))
	}()
	sum.NodeID = n.cfg.ID
	if err := req.Validate(); err != nil {
		return sum, fmt.Errorf("%w: %w", cache.ErrInvalidRange, err)
	}
	if err := checkURI(req.URI); err != nil {
		return sum, err
	}
	emitted := false
	track := func(p []byte) error {
		emitted = true
		if err := emit(p); err != nil {
			return emitError{err}
		}
		return nil
	}
	for attempt := 0; ; attempt++ {
		info, err := n.statVersion(ctx, req.URI, req.ExpectedVersion)
		if err != nil {
			return sum, err
		}
		s, err := n.readVersion(ctx, req, info, track)
		s.NodeID = n.cfg.ID
		if err == nil {
			return s, nil
		}
		var ee emitError
		if errors.As(err, &ee) {
			emitFailed = true
			return s, ee.err
		}
		if !isVersionChanged(err) {
			return s, err
		}
		err = errVersionChanged(err)
		// The object changed under the read. Start over with the new
		// version once, unless the caller pinned a version or bytes of the
		// old one were already delivered.
		n.stats.Invalidate(req.URI)
		if emitted || req.ExpectedVersion != "" || attempt > 0 {
			return s, err
		}
		n.log.Debug("object changed during read; restarting", "uri", req.URI, "version", info.Version, "err", err)
	}
}

// readVersionKey is the context key of a *readVersionSink: a caller of Read
// that wants to know, before the first byte, which version the bytes come
// from (the gRPC server, for versionHeader).
type readVersionKey struct{}

// readVersionSink receives the version a read serves. Read sets it on the
// caller's goroutine before it emits the first byte (again if it starts
// over with a new version, which it does only before the first byte).
type readVersionSink struct{ version string }

// emitError marks an error returned by the caller's emit, so it is passed
// back unchanged and never taken for a peer or origin failure.
type emitError struct{ err error }

func (e emitError) Error() string { return e.err.Error() }
func (e emitError) Unwrap() error { return e.err }

// asEmitError marks err as emit's, once: an emit that is itself a wrapped
// emit (the read path's tracking emit) already returns an emitError, which
// Read unwraps once to give the caller its own error unchanged.
func asEmitError(err error) error {
	var ee emitError
	if errors.As(err, &ee) {
		return err
	}
	return emitError{err}
}

// readVersion reads one version of the object: block by block, from this
// node's cache, a peer or the origin.
func (n *Node) readVersion(ctx context.Context, req readpath.Request, info origin.Info, emit func([]byte) error) (readpath.Summary, error) {
	if vs, ok := ctx.Value(readVersionKey{}).(*readVersionSink); ok {
		vs.version = info.Version // the gRPC server sends it ahead of the bytes
	}
	sum := readpath.Summary{Version: info.Version, ObjectSize: info.Size}
	obj := cache.Object{URI: req.URI, Version: info.Version, Size: info.Size}
	if req.Offset > info.Size {
		return sum, fmt.Errorf("%w: offset %d, %s has %d bytes", cache.ErrOutOfRange, req.Offset, req.URI, info.Size)
	}
	end := min(req.End(), info.Size)
	if end == req.Offset {
		return sum, nil
	}
	view := n.members.View()
	bs := n.cfg.BlockSize
	// plan says whether block b is served here and, if not, by whom
	// (the block's preference list). If here, it returns the nodes before
	// this one in the list, through which the cache fills (none for the
	// owner, and for a peer read, which fills from the origin).
	var owners, next []ring.Node
	plan := func(b int64, dst []ring.Node) (bool, []ring.Node) {
		if req.Peer || view.Ring == nil {
			return true, dst[:0]
		}
		dst = view.Ring.AppendOwners(dst[:0], ring.BlockKey(req.URI, b), n.cfg.Replication)
		if i := slices.IndexFunc(dst, func(o ring.Node) bool { return o.ID == n.cfg.ID }); i >= 0 {
			return true, dst[:i]
		}
		return false, dst
	}
	for off := req.Offset; off < end; {
		// A run: consecutive blocks served the same way (here, filling
		// through the same nodes, or through the same preference list)
		// make one cache read or one peer stream.
		var local bool
		local, owners = plan(off/bs, owners)
		runEnd := min(end, (off/bs+1)*bs)
		for runEnd < end {
			var l bool
			l, next = plan(runEnd/bs, next)
			if l != local || !slices.Equal(next, owners) {
				break
			}
			runEnd = min(end, runEnd+bs)
		}
		var s readpath.Summary
		var err error
		switch {
		case local && len(owners) == 0 && req.Peer:
			// The peer may cache what it gets: check every page. A page
			// this node is filling through an earlier owner for another
			// read (a replica) is counted as that fill was served.
			t := fillTally{log: &n.fills, obj: obj, ps: int64(n.cfg.PageSize), pos: off}
			var r cache.ReadResult
			r, err = n.cache.ViewVerified(ctx, obj, off, runEnd-off, func(p []byte) error {
				t.see(p)
				return emit(p)
			})
			s = t.summary(r)
		case local && len(owners) == 0:
			var r cache.ReadResult
			r, err = n.cache.View(ctx, obj, off, runEnd-off, emit)
			s = localSummary(r)
		case local:
			s, err = n.viewRouted(ctx, view, slices.Clone(owners), obj, off, runEnd-off, emit)
		default:
			s, err = n.readRemote(ctx, view, owners, obj, off, runEnd, emit)
		}
		sum.Add(s)
		if err != nil {
			return sum, err
		}
		off = runEnd
	}
	return sum, nil
}

// readRemote reads [off, end) of obj, which this node does not own, through
// the first reachable node of owners; what no owner can serve comes from
// the origin, uncached, as owner-unavailable misses.
func (n *Node) readRemote(ctx context.Context, view *membership.View, owners []ring.Node, obj cache.Object, off, end int64, emit func([]byte) error) (readpath.Summary, error) {
	var sum readpath.Summary
	for _, o := range owners {
		m, ok := view.Member(o.ID)
		if !ok || m.GRPCAddr == "" || n.peers.down(m.GRPCAddr) {
			continue
		}
		got, s, err := n.peers.read(ctx, m, obj, off, end-off, emit)
		sum.Add(s)
		off += got
		if err == nil {
			return sum, nil
		}
		if !peerFault(ctx, err) || (got > 0 && errors.Is(err, ErrPeerVersion)) {
			return sum, err // the bytes of another version went out: the read must fail
		}
		if off >= end {
			return sum, nil // every byte came before the stream failed: nothing left to ask for
		}
		n.log.Warn("peer read failed; continuing without it", "peer", m.ID, "addr", m.GRPCAddr,
			"uri", obj.URI, "at", off, "err", err)
	}
	s, err := n.readOrigin(ctx, obj, off, end, emit)
	sum.Add(s)
	return sum, err
}

// originBufSize is the size of one direct origin read (owner unavailable).
const originBufSize = 4 << 20

var originBufs = sync.Pool{New: func() any { b := make([]byte, originBufSize); return &b }}

// readOrigin reads [off, end) of obj straight from the origin without
// caching it here (the pages belong to another node): the bytes count as
// owner-unavailable misses.
func (n *Node) readOrigin(ctx context.Context, obj cache.Object, off, end int64, emit func([]byte) error) (readpath.Summary, error) {
	var sum readpath.Summary
	bp := originBufs.Get().(*[]byte)
	defer originBufs.Put(bp)
	buf := *bp
	ps := int64(n.cfg.PageSize)
	lastPage := int64(-1)
	for off < end {
		p := buf[:min(int64(len(buf)), end-off)]
		k, err := n.stats.ReadAt(ctx, obj.URI, obj.Version, p, off)
		if k < len(p) && err == nil {
			err = io.ErrUnexpectedEOF
		}
		if err == io.EOF && k == len(p) {
			err = nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = fmt.Errorf("%w: %s: %d bytes at %d, size %d", cache.ErrShortRead, obj.URI, k, off, obj.Size)
			}
			return sum, err
		}
		if err := emit(p); err != nil {
			return sum, err
		}
		first, last := off/ps, (off+int64(k)-1)/ps
		if first == lastPage {
			first++
		}
		pages := last - first + 1
		lastPage = last
		sum.Bytes += int64(k)
		sum.OriginBytes += int64(k)
		sum.Misses[readpath.OwnerUnavailable].Pages += pages
		sum.Misses[readpath.OwnerUnavailable].Bytes += int64(k)
		n.metrics.ownerUnavail.Add(pages)
		off += int64(k)
	}
	return sum, nil
}
