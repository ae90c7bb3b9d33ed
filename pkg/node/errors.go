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

// Code returns the gRPC status code the CacheService answers err with:
// readpath.Code's table (proto/cache/v1/cache.proto documents the codes)
// plus the node's own sentinels:
//
//	INVALID_ARGUMENT     no such row group or column, row groups of an object that is not Parquet
//	UNAVAILABLE          node stopping (ErrStopped), no owner reachable (ErrOwnerUnavailable, Prefetch)
//	DATA_LOSS            a peer served another version after its bytes went out (ErrPeerVersion)
//
// A status error (from a peer) keeps its code.
func Code(err error) codes.Code { return readpath.Code(err, nodeSentinels...) }

// nodeSentinels are the node's additions to readpath.Code's table.
var nodeSentinels = []readpath.Sentinel{
	{Err: parquetx.ErrNoSuchRowGroup, Code: codes.InvalidArgument},
	{Err: parquetx.ErrNoSuchColumn, Code: codes.InvalidArgument},
	{Err: errNotParquet, Code: codes.InvalidArgument},
	{Err: ErrStopped, Code: codes.Unavailable},
	{Err: ErrOwnerUnavailable, Code: codes.Unavailable},
	{Err: ErrPeerVersion, Code: codes.DataLoss},
}

// toStatus converts an error of the read path to the gRPC status the
// service returns. Its message is err's text (readpath.FromStatus finds
// origin.ErrNoVersion by it), plus, for an object without an ETag, what
// the operator can do about it, as the S3 gateway's 501 says.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	msg := err.Error()
	if errors.Is(err, origin.ErrNoVersion) {
		msg += noVersionHint
	}
	return status.Error(Code(err), msg)
}

// noVersionHint completes the UNIMPLEMENTED message of an object that its
// origin stores without an ETag.
const noVersionHint = ": the origin stores this object without an ETag, and cached bytes are keyed by the ETag " +
	"(so that a changed object is never served from old bytes); store the object through the S3 API, " +
	"which gives it an ETag, or read it from the origin directly"

// FromStatus converts a CacheService status error back to an error that
// wraps the sentinel of its code, keeping the status; it is
// readpath.FromStatus, which lists the sentinels.
func FromStatus(err error) error { return readpath.FromStatus(err) }

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
