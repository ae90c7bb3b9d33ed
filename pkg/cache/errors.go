package cache

import "errors"

// Sentinel errors. Compare with errors.Is: the engine wraps them with context.
var (
	// ErrInvalidConfig is returned by New for a Config that cannot work
	// (a negative size, a page size that is not a multiple of 512, ...).
	ErrInvalidConfig = errors.New("cache: invalid config")
	// ErrBadDir is returned by New when Config.Dir cannot hold a cache: it is
	// a file, it cannot be created, or it is not writable. The wrapped error
	// says which.
	ErrBadDir = errors.New("cache: unusable cache directory")
	// ErrDirLocked is returned by New when another process (or another Cache
	// in this process) already uses Config.Dir.
	ErrDirLocked = errors.New("cache: cache directory in use by another cache")
	// ErrInvalidObject is returned for an Object with an empty URI or a
	// negative size.
	ErrInvalidObject = errors.New("cache: invalid object")
	// ErrInvalidRange is returned for a negative offset, a length below 1, or
	// an offset+length that overflows int64.
	ErrInvalidRange = errors.New("cache: invalid range")
	// ErrOutOfRange is returned when the offset lies past the end of the
	// object (offset > Object.Size). A range that starts inside the object
	// and runs past its end is not an error: it is truncated to the end.
	ErrOutOfRange = errors.New("cache: offset past the end of the object")
	// ErrShortBuffer is returned by Get when dst is shorter than the bytes
	// the (truncated) range holds.
	ErrShortBuffer = errors.New("cache: destination buffer too short")
	// ErrVersionChanged is the sentinel an Origin wraps when the object no
	// longer has the version the caller asked for (S3 If-Match failing).
	// The engine caches nothing from such a request and returns the error
	// as is, so errors.Is(err, ErrVersionChanged) holds for the caller.
	ErrVersionChanged = errors.New("cache: object version changed")
	// ErrShortRead is returned when the origin returns fewer bytes than the
	// object's size says it holds. Nothing is cached from that request.
	ErrShortRead = errors.New("cache: origin returned fewer bytes than the object size implies")
	// ErrOriginPanic is returned when the Origin's ReadAt panicked: the
	// cache recovers (its fetches must complete, for the readers waiting
	// on them), logs the panic with its stack, caches nothing from that
	// request and fails the read.
	ErrOriginPanic = errors.New("cache: origin panicked")
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("cache: closed")
)
