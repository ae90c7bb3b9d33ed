package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/readpath"
)

// StoreBackend is the null Backend: it reads an origin.Store directly, with
// no cache, and reports every byte as an origin byte (miss cause Cold). It
// serves the gateway's own tests and benchmarks (as the baseline of "what
// the gateway costs without the cache"), and a deployment that wants an S3
// facade over a file tree without caching. It implements Lister.
type StoreBackend struct {
	// Store is the origin. Required.
	Store origin.Store
	// ChunkSize is the size of each ReadAt, and so of each emit.
	// Default 1 MiB.
	ChunkSize int
}

// DefaultChunkSize is StoreBackend's default ChunkSize.
const DefaultChunkSize = 1 << 20

var chunkPool = sync.Pool{New: func() any { b := make([]byte, DefaultChunkSize); return &b }}

// Stat implements Backend.
func (s StoreBackend) Stat(ctx context.Context, uri string) (origin.Info, error) {
	return s.Store.Stat(ctx, uri)
}

// List implements Lister.
func (s StoreBackend) List(ctx context.Context, prefix string, fn func(origin.Info) error) error {
	return s.Store.List(ctx, prefix, fn)
}

// Read implements Backend. It reads sequential chunks with Store.ReadAt,
// pinned to req.ExpectedVersion (or to the version a Stat finds, when it
// is empty, so a read never mixes versions).
func (s StoreBackend) Read(ctx context.Context, req readpath.Request, emit func([]byte) error) (readpath.Summary, error) {
	if err := req.Validate(); err != nil {
		return readpath.Summary{}, err
	}
	version := req.ExpectedVersion
	var size int64 // unknown unless a Stat ran
	if version == "" {
		info, err := s.Store.Stat(ctx, req.URI)
		if err != nil {
			return readpath.Summary{}, err
		}
		version, size = info.Version, info.Size
	}
	var buf []byte
	if s.ChunkSize <= 0 || s.ChunkSize == DefaultChunkSize {
		bp := chunkPool.Get().(*[]byte)
		defer chunkPool.Put(bp)
		buf = *bp
	} else {
		buf = make([]byte, s.ChunkSize)
	}
	sum := readpath.Summary{Version: version, ObjectSize: size}
	off, end := req.Offset, req.End()
	for off < end {
		p := buf[:min(int64(len(buf)), end-off)]
		n, err := s.Store.ReadAt(ctx, req.URI, version, p, off)
		if n > 0 {
			if eerr := emit(p[:n]); eerr != nil {
				return sum, eerr
			}
			sum.Bytes += int64(n)
			sum.OriginBytes += int64(n)
			sum.Misses[readpath.Cold].Bytes += int64(n)
			sum.Misses[readpath.Cold].Pages++
			off += int64(n)
		}
		if errors.Is(err, io.EOF) {
			if off == req.Offset {
				return sum, fmt.Errorf("%w: offset %d is at or past the end of %s", cache.ErrOutOfRange, req.Offset, req.URI)
			}
			break
		}
		if err != nil {
			return sum, err
		}
		if n == 0 {
			return sum, fmt.Errorf("gateway: %s: origin returned no bytes at offset %d", req.URI, off)
		}
	}
	return sum, nil
}

var (
	_ Backend = StoreBackend{}
	_ Lister  = StoreBackend{}
)
