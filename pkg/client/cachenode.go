package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/parquetx"
	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// Split is what a task reads: a byte range of an object, as query engines
// hand them out (see DESIGN.md).
type Split struct {
	URI    string
	Offset int64
	Length int64
}

// ReadRange copies bytes [off, off+length) of the object uri to w, read
// through the cache node at nodeAddr (host:port of its gRPC listener). A
// range past the end of the object is truncated to the end; an offset past
// the end is an error wrapping cache.ErrOutOfRange.
//
// If the node fails partway and Config.Origin is set, the rest of the
// range (from the first byte not yet written to w) comes from the origin;
// see the package doc for how the summary accounts for it. To make that
// safe, a client with an Origin first Stats the object (through the node,
// or the origin if the node is down) and pins the read to that version:
// every byte written to w belongs to it, or the call fails wrapping
// origin.ErrVersionChanged.
//
// It returns the summary of the read, and an error wrapping one of
// origin.ErrNotFound, origin.ErrVersionChanged, cache.ErrOutOfRange,
// readpath.ErrInvalidRequest, origin.ErrAccessDenied, ErrNodeUnavailable
// (node failed, no Origin), the origin's errors (during a fallback;
// cache.ErrShortRead with io.ErrUnexpectedEOF when the origin ends the
// object before its size), the writer's error, or a context error. On error, the bytes written to w
// are a correct prefix of the range.
func (c *Client) ReadRange(ctx context.Context, nodeAddr, uri string, off, length int64, w io.Writer) (readpath.Summary, error) {
	return c.Read(ctx, nodeAddr, readpath.Request{URI: uri, Offset: off, Length: length}, w)
}

// ReadSplit reads a split: ReadRange(ctx, nodeAddr, s.URI, s.Offset, s.Length, w).
func (c *Client) ReadSplit(ctx context.Context, nodeAddr string, s Split, w io.Writer) (readpath.Summary, error) {
	return c.ReadRange(ctx, nodeAddr, s.URI, s.Offset, s.Length, w)
}

// Read is ReadRange with a whole readpath.Request: when req.ExpectedVersion
// is set, the read fails (wrapping origin.ErrVersionChanged) unless the
// object is still at that version, and no Stat is needed to pin it.
// req.Peer is ignored (only nodes send peer reads).
func (c *Client) Read(ctx context.Context, nodeAddr string, req readpath.Request, w io.Writer) (readpath.Summary, error) {
	return c.read(ctx, nodeAddr, req, -1, w)
}

// read is Read with the object's size when the caller knows it (size >= 0
// only together with req.ExpectedVersion), else -1.
func (c *Client) read(ctx context.Context, nodeAddr string, req readpath.Request, size int64, w io.Writer) (readpath.Summary, error) {
	req.Peer = false
	if err := req.Validate(); err != nil {
		return readpath.Summary{}, err
	}
	if nodeAddr == "" {
		return readpath.Summary{}, fmt.Errorf("%w: empty node address", readpath.ErrInvalidRequest)
	}
	if c.cfg.ReadTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.ReadTimeout)
		defer cancel()
	}
	c.stats.reads.Add(1)
	if req.ExpectedVersion == "" {
		size = -1
	}
	if req.ExpectedVersion == "" && c.cfg.Origin != nil {
		st, err := c.stat(ctx, nodeAddr, req.URI, false)
		if err != nil {
			return readpath.Summary{}, err
		}
		req.ExpectedVersion, size = st.Version, st.Size
		if st.FromOrigin {
			// The node failed the pinning Stat: read from the origin at
			// once (one node failure, one fallback).
			c.stats.nodeFailures.Add(1)
			c.stats.fallbacks.Add(1)
			return c.fallback(ctx, req, size, req.Offset, w)
		}
	}

	pos := req.Offset // first byte not yet written to w
	sum, err := c.streamRange(ctx, nodeAddr, req, size, w, &pos)
	if err == nil {
		return sum, nil
	}
	if ctx.Err() != nil {
		return readpath.Summary{}, fmt.Errorf("client: read %s from %s: %w", req.URI, nodeAddr, context.Cause(ctx))
	}
	if callerDeadline(ctx, err) {
		return readpath.Summary{}, fmt.Errorf("client: read %s from %s: %w", req.URI, nodeAddr, context.DeadlineExceeded)
	}
	if c.isClosed() {
		// Close tore the connection down: not a node failure.
		return readpath.Summary{}, fmt.Errorf("client: read %s from %s: %w (%v)", req.URI, nodeAddr, ErrClosed, err)
	}
	var werr *writeError
	var vErr *wrongVersionError
	// DATA_LOSS: the node sent bytes it could not stand by (a peer served
	// another version); no fallback can make the bytes already written right.
	if errors.As(err, &werr) || errors.As(err, &vErr) || definitive(err) || errors.Is(err, ErrClosed) || status.Code(err) == codes.DataLoss {
		return readpath.Summary{}, err
	}
	// The node failed.
	c.stats.nodeFailures.Add(1)
	if c.cfg.Origin == nil {
		return readpath.Summary{}, unavailable(nodeAddr, err)
	}
	c.stats.fallbacks.Add(1)
	c.cfg.Logger.Warn("client: node failed, reading the rest from the origin",
		"node", nodeAddr, "uri", req.URI, "offset", req.Offset, "length", req.Length,
		"resume_at", pos, "err", err)
	return c.fallback(ctx, req, size, pos, w)
}

