package origin

import (
	"context"
	"fmt"
	"io"
	"iter"
	"time"
)

// Info describes one version of one object.
type Info struct {
	// URI names the object: s3://bucket/key or file:///abs/path.
	URI string
	// Size is the object's length in bytes.
	Size int64
	// Version identifies the object's content. For S3 it is the ETag
	// exactly as S3 sends it, quotes included (`"9b2cf535f27731c974343645a3985328"`),
	// which is also the form If-Match takes; listings that return it
	// unquoted are re-quoted so Stat and List agree. For files it is
	// "<size>-<mtime in Unix nanoseconds>". Treat it as opaque.
	Version string
	// ModTime is the object's last-modified time (S3 Last-Modified, or the
	// file's mtime).
	ModTime time.Time
	// ContentType is the media type the store keeps for the object (S3's
	// Content-Type), "" when it keeps none (files) or did not say.
	ContentType string
	// Metadata is the user metadata the store keeps for the object (S3's
	// x-amz-meta-* headers: names lowercased, without the prefix); nil
	// when there is none, or for a listing. Read-only: it may be shared.
	Metadata map[string]string
	// ContentEncoding, ContentDisposition, CacheControl, ContentLanguage
	// and Expires are the standard headers the store keeps with the
	// object (S3 sends them on GetObject and HeadObject as they were
	// written: a gzip-compressed object is stored with Content-Encoding:
	// gzip), each "" when it keeps none (files), or for a listing. They
	// are the headers' text as the store sent it; Expires is not parsed.
	ContentEncoding    string
	ContentDisposition string
	CacheControl       string
	ContentLanguage    string
	Expires            string
	// Listed is set on an Info that comes from a listing (List), which
	// carries none of ContentType, Metadata and the headers above: a Stat
	// answers them.
	Listed bool
}

// Store is an under-store: the origin the cache reads on a miss.
//
// Implementations are safe for concurrent use by many goroutines.
type Store interface {
	// Stat returns the object's current size and version.
	// Errors wrap ErrNotFound, ErrInvalidURI, ErrOutsideRoot,
	// ErrUnsupportedScheme, ErrAccessDenied, ErrUnavailable, ErrTimeout.
	Stat(ctx context.Context, uri string) (Info, error)

	// ReadAt reads len(p) bytes at offset off of version `version` of the
	// object, with io.ReaderAt's contract: it returns n < len(p) only with
	// a non-nil error, and a read that reaches the end of the object
	// returns the bytes up to the end and io.EOF (off >= size gives 0,
	// io.EOF). If the object no longer has that version, the error wraps
	// ErrVersionChanged and the bytes in p must not be used: bytes of two
	// versions are never mixed. An empty version reads whatever is current
	// without that check (not for caching). A negative off wraps ErrRange.
	ReadAt(ctx context.Context, uri, version string, p []byte, off int64) (int, error)

	// List calls fn, one call at a time, for every object whose URI starts
	// with prefix (a plain string prefix, as S3's ListObjectsV2: both
	// "s3://b/tbl/" and "s3://b/tbl/part-" work). If fn returns an error,
	// List stops and returns that error unchanged. A prefix under which
	// nothing exists is not an error; a missing S3 bucket is
	// (ErrBucketNotFound).
	List(ctx context.Context, prefix string, fn func(Info) error) error
}

// All returns an iterator over List(ctx, prefix). A listing error is
// yielded once, with a zero Info, as the last element.
func All(ctx context.Context, s Store, prefix string) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) {
		stopped := false
		err := s.List(ctx, prefix, func(info Info) error {
			if !yield(info, nil) {
				stopped = true
				return errStopIteration
			}
			return nil
		})
		if err != nil && !stopped {
			yield(Info{}, err)
		}
	}
}

var errStopIteration = fmt.Errorf("origin: iteration stopped")

// ReaderAt adapts one version of one object to io.ReaderAt, for code that
// takes a ReaderAt and a size (archive/zip, parquetx, arrow-go). The context
// given to NewReaderAt is used for every read, since io.ReaderAt has none.
// It is safe for concurrent use if the Store is.
type ReaderAt struct {
	ctx   context.Context
	store Store
	info  Info
}

// NewReaderAt returns a ReaderAt over info.URI at info.Version.
func NewReaderAt(ctx context.Context, s Store, info Info) *ReaderAt {
	return &ReaderAt{ctx: ctx, store: s, info: info}
}

// ReadAt implements io.ReaderAt.
func (r *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.info.Size && len(p) > 0 && off >= 0 {
		return 0, io.EOF
	}
	return r.store.ReadAt(r.ctx, r.info.URI, r.info.Version, p, off)
}

// Size returns the object's size.
func (r *ReaderAt) Size() int64 { return r.info.Size }

// Info returns the object the reader reads.
func (r *ReaderAt) Info() Info { return r.info }
