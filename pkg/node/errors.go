package node

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/parquetx"
	"github.com/locuscache/locus/pkg/readpath"
)

// Code returns the gRPC status code the CacheService answers err with, as
// proto/cache/v1/cache.proto documents them:
//
//	INVALID_ARGUMENT     bad URI, negative offset or length, unsupported scheme, no such row group or column
//	NOT_FOUND            no such bucket or object
//	FAILED_PRECONDITION  the object is not at the expected version (it changed)
//	OUT_OF_RANGE         offset past the end of the object
//	PERMISSION_DENIED    file:// path outside the root, or the origin refused the credentials
//	UNAVAILABLE          origin unreachable, node stopping, no owner reachable (Prefetch)
//	DEADLINE_EXCEEDED    the deadline passed (or the origin timed out)
//	CANCELED             the caller went away
//	INTERNAL             anything else (a short read from the origin, a corrupt footer)
//
// A status error (from a peer) keeps its code.
func Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		return s.Code()
	}
	switch {
	case errors.Is(err, readpath.ErrInvalidRequest), errors.Is(err, cache.ErrInvalidRange),
		errors.Is(err, origin.ErrInvalidURI), errors.Is(err, origin.ErrUnsupportedScheme),
		errors.Is(err, origin.ErrRange), errors.Is(err, cache.ErrInvalidObject),
		errors.Is(err, parquetx.ErrNoSuchRowGroup), errors.Is(err, parquetx.ErrNoSuchColumn),
		errors.Is(err, errNotParquet):
		return codes.InvalidArgument
	case errors.Is(err, origin.ErrNotFound):
		return codes.NotFound
	case errors.Is(err, origin.ErrVersionChanged), errors.Is(err, cache.ErrVersionChanged):
		return codes.FailedPrecondition
	case errors.Is(err, cache.ErrOutOfRange):
		return codes.OutOfRange
	case errors.Is(err, origin.ErrOutsideRoot), errors.Is(err, origin.ErrAccessDenied):
		return codes.PermissionDenied
	case errors.Is(err, origin.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, origin.ErrUnavailable), errors.Is(err, ErrStopped), errors.Is(err, cache.ErrClosed),
		errors.Is(err, ErrOwnerUnavailable):
		return codes.Unavailable
	}
	return codes.Internal
}

// toStatus converts an error of the read path to the gRPC status the
// service returns.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(Code(err), err.Error())
}

// FromStatus converts a CacheService status error back to an error that
// wraps the sentinel of its code (NOT_FOUND → origin.ErrNotFound,
// FAILED_PRECONDITION → origin.ErrVersionChanged and cache.ErrVersionChanged,
// OUT_OF_RANGE → cache.ErrOutOfRange, INVALID_ARGUMENT →
// readpath.ErrInvalidRequest, PERMISSION_DENIED → origin.ErrAccessDenied,
// UNAVAILABLE → origin.ErrUnavailable, DEADLINE_EXCEEDED →
// context.DeadlineExceeded, CANCELED → context.Canceled), keeping the
// status (status.FromError still works on the result). Other errors are
// returned unchanged.
func FromStatus(err error) error {
	s, ok := status.FromError(err)
	if !ok || err == nil {
		return err
	}
	var sentinel []error
	switch s.Code() {
	case codes.NotFound:
		sentinel = []error{origin.ErrNotFound}
	case codes.FailedPrecondition:
		sentinel = []error{origin.ErrVersionChanged, cache.ErrVersionChanged}
	case codes.OutOfRange:
		sentinel = []error{cache.ErrOutOfRange}
	case codes.InvalidArgument:
		sentinel = []error{readpath.ErrInvalidRequest}
	case codes.PermissionDenied:
		sentinel = []error{origin.ErrAccessDenied}
	case codes.Unavailable:
		sentinel = []error{origin.ErrUnavailable}
	case codes.DeadlineExceeded:
		sentinel = []error{context.DeadlineExceeded}
	case codes.Canceled:
		sentinel = []error{context.Canceled}
	default:
		return err
	}
	return &statusError{err: err, sentinels: sentinel}
}

// statusError is a gRPC status error that also matches sentinels.
type statusError struct {
	err       error
	sentinels []error
}

func (e *statusError) Error() string { return e.err.Error() }

// Unwrap returns the status error and the sentinels.
func (e *statusError) Unwrap() []error { return append([]error{e.err}, e.sentinels...) }

// GRPCStatus lets status.FromError see the original status.
func (e *statusError) GRPCStatus() *status.Status { s, _ := status.FromError(e.err); return s }

// definitive reports whether a peer's answer is about the object rather
// than the peer: then asking another owner or the origin would not help.
func definitive(err error) bool {
	switch status.Code(err) {
	case codes.NotFound, codes.FailedPrecondition, codes.OutOfRange:
		return true
	}
	return false
}

// peerFault reports whether a failed peer read should continue elsewhere
// (another owner, then the origin): the error is the peer's, not the
// caller's (ctx still live, not an emit error) nor the object's.
func peerFault(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var ee emitError
	if errors.As(err, &ee) {
		return false
	}
	return !definitive(err) && !isVersionChanged(err) && !errors.Is(err, origin.ErrNotFound) &&
		!errors.Is(err, cache.ErrOutOfRange)
}

// errNotParquet is returned by the Prefetch of row groups of an object that
// is not a Parquet file.
var errNotParquet = fmt.Errorf("%w: row groups asked of an object that is not Parquet", parquetx.ErrNotParquet)