// deadlineSkew is how close to the caller's deadline a node's
// DEADLINE_EXCEEDED must come to be taken as that deadline.
const deadlineSkew = 250 * time.Millisecond

// callerDeadline reports whether err is the caller's own deadline as the
// node saw it: gRPC sends the deadline along, and the node's clock can
// expire it a moment before ours. Falling back then would only race the
// deadline; a node's DEADLINE_EXCEEDED far from the caller's deadline (its
// origin timed out) is a node failure like any other.
func callerDeadline(ctx context.Context, err error) bool {
	dl, ok := ctx.Deadline()
	return ok && errors.Is(err, context.DeadlineExceeded) && time.Until(dl) < deadlineSkew
}

// wrongVersionError marks a stream whose summary names another version
// than the one asked for: a broken node whose bytes cannot be trusted, so
// the read fails instead of falling back.
type wrongVersionError struct{ err error }

func (e *wrongVersionError) Error() string { return e.err.Error() }
func (e *wrongVersionError) Unwrap() error { return e.err }

// writeError marks an error of the caller's writer: never a node failure.
type writeError struct{ err error }

func (e *writeError) Error() string { return "client: writing the read's bytes: " + e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// streamRange runs one ReadRange stream, writing each chunk to w and
// advancing *pos past the bytes written; size is the object's size if the
// read is pinned to a version whose size is known, else -1. It checks every chunk's offset,
// so a confused node cannot make it write a byte twice or out of place.
func (c *Client) streamRange(ctx context.Context, addr string, req readpath.Request, size int64, w io.Writer, pos *int64) (readpath.Summary, error) {
	svc, err := c.service(addr)
	if err != nil {
		return readpath.Summary{}, err
	}
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errIdle := fmt.Errorf("client: node %s sent nothing for %s", addr, c.cfg.IdleTimeout)
	idle := time.AfterFunc(c.cfg.IdleTimeout, func() { cancel(errIdle) })
	defer idle.Stop()

	stream, err := svc.ReadRange(sctx, &cachev1.ReadRangeRequest{
		Uri: req.URI, Offset: req.Offset, Length: req.Length, ExpectedVersion: req.ExpectedVersion,
	})
	if err != nil {
		return readpath.Summary{}, streamErr(sctx, err)
	}
	end := req.End()
	for {
		msg, err := stream.Recv()
		if err != nil {
			if err == io.EOF {
				return readpath.Summary{}, fmt.Errorf("%w: stream ended without a summary after %d bytes", ErrProtocol, *pos-req.Offset)
			}
			return readpath.Summary{}, streamErr(sctx, err)
		}
		idle.Reset(c.cfg.IdleTimeout)
		switch m := msg.GetMsg().(type) {
		case *cachev1.ReadRangeResponse_Chunk:
			data := m.Chunk.GetData()
			if len(data) == 0 {
				continue
			}
			if m.Chunk.GetOffset() != *pos || int64(len(data)) > end-*pos {
				return readpath.Summary{}, fmt.Errorf("%w: chunk of %d bytes at offset %d, expected offset %d, range end %d",
					ErrProtocol, len(data), m.Chunk.GetOffset(), *pos, end)
			}
			// The caller's writer may block (back-pressure): that time is
			// not the node's silence.
			idle.Stop()
			n, werr := w.Write(data)
			idle.Reset(c.cfg.IdleTimeout)
			*pos += int64(n)
			if werr == nil && n < len(data) {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				return readpath.Summary{}, &writeError{werr}
			}
		case *cachev1.ReadRangeResponse_Summary:
			sum := readpath.FromProto(m.Summary)
			if got := *pos - req.Offset; sum.Bytes != got {
				return readpath.Summary{}, fmt.Errorf("%w: summary says %d bytes, the stream carried %d", ErrProtocol, sum.Bytes, got)
			}
			if req.ExpectedVersion != "" && sum.Version != "" && sum.Version != req.ExpectedVersion {
				// The bytes are out already: no fallback can make them right.
				return readpath.Summary{}, &wrongVersionError{fmt.Errorf("%w: %w: node %s served version %q, the read asked for %q",
					ErrProtocol, origin.ErrVersionChanged, addr, sum.Version, req.ExpectedVersion)}
			}
			// A stream may stop before the range's end only where the
			// object ends, and the object's size is known when the read
			// is pinned (size >= 0; -1 otherwise).
			if *pos < end && (sum.ObjectSize != *pos || (size >= 0 && size != *pos)) {
				return readpath.Summary{}, fmt.Errorf("%w: stream stopped at %d, before the end of the range (%d), and the object is %d bytes (the node says %d)",
					ErrProtocol, *pos, end, size, sum.ObjectSize)
			}
			return sum, nil
		default:
			return readpath.Summary{}, fmt.Errorf("%w: unknown message %T", ErrProtocol, m)
		}
	}
}

// streamErr turns a stream error into the error to act on: the idle
// timeout's cause when it fired, otherwise the status error with its
// sentinels.
func streamErr(sctx context.Context, err error) error {
	if cause := context.Cause(sctx); cause != nil && sctx.Err() != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
		return cause
	}
	return nodeError(err)
}

