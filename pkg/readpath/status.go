package readpath

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/origin"
)

// Sentinel pairs an error with the gRPC status code a read answers it with.
// The cache node passes its own sentinels (node.ErrStopped, the Parquet
// errors) to Code this way.
type Sentinel struct {
	Err  error
	Code codes.Code
}

// codeTable lists the read path's sentinels by status code, in the order
// Code tries them: an error that wraps sentinels of two rows gets the
// code of the first row.
var codeTable = [...]struct {
	code codes.Code
	errs []error
}{
	{codes.InvalidArgument, []error{ErrInvalidRequest, cache.ErrInvalidRange, origin.ErrInvalidURI,
		origin.ErrUnsupportedScheme, origin.ErrRange, cache.ErrInvalidObject, origin.ErrRejected}},
	{codes.NotFound, []error{origin.ErrNotFound}},
	{codes.FailedPrecondition, []error{origin.ErrVersionChanged, cache.ErrVersionChanged}},
	{codes.OutOfRange, []error{cache.ErrOutOfRange}},
	{codes.PermissionDenied, []error{origin.ErrOutsideRoot, origin.ErrAccessDenied}},
	{codes.Unimplemented, []error{origin.ErrNoVersion}},
	{codes.DeadlineExceeded, []error{origin.ErrTimeout, context.DeadlineExceeded}},
	{codes.Canceled, []error{context.Canceled}},
	{codes.Unavailable, []error{origin.ErrUnavailable, cache.ErrClosed}},
}

// Code returns the gRPC status code a CacheService read answers err with,
// as proto/cache/v1/cache.proto documents them:
//
//	INVALID_ARGUMENT     bad request, URI or range (ErrInvalidRequest, cache.ErrInvalidRange,
//	                     origin.ErrInvalidURI, origin.ErrUnsupportedScheme, origin.ErrRange,
//	                     cache.ErrInvalidObject, origin.ErrRejected: the store refused the request)
//	NOT_FOUND            no such bucket or object (origin.ErrNotFound)
//	FAILED_PRECONDITION  the object is not at the expected version (origin.ErrVersionChanged,
//	                     cache.ErrVersionChanged)
//	OUT_OF_RANGE         offset past the end of the object (cache.ErrOutOfRange)
//	PERMISSION_DENIED    file:// path outside the root, or the origin refused the credentials
//	                     (origin.ErrOutsideRoot, origin.ErrAccessDenied)
//	UNIMPLEMENTED        the origin stores the object without an ETag, so it cannot be cached
//	                     (origin.ErrNoVersion; the S3 gateway answers it 501)
//	DEADLINE_EXCEEDED    the deadline passed or the origin timed out (context.DeadlineExceeded,
//	                     origin.ErrTimeout)
//	CANCELED             the caller went away (context.Canceled)
//	UNAVAILABLE          origin unreachable, cache closed (origin.ErrUnavailable, cache.ErrClosed)
//	INTERNAL             anything else (a short read from the origin, a corrupt footer)
//
// The rows are tried in this order. extra adds sentinels to the row of
// their code (a code outside the table is tried after it). A status error
// (from a peer) keeps its code, and nil is OK.
func Code(err error, extra ...Sentinel) codes.Code {
	if err == nil {
		return codes.OK
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		return s.Code()
	}
	for _, row := range codeTable {
		for _, e := range row.errs {
			if errors.Is(err, e) {
				return row.code
			}
		}
		for _, x := range extra {
			if x.Code == row.code && errors.Is(err, x.Err) {
				return row.code
			}
		}
	}
	for _, x := range extra {
		if errors.Is(err, x.Err) {
			return x.Code
		}
	}
	return codes.Internal
}

// FromStatus converts a CacheService status error back to an error that
// also wraps the sentinel of its code:
//
//	NOT_FOUND            origin.ErrNotFound
//	FAILED_PRECONDITION  origin.ErrVersionChanged and cache.ErrVersionChanged
//	OUT_OF_RANGE         cache.ErrOutOfRange
//	INVALID_ARGUMENT     ErrInvalidRequest
//	PERMISSION_DENIED    origin.ErrAccessDenied
//	UNIMPLEMENTED        origin.ErrNoVersion, when the message carries its text (see below)
//	UNAVAILABLE          origin.ErrUnavailable
//	DEADLINE_EXCEEDED    context.DeadlineExceeded
//	CANCELED             context.Canceled
//
// status.FromError still works on the result, and its message is err's.
// Other errors (nil, not a status, another code) are returned unchanged.
//
// gRPC itself answers UNIMPLEMENTED for a method the server does not know
// (an older node), so that code maps to origin.ErrNoVersion only when the
// message names it: the node's message is the error it wraps, whose text
// includes the sentinel's.
func FromStatus(err error) error {
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
		sentinels = []error{ErrInvalidRequest}
	case codes.PermissionDenied:
		sentinels = []error{origin.ErrAccessDenied}
	case codes.Unimplemented:
		if !strings.Contains(s.Message(), origin.ErrNoVersion.Error()) {
			return err
		}
		sentinels = []error{origin.ErrNoVersion}
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
