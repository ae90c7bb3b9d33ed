package origin

import (
	"errors"

	"github.com/locuscache/locus/pkg/objuri"
)

// Sentinel errors. Every error a Store returns wraps at most one of these
// (plus the underlying cause, for logs); compare with errors.Is.
var (
	// ErrNotFound: the object (or, for S3, its bucket) does not exist.
	ErrNotFound = errors.New("origin: object not found")

	// ErrBucketNotFound: the S3 bucket does not exist. It also matches
	// ErrNotFound, so callers that only care about "absent" need one check.
	// HeadObject cannot tell a missing bucket from a missing key (a HEAD
	// response has no body), so S3Store.Stat reports plain ErrNotFound for
	// both; ReadAt and List report ErrBucketNotFound.
	ErrBucketNotFound error = &childError{msg: "origin: bucket not found", parent: ErrNotFound}

	// ErrVersionChanged: the object no longer has the version the caller
	// named (S3 answered 412 Precondition Failed to If-Match, or a file's
	// size or mtime changed before or during the read). No bytes of the new
	// version are returned: Stat again and start over.
	ErrVersionChanged = errors.New("origin: object version changed")

	// ErrInvalidURI: the URI is malformed or not canonical (see ParseURI).
	// It is objuri.ErrInvalidURI.
	ErrInvalidURI = objuri.ErrInvalidURI

	// ErrOutsideRoot: a file:// URI names a path outside the configured
	// root, directly, through "..", or through a symbolic link. It is
	// objuri.ErrOutsideRoot.
	ErrOutsideRoot = objuri.ErrOutsideRoot

	// ErrUnsupportedScheme: no store is configured for the URI's scheme. It
	// is objuri.ErrUnsupportedScheme.
	ErrUnsupportedScheme = objuri.ErrUnsupportedScheme

	// ErrRange: a read asked for a negative offset. Reads at or past the end
	// of an object are not errors of this kind: they return io.EOF, as
	// io.ReaderAt requires.
	ErrRange = errors.New("origin: invalid read range")

	// ErrAccessDenied: the store refused the credentials (HTTP 401/403).
	ErrAccessDenied = errors.New("origin: access denied")

	// ErrUnavailable: the store kept failing (5xx, throttling, broken or
	// refused connections) for every allowed attempt, or the retry quota
	// ran out.
	ErrUnavailable = errors.New("origin: store unavailable")

	// ErrTimeout: the operation did not finish within the configured
	// timeout, or every attempt timed out waiting for the store's answer
	// (a hanging store). Such errors also match context.DeadlineExceeded.
	ErrTimeout = errors.New("origin: timed out")

	// ErrNoVersion: the store returned an object without an ETag, so it
	// cannot be versioned and must not be cached.
	ErrNoVersion = errors.New("origin: object has no version (ETag)")

	// ErrRejected: the store refused the request as malformed (an HTTP 4xx
	// other than 403, 404, 412 and 429) or redirected it (3xx: AWS answers
	// 301 to a request sent to another region's endpoint than the
	// bucket's): the key is not valid there, or the node's S3 region or
	// endpoint is wrong. Not retried; the message carries the store's code.
	ErrRejected = errors.New("origin: the store rejected the request")
)

// childError is a sentinel that also matches a more general parent sentinel.
type childError struct {
	msg    string
	parent error
}

func (e *childError) Error() string        { return e.msg }
func (e *childError) Is(target error) bool { return target == e.parent }