var fallbackBufs = sync.Pool{New: func() any { b := make([]byte, DefaultFallbackChunkSize); return &b }}

// fallback reads [pos, req.End()) of version req.ExpectedVersion from the
// origin and writes it to w. size is the object's size if known, else -1.
// A read pinned to no version (no Origin configured never gets here; a
// caller-pinned version always has one) is never resumed.
// The summary counts every byte of the call that no node summary vouched
// for (those the broken stream delivered, and the origin's) as origin
// bytes missed for OwnerUnavailable, one miss "page" per origin read (the
// client does not know the cluster's page size); NodeID is empty.
func (c *Client) fallback(ctx context.Context, req readpath.Request, size, pos int64, w io.Writer) (readpath.Summary, error) {
	sum := readpath.Summary{Version: req.ExpectedVersion, ObjectSize: max(size, 0)}
	streamed := pos - req.Offset
	if streamed > 0 {
		sum.Bytes += streamed
		sum.OriginBytes += streamed
		sum.Misses[readpath.OwnerUnavailable].Bytes += streamed
	}
	if size < 0 {
		// The caller pinned the version without a Stat: learn the size (and
		// check the version) from the origin.
		info, err := c.cfg.Origin.Stat(ctx, req.URI)
		if err != nil {
			return sum, fmt.Errorf("client: stat %s on the origin for a fallback: %w", req.URI, err)
		}
		if info.Version != req.ExpectedVersion {
			return sum, fmt.Errorf("client: %s: %w: the origin has version %s, the read is pinned to %s",
				req.URI, origin.ErrVersionChanged, info.Version, req.ExpectedVersion)
		}
		size = info.Size
		sum.ObjectSize = size
	}
	if req.Offset > size {
		return sum, fmt.Errorf("client: %s: %w: offset %d, object size %d", req.URI, cache.ErrOutOfRange, req.Offset, size)
	}
	var buf []byte
	if c.cfg.FallbackChunkSize == DefaultFallbackChunkSize {
		bp := fallbackBufs.Get().(*[]byte)
		defer fallbackBufs.Put(bp)
		buf = *bp
	} else {
		buf = make([]byte, c.cfg.FallbackChunkSize)
	}
	end := min(req.End(), size)
	for pos < end {
		p := buf[:min(int64(len(buf)), end-pos)]
		n, err := c.cfg.Origin.ReadAt(ctx, req.URI, req.ExpectedVersion, p, pos)
		if n > 0 {
			wn, werr := w.Write(p[:n])
			pos += int64(wn)
			sum.Bytes += int64(wn)
			sum.OriginBytes += int64(wn)
			sum.Misses[readpath.OwnerUnavailable].Bytes += int64(wn)
			sum.Misses[readpath.OwnerUnavailable].Pages++
			c.stats.fallbackBytes.Add(int64(wn))
			if werr == nil && wn < n {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				return sum, &writeError{werr}
			}
		}
		if errors.Is(err, io.EOF) {
			if pos < end {
				// The origin ended the object before the size the read is
				// pinned to: a truncated range is not the range (the node
				// calls it cache.ErrShortRead too).
				return sum, fmt.Errorf("client: fallback read of %s: %w: the origin ended at %d, the object is %d bytes: %w",
					req.URI, cache.ErrShortRead, pos, size, io.ErrUnexpectedEOF)
			}
			break
		}
		if err != nil {
			return sum, fmt.Errorf("client: fallback read of %s at %d from the origin: %w", req.URI, pos, err)
		}
		if n == 0 {
			return sum, fmt.Errorf("client: fallback read of %s at %d: origin returned no bytes", req.URI, pos)
		}
	}
	return sum, nil
}

