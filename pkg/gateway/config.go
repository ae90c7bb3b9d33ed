package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/readpath"
)

// ErrInvalidConfig is returned by New for a Config that cannot work.
var ErrInvalidConfig = errors.New("gateway: invalid config")

// Backend is what the gateway reads through: a cache node (*node.Node
// implements it), or StoreBackend for an origin without a cache.
//
// Implementations must be safe for concurrent use: the gateway calls them
// from one goroutine per HTTP request.
type Backend interface {
	// Stat returns the object's size, version (for S3 the ETag, quoted as
	// S3 returns it), modification time, and the headers the origin keeps
	// with it (Content-Type, Content-Encoding, ..., user metadata), which
	// the gateway sends as they are. Errors wrap origin.ErrNotFound for a
	// missing bucket or key.
	Stat(ctx context.Context, uri string) (origin.Info, error)
	// Read streams bytes [off, off+length) of version req.ExpectedVersion
	// of the object (empty = current) through the cluster cache, calling
	// emit with consecutive pieces in offset order; a slice passed to emit
	// is valid only during the call, and an error from emit ends the read
	// with that error. It returns the read's summary, or an error wrapping
	// origin.ErrNotFound, origin.ErrVersionChanged, cache.ErrInvalidRange /
	// cache.ErrOutOfRange, or a context error.
	Read(ctx context.Context, req readpath.Request, emit func(p []byte) error) (readpath.Summary, error)
}

// Revalidator is an optional side of a Backend whose Stat may answer from
// a cache (a node's stat cache trusts an answer for its TTL). Revalidate
// stats the object at the origin, refreshing that cache. The gateway calls
// it once before it fails a request's precondition (If-Match,
// If-Unmodified-Since) against a Stat answer, and before it answers a
// request whose If-None-Match or If-Range names another ETag than the Stat
// answer's: a client that learned the new ETag elsewhere (another node, the
// origin) must not get 412, or the old bytes, because this node has not
// seen the rewrite yet.
type Revalidator interface {
	Revalidate(ctx context.Context, uri string) (origin.Info, error)
}

// RequestObserver is an optional side of a Backend that records the
// gateway's object reads, one record per client GET whatever its answer:
// bytes (200, 206), 304 Not Modified, 412 Precondition Failed, 404 and the
// other errors. Most of those answers make no Read, and a GET whose object
// changes before its first byte makes two (it starts over), so a Backend
// that counted its Reads would count a client's GETs wrongly; a cache node
// implements RequestObserver to count them in its read metrics. HEAD is a
// Stat, not a read, and is not observed.
//
// The gateway calls ObserveRequest when it starts serving a GET of an
// object, makes every Backend call of that request (Stat, Revalidate,
// Read, List) with the returned context, and calls done exactly once, when
// the request ends (also when the response is aborted mid-body). A Backend
// should not record a Read made with such a context on its own: done
// records the request. done's arguments are the HTTP status the gateway
// sent (0: none, the client went away first), the summary of the Read
// that served the body (zero when no Read ran), and the error that ended
// the request, if any: the Backend's, or one wrapping context.Canceled
// when the client went away. An answer the gateway decides itself (304,
// 412, 400, 416) has a nil error.
type RequestObserver interface {
	ObserveRequest(ctx context.Context) (context.Context, func(status int, sum readpath.Summary, err error))
}

// Lister is the optional listing side of a Backend. When the Backend also
// implements it (or Config.Lister is set), the gateway answers
// ListObjectsV2, ListObjects (v1) and HeadBucket from it, which some clients
// (rclone) issue before reading one object; without it those calls answer
// 501 NotImplemented. origin.Store's List has exactly this signature, so a
// node can pass its origin's List through.
type Lister interface {
	// List calls fn, one call at a time, for every object whose URI
	// starts with prefix; see origin.Store.List. A missing bucket is an
	// error wrapping origin.ErrBucketNotFound.
	List(ctx context.Context, prefix string, fn func(origin.Info) error) error
}

