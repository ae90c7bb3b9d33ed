package client

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/cache"
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
// wraps the sentinel of its code, as proto/cache/v1 documents the codes:
//
//	NOT_FOUND            origin.ErrNotFound
//	FAILED_PRECONDITION  origin.ErrVersionChanged and cache.ErrVersionChanged
//	OUT_OF_RANGE         cache.ErrOutOfRange
//	INVALID_ARGUMENT     readpath.ErrInvalidRequest
//	PERMISSION_DENIED    origin.ErrAccessDenied
//	UNAVAILABLE          origin.ErrUnavailable
//	DEADLINE_EXCEEDED    context.DeadlineExceeded
//	CANCELED             context.Canceled
//
// status.FromError still works on the result. Other errors are returned
// unchanged.
func nodeError(err error) error {
	s, ok := status.FromError(err)
	if !ok || err == nil {
		return err
	}
	var sentinels []error
	switch s.Code() {
	case codes.NotFound:
		sentinels = []error{origin.ErrNotFound}
	case codes.FailedPrecondition:
		sentinels = []error{origin.ErrVersionChanged, cache.ErrVersionChanged}
	case codes.OutOfRange:
		sentinels = []error{cache.ErrOutOfRange}
	case codes.InvalidArgument:
		sentinels = []error{readpath.ErrInvalidRequest}
	case codes.PermissionDenied:
		sentinels = []error{origin.ErrAccessDenied}
	case codes.Unavailable:
		sentinels = []error{origin.ErrUnavailable}
	case codes.DeadlineExceeded:
		sentinels = []error{context.DeadlineExceeded}
	case codes.Canceled:
		sentinels = []error{context.Canceled}
	default:
		return err
	}
	return &statusError{err: err, sentinels: sentinels}
}

type statusError struct {
	err       error
	sentinels []error
}

func (e *statusError) Error() string              { return e.err.Error() }
func (e *statusError) Unwrap() []error            { return append([]error{e.err}, e.sentinels...) }
func (e *statusError) GRPCStatus() *status.Status { s, _ := status.FromError(e.err); return s }

// definitive reports whether a node's error is about the object or the
// request (so the origin would say the same) rather than about the node.
func definitive(err error) bool {
	switch status.Code(err) {
	case codes.NotFound, codes.FailedPrecondition, codes.OutOfRange,
		codes.InvalidArgument, codes.PermissionDenied:
		return true
	}
	return false
}

// unavailable wraps a node failure for a caller without an Origin.
func unavailable(addr string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrNodeUnavailable, addr, err)
}
