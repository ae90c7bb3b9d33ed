package readpath

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/origin"
)

func TestCode(t *testing.T) {
	errMine := errors.New("mine")
	errOther := errors.New("other")
	extra := []Sentinel{{Err: errMine, Code: codes.Unavailable}, {Err: errOther, Code: codes.ResourceExhausted}}
	tests := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"nil", nil, codes.OK},
		{"invalid request", fmt.Errorf("read: %w", ErrInvalidRequest), codes.InvalidArgument},
		{"invalid range", cache.ErrInvalidRange, codes.InvalidArgument},
		{"invalid uri", origin.ErrInvalidURI, codes.InvalidArgument},
		{"unsupported scheme", origin.ErrUnsupportedScheme, codes.InvalidArgument},
		{"origin range", origin.ErrRange, codes.InvalidArgument},
		{"invalid object", cache.ErrInvalidObject, codes.InvalidArgument},
		{"not found", fmt.Errorf("stat: %w", origin.ErrNotFound), codes.NotFound},
		{"origin version", origin.ErrVersionChanged, codes.FailedPrecondition},
		{"cache version", cache.ErrVersionChanged, codes.FailedPrecondition},
		{"out of range", cache.ErrOutOfRange, codes.OutOfRange},
		{"outside root", origin.ErrOutsideRoot, codes.PermissionDenied},
		{"access denied", origin.ErrAccessDenied, codes.PermissionDenied},
		{"no version (no ETag)", fmt.Errorf("stat s3://bkt/k: %w", origin.ErrNoVersion), codes.Unimplemented},
		{"origin timeout", origin.ErrTimeout, codes.DeadlineExceeded},
		{"deadline", context.DeadlineExceeded, codes.DeadlineExceeded},
		{"canceled", context.Canceled, codes.Canceled},
		{"origin unavailable", origin.ErrUnavailable, codes.Unavailable},
		{"cache closed", cache.ErrClosed, codes.Unavailable},
		{"unknown", errors.New("short read"), codes.Internal},
		{"status keeps its code", status.Error(codes.Aborted, "peer"), codes.Aborted},
		{"wrapped status", fmt.Errorf("peer: %w", status.Error(codes.NotFound, "gone")), codes.NotFound},
		{"unknown status is mapped", status.Error(codes.Unknown, "?"), codes.Internal},
		{"first row wins", errors.Join(origin.ErrUnavailable, origin.ErrNotFound), codes.NotFound},
		{"extra in its row", errMine, codes.Unavailable},
		{"extra outside the table", errOther, codes.ResourceExhausted},
		{"row order over extras", errors.Join(errMine, cache.ErrOutOfRange), codes.OutOfRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Code(tc.err, extra...); got != tc.want {
				t.Errorf("Code(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
	if got := Code(errMine); got != codes.Internal {
		t.Errorf("Code(errMine) without extras = %v, want Internal", got)
	}
}

// TestFromStatusRoundTrip: a sentinel sent as status.Error(Code(err)) comes
// back from FromStatus matching the sentinel of its code, keeping the
// status and the message.
func TestFromStatusRoundTrip(t *testing.T) {
	tests := []struct {
		sent error
		want []error
	}{
		{origin.ErrNotFound, []error{origin.ErrNotFound}},
		{cache.ErrVersionChanged, []error{origin.ErrVersionChanged, cache.ErrVersionChanged}},
		{cache.ErrOutOfRange, []error{cache.ErrOutOfRange}},
		{origin.ErrInvalidURI, []error{ErrInvalidRequest}},
		{origin.ErrOutsideRoot, []error{origin.ErrAccessDenied}},
		{cache.ErrClosed, []error{origin.ErrUnavailable}},
		{origin.ErrTimeout, []error{context.DeadlineExceeded}},
		{context.Canceled, []error{context.Canceled}},
		{fmt.Errorf("stat s3://bkt/k: %w", origin.ErrNoVersion), []error{origin.ErrNoVersion}},
	}
	for _, tc := range tests {
		code := Code(tc.sent)
		wire := status.Error(code, tc.sent.Error())
		got := FromStatus(wire)
		for _, w := range tc.want {
			if !errors.Is(got, w) {
				t.Errorf("%v sent as %v: errors.Is(FromStatus, %v) = false, want true", tc.sent, code, w)
			}
		}
		if s, ok := status.FromError(got); !ok || s.Code() != code || got.Error() != wire.Error() {
			t.Errorf("%v: FromStatus lost the status: %v %v, message %q", tc.sent, s.Code(), ok, got)
		}
	}
	// UNIMPLEMENTED from gRPC itself (a method an older node lacks) is not
	// origin.ErrNoVersion.
	unknownMethod := status.Error(codes.Unimplemented, "unknown method Prefetch for service locus.cache.v1.CacheService")
	for _, err := range []error{nil, errors.New("plain"), status.Error(codes.Internal, "x"), status.Error(codes.Aborted, "x"), unknownMethod} {
		if got := FromStatus(err); got != err {
			t.Errorf("FromStatus(%v) = %v, want it unchanged", err, got)
		}
	}
}
