package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/locuscache/locus/pkg/readpath"
)

// ReaderAt reads one version of one object through a cache node, as an
// io.ReaderAt with a size, plus io.Seeker and io.Reader over a cursor: the
// parquet.ReaderAtSeeker that arrow-go's file.NewParquetReader takes.
//
// Every read is pinned to the version Open saw, so all bytes belong to it;
// if the object changes, reads fail wrapping origin.ErrVersionChanged.
// ReadAt is safe for concurrent use (arrow-go reads column chunks in
// parallel); Read and Seek share one cursor and are not meant to race with
// each other. Summary accumulates how the bytes of every ReadAt were
// served, for the executor to report when its task completes.
type ReaderAt struct {
	c    *Client
	ctx  context.Context
	addr string
	info ObjectInfo

	mu     sync.Mutex // guards sum and cursor
	sum    readpath.Summary
	cursor int64
}

// Open stats uri through the node at nodeAddr (or the origin if the node
// fails and an Origin is configured) and returns a ReaderAt pinned to the
// version found. ctx is used by every later read (io.ReaderAt has no
// context): cancel it to abandon them. Errors are Stat's.
func (c *Client) Open(ctx context.Context, nodeAddr, uri string) (*ReaderAt, error) {
	st, err := c.Stat(ctx, nodeAddr, uri)
	if err != nil {
		return nil, err
	}
	r := &ReaderAt{c: c, ctx: ctx, addr: nodeAddr, info: st}
	r.sum.Version, r.sum.ObjectSize = st.Version, st.Size
	return r, nil
}

// Size returns the object's size.
func (r *ReaderAt) Size() int64 { return r.info.Size }

// Info returns what Open learned about the object (row groups included for
// Parquet).
func (r *ReaderAt) Info() ObjectInfo { return r.info }

// Summary returns how the bytes read so far were served, summed over all
// ReadAt and Read calls. NodeID is the node's id once a read has reported
// it.
func (r *ReaderAt) Summary() readpath.Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sum
}

// ReadAt implements io.ReaderAt: it reads len(p) bytes at off, fewer only
// at the end of the object (with io.EOF) or with an error.
func (r *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%w: negative offset %d", readpath.ErrInvalidRequest, off)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off >= r.info.Size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), r.info.Size-off)
	sw := &sliceWriter{p: p[:want]}
	sum, err := r.c.read(r.ctx, r.addr, readpath.Request{
		URI: r.info.URI, Offset: off, Length: want, ExpectedVersion: r.info.Version,
	}, r.info.Size, sw)
	r.mu.Lock()
	r.sum.Add(sum)
	if sum.NodeID != "" {
		r.sum.NodeID = sum.NodeID
	}
	r.mu.Unlock()
	if err != nil {
		return sw.n, err
	}
	if int64(sw.n) < want {
		return sw.n, fmt.Errorf("client: %s: %d bytes at %d, want %d: %w", r.info.URI, sw.n, off, want, io.ErrUnexpectedEOF)
	}
	if sw.n < len(p) {
		return sw.n, io.EOF
	}
	return sw.n, nil
}

// Seek implements io.Seeker over the cursor Read uses.
func (r *ReaderAt) Seek(offset int64, whence int) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.cursor
	case io.SeekEnd:
		offset += r.info.Size
	default:
		return 0, errors.New("client: Seek: invalid whence")
	}
	if offset < 0 {
		return 0, errors.New("client: Seek: negative position")
	}
	r.cursor = offset
	return offset, nil
}

// Read implements io.Reader at the cursor.
func (r *ReaderAt) Read(p []byte) (int, error) {
	r.mu.Lock()
	off := r.cursor
	r.mu.Unlock()
	n, err := r.ReadAt(p, off)
	r.mu.Lock()
	r.cursor = off + int64(n)
	r.mu.Unlock()
	if err == io.EOF && n > 0 {
		err = nil // io.Reader reports EOF on the next call
	}
	return n, err
}

// sliceWriter writes into a fixed slice; writing past its end is an error
// (the client never asks for more than fits).
type sliceWriter struct {
	p []byte
	n int
}

func (w *sliceWriter) Write(b []byte) (int, error) {
	n := copy(w.p[w.n:], b)
	w.n += n
	if n < len(b) {
		return n, io.ErrShortBuffer
	}
	return n, nil
}