// ObjectInfo is what Stat returns.
type ObjectInfo struct {
	// Info is the object's URI, size, version and modification time.
	origin.Info
	// Parquet is true when the object is a Parquet file whose footer
	// parsed; NumRows and RowGroups are then set (column chunks carry
	// Path, Offset and Length only).
	Parquet   bool
	NumRows   int64
	RowGroups []parquetx.RowGroup
	// FromOrigin is true when the node failed and the origin answered
	// (the footer is then read from the origin for names ending in
	// .parquet or .parq only).
	FromOrigin bool
}

// Stat returns the object's size, version and modification time and, for
// Parquet objects, its row groups, from the node at nodeAddr (which keeps
// footers in memory), or from the origin when the node fails and an
// Origin is configured. Errors wrap origin.ErrNotFound,
// readpath.ErrInvalidRequest (a malformed URI), origin.ErrAccessDenied,
// ErrNodeUnavailable, the origin's errors, or a context error.
func (c *Client) Stat(ctx context.Context, nodeAddr, uri string) (ObjectInfo, error) {
	return c.stat(ctx, nodeAddr, uri, true)
}

// stat is Stat; count says whether a node failure and the origin's answer
// count in Stats (a read that pins its version counts them itself, once).
func (c *Client) stat(ctx context.Context, nodeAddr, uri string, count bool) (ObjectInfo, error) {
	if uri == "" || nodeAddr == "" {
		return ObjectInfo{}, fmt.Errorf("%w: empty uri or node address", readpath.ErrInvalidRequest)
	}
	nctx, cancel := context.WithTimeout(ctx, c.cfg.StatTimeout)
	st, err := c.statNode(nctx, nodeAddr, uri)
	cancel()
	if err == nil {
		return st, nil
	}
	if ctx.Err() != nil {
		return ObjectInfo{}, fmt.Errorf("client: stat %s on %s: %w", uri, nodeAddr, context.Cause(ctx))
	}
	if c.isClosed() {
		return ObjectInfo{}, fmt.Errorf("client: stat %s on %s: %w (%v)", uri, nodeAddr, ErrClosed, err)
	}
	if definitive(err) || errors.Is(err, ErrClosed) {
		return ObjectInfo{}, err
	}
	if count {
		c.stats.nodeFailures.Add(1)
	}
	if c.cfg.Origin == nil {
		return ObjectInfo{}, unavailable(nodeAddr, err)
	}
	if count {
		c.stats.fallbacks.Add(1)
	}
	c.cfg.Logger.Warn("client: node failed, asking the origin", "node", nodeAddr, "uri", uri, "err", err)
	// The node may have used up its StatTimeout: the origin gets its own.
	octx, ocancel := context.WithTimeout(ctx, c.cfg.StatTimeout)
	defer ocancel()
	info, err := c.cfg.Origin.Stat(octx, uri)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("client: stat %s on the origin after node %s failed: %w", uri, nodeAddr, err)
	}
	out := ObjectInfo{Info: info, FromOrigin: true}
	if parquetx.IsParquetName(uri) {
		if f, ferr := parquetx.ReadObjectFooter(octx, c.cfg.Origin, info); ferr == nil {
			out.Parquet, out.NumRows, out.RowGroups = true, f.NumRows, f.RowGroups
		} else {
			c.cfg.Logger.Debug("client: no Parquet footer from the origin", "uri", uri, "err", ferr)
		}
	}
	return out, nil
}

func (c *Client) statNode(ctx context.Context, addr, uri string) (ObjectInfo, error) {
	svc, err := c.service(addr)
	if err != nil {
		return ObjectInfo{}, err
	}
	resp, err := svc.Stat(ctx, &cachev1.StatRequest{Uri: uri})
	if err != nil {
		return ObjectInfo{}, nodeError(err)
	}
	out := ObjectInfo{
		Info:    origin.Info{URI: resp.GetUri(), Size: resp.GetSize(), Version: resp.GetVersion()},
		Parquet: resp.GetParquet(),
		NumRows: resp.GetNumRows(),
	}
	if out.URI == "" {
		out.URI = uri
	}
	if ns := resp.GetLastModifiedUnixNano(); ns != 0 {
		out.ModTime = time.Unix(0, ns)
	}
	for _, rg := range resp.GetRowGroups() {
		g := parquetx.RowGroup{Index: int(rg.GetIndex()), NumRows: rg.GetNumRows(), Offset: rg.GetOffset(), Length: rg.GetLength()}
		for _, col := range rg.GetColumns() {
			g.Columns = append(g.Columns, parquetx.ColumnChunk{Path: col.GetPath(), Offset: col.GetOffset(), Length: col.GetLength()})
		}
		out.RowGroups = append(out.RowGroups, g)
	}
	return out, nil
}