// Config configures a Gateway. The zero value of every field but Backend
// is usable.
type Config struct {
	// Backend serves Stat and Read. Required.
	Backend Backend

	// Lister serves bucket listings. Default: Backend, if it implements
	// Lister; otherwise listings answer 501 NotImplemented.
	Lister Lister

	// DirectoryMarkers serves GET and HEAD of keys ending in "/":
	// "directory markers", objects named like a prefix (the S3 console's
	// "Create folder", rclone's --s3-directory-markers and Hadoop S3A
	// write them, usually empty). A cache node refuses such keys, since
	// the cluster names objects by URI and a URI ending in "/" is a
	// listing prefix there, so a node's gateway sets this to
	// StoreBackend{Store: the node's origin}: markers are read from the
	// origin, uncached (a Stat per request; they are rarely more than a
	// HEAD). Default: Backend, which serves them when it can (a
	// StoreBackend over an S3Store does); a Backend that refuses them
	// (origin.ErrInvalidURI) answers 404 NoSuchKey, as for a file://
	// bucket, where a directory is never an object.
	DirectoryMarkers Backend

	// Buckets maps a bucket name, as clients address it, to the URI
	// prefix its keys are appended to: {"lake": "s3://prod-lake/tables/"}
	// serves /lake/a/b.parquet from s3://prod-lake/tables/a/b.parquet, and
	// {"local": "file:///data/lake/"} serves files (FileStore's root rules
	// still apply). A key or listing prefix with a ".." segment is refused
	// with 403 for every mapped bucket, so no origin that resolves dot
	// segments can serve it from outside the prefix. When Buckets is
	// empty (the default), every bucket maps to itself:
	// /{bucket}/{key} → s3://{bucket}/{key}. When it is not, any other
	// bucket answers 404 NoSuchBucket. Each prefix must end in "/".
	Buckets map[string]string

	// Region is returned by GetBucketLocation (GET /{bucket}?location).
	// Default "" (S3's spelling of us-east-1).
	Region string

	// LenientRange makes a malformed Range header be ignored (the whole
	// object is served with 200), which is what AWS S3 does. By default a
	// malformed Range is refused with 400 InvalidArgument, because a
	// client that sends "bytes=9-5" has a bug that serving it a whole,
	// possibly huge, object would hide.
	LenientRange bool

	// MaxVersionRetries is how many times a GET starts over (Stat, then
	// Read) when the object changes between its Stat and the first byte
	// of its Read (origin.ErrVersionChanged before the headers are sent).
	// After the headers, a change aborts the response instead. Default 2;
	// a negative value means no retry.
	MaxVersionRetries int

	// Logger receives one line per failed request (server-side failures at
	// Warn; client errors, and 501 for an API the gateway does not serve,
	// at Debug). Default: discard.
	Logger *slog.Logger
}

func (c *Config) validate() error {
	if c.Backend == nil {
		return fmt.Errorf("%w: Backend is required", ErrInvalidConfig)
	}
	if c.Lister == nil {
		if l, ok := c.Backend.(Lister); ok {
			c.Lister = l
		}
	}
	if c.DirectoryMarkers == nil {
		c.DirectoryMarkers = c.Backend
	}
	for b, p := range c.Buckets {
		if b == "" || strings.ContainsAny(b, "/?#") {
			return fmt.Errorf("%w: bucket name %q in Buckets", ErrInvalidConfig, b)
		}
		if !strings.HasSuffix(p, "/") || !strings.Contains(p, "://") {
			return fmt.Errorf("%w: Buckets[%q] = %q: want a URI prefix ending in \"/\", such as s3://bucket/ or file:///data/", ErrInvalidConfig, b, p)
		}
		// Every key is appended to the prefix, so a prefix that is not a
		// valid URI (unknown scheme, bad bucket name, "//") would fail every
		// request of the bucket; say so at startup instead.
		if _, err := origin.ParseURI(p); err != nil {
			return fmt.Errorf("%w: Buckets[%q]: %w", ErrInvalidConfig, b, err)
		}
	}
	switch {
	case c.MaxVersionRetries == 0:
		c.MaxVersionRetries = 2
	case c.MaxVersionRetries < 0:
		c.MaxVersionRetries = 0
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
