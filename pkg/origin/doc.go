// Package origin is Locus's under-store: where the cache node reads an
// object's bytes on a miss. An object is named by URI, s3://bucket/key or
// file:///abs/path, and has a version: the S3 ETag, or
// "<size>-<mtime ns>-<inode>-<ctime ns>" for a file (Linux; elsewhere size
// and mtime). Cached bytes are keyed by (URI, version), so the one rule
// this package exists to keep is:
//
//	bytes of two versions of an object are never returned as one.
//
// # The Store contract
//
// A Store has three operations:
//
//   - Stat(uri) → Info{URI, Size, Version, ModTime, ContentType, ...}:
//     what the object is now, with the headers S3 keeps with it
//     (Content-Encoding, Cache-Control, ..., x-amz-meta-*).
//   - ReadAt(uri, version, p, off): bytes of exactly that version, with
//     io.ReaderAt's rules (short only with an error; io.EOF at the end). If
//     the object has changed, the read fails with ErrVersionChanged and the
//     caller Stats again. S3 enforces this with If-Match on the ETag (HTTP
//     412 on a mismatch) and by checking the ETag of the response; files
//     compare the version on the open file before and after reading.
//   - List(prefix, fn): every object whose URI starts with prefix.
//
// Errors wrap exported sentinels (ErrNotFound, ErrBucketNotFound,
// ErrVersionChanged, ErrInvalidURI, ErrOutsideRoot, ErrUnsupportedScheme,
// ErrRange, ErrAccessDenied, ErrUnavailable, ErrTimeout, ErrNoVersion):
// compare with errors.Is, and log the whole error, which keeps the
// underlying cause.
//
// # The stores
//
// S3Store (aws-sdk-go-v2) does ranged GETs and HeadObject, takes
// credentials from the standard AWS chain (or static keys in its config),
// supports a custom endpoint and path-style addressing for S3-compatible
// stores, and retries 5xx, throttling and broken connections with
// exponential backoff and full jitter, up to MaxAttempts and within
// Timeout. A response body that breaks off mid-transfer, or stalls for
// ResponseHeaderTimeout, is resumed with the same If-Match; it is never
// returned short. Stat and ReadAt take a
// key ending in "/" as S3 does: a directory marker is an object (the
// cache node itself refuses such URIs as listing prefixes); List leaves
// markers out.
//
// FileStore serves one directory tree (the node's --origin-file-root) and
// nothing outside it: ".." segments, percent-encoded traversal, absolute
// paths elsewhere, remote hosts and symbolic links that leave the root are
// refused with ErrOutsideRoot or ErrInvalidURI, and files are opened
// through an os.Root so that a link swapped after the check cannot escape
// either.
//
// Router dispatches by scheme to the configured stores and refuses the
// rest. StatCache wraps any Store and answers Stat from memory for a short
// TTL (revalidating with the store on expiry), so a burst of page misses on
// one object costs one HEAD.
//
// A cache node composes them like this:
//
//	s3s, _ := origin.NewS3Store(ctx, origin.S3Config{Endpoint: ..., PathStyle: true})
//	files, _ := origin.NewFileStore(origin.FileConfig{Root: "/data/lake"})
//	router, _ := origin.NewRouter(map[string]origin.Store{"s3": s3s, "file": files})
//	store, _ := origin.NewStatCache(router, origin.StatCacheConfig{TTL: 5 * time.Second})
//
// # Concurrency
//
// Every Store here is safe for concurrent use, and S3Store is built for
// many parallel range GETs (connection pool sized by MaxIdleConnsPerHost).
// List calls its callback sequentially on the calling goroutine. S3Config's
// Observe hook runs on the request goroutine after every HTTP attempt.
//
// # Tests
//
// Package origintest provides MemStore, an in-memory Store with versions
// and fault injection, and VersityGW, which runs a real S3 server on
// loopback for integration tests.
package origin
