package cache

import (
	"context"
	"fmt"
)

// Object names one version of an origin object. The caller (the cache node)
// learns Size and Version from the origin's Stat. Cached pages are keyed by
// (URI, Version, Size, page index): a new version never sees old bytes.
type Object struct {
	// URI names the object: s3://bucket/key or file:///abs/path.
	URI string
	// Version is the origin's version of the object (S3 ETag, size+mtime
	// for files). It may be empty for an origin without versions.
	Version string
	// Size is the object's length in bytes.
	Size int64
}

func (o Object) validate() error {
	if o.URI == "" {
		return fmt.Errorf("%w: empty URI", ErrInvalidObject)
	}
	if o.Size < 0 {
		return fmt.Errorf("%w: %q has negative size %d", ErrInvalidObject, o.URI, o.Size)
	}
	return nil
}

// Origin is the under-store the cache fills from (S3, local files, a peer).
//
// ReadAt reads len(p) bytes of obj starting at off into p, and returns how
// many it read. It reads exactly len(p) bytes unless the object ends first
// (then it may return io.EOF with the short count). It must refuse to read
// a version other than obj.Version (S3 If-Match) with an error wrapping
// ErrVersionChanged. The cache never calls ReadAt with an empty p or past
// obj.Size.
//
// ReadAt is called concurrently from many goroutines (at most
// Config.FetchParallelism per cache read) and must honour ctx.
type Origin interface {
	ReadAt(ctx context.Context, obj Object, p []byte, off int64) (int, error)
}

// OriginFunc adapts a function to Origin.
type OriginFunc func(ctx context.Context, obj Object, p []byte, off int64) (int, error)

// ReadAt calls f.
func (f OriginFunc) ReadAt(ctx context.Context, obj Object, p []byte, off int64) (int, error) {
	return f(ctx, obj, p, off)
}
