package client

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/readpath"
)

// Sentinel errors. Errors about the object itself come back wrapping the
// origin, cache and readpath sentinels (see nodeError); compare with
// errors.Is.
var (
	// ErrNodeUnavailable: the node failed (could not be reached, answered
	// UNAVAILABLE, broke or stalled the stream, or broke the protocol) and
	// no Origin is configured to fall back to. The node's error is
	// wrapped too.
	ErrNodeUnavailable = errors.New("client: cache node unavailable")
	// ErrProtocol: the node sent a stream that breaks the CacheService
	// contract (a chunk at the wrong offset or past the range, a summary
	// that disagrees with the bytes sent, a stream without a summary).
	// The client treats it as a node failure; no byte it wrote is wrong.
	ErrProtocol = errors.New("client: cache node broke the protocol")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("client: closed")
)

// nodeError converts a CacheService status error to an error that also
// wraps the sentinel of its code (readpath.FromStatus lists them:
// NOT_FOUND wraps origin.ErrNotFound, FAILED_PRECONDITION
// origin.ErrVersionChanged and cache.ErrVersionChanged, OUT_OF_RANGE
// cache.ErrOutOfRange, ...). status.FromError still works on the result.
// Other errors are returned unchanged.
func nodeError(err error) error { return readpath.FromStatus(err) }

// definitive reports whether a node's error is about the object or the
// request (so the origin would say the same) rather than about the node.
// UNIMPLEMENTED is when it names origin.ErrNoVersion (the object has no
// ETag: the origin's Stat refuses it too); from gRPC itself (a method an
// older node lacks) it is the node's.
func definitive(err error) bool {
	switch status.Code(err) {
	case codes.NotFound, codes.FailedPrecondition, codes.OutOfRange,
		codes.InvalidArgument, codes.PermissionDenied:
		return true
	case codes.Unimplemented:
		return errors.Is(nodeError(err), origin.ErrNoVersion)
	}
	return false
}

// unavailable wraps a node failure for a caller without an Origin.
func unavailable(addr string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrNodeUnavailable, addr, err)
}
