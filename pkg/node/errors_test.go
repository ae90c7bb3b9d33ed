package node

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/parquetx"
)

// TestCodeNodeSentinels: the node's sentinels join readpath.Code's table
// in the rows of their codes, so an error wrapping two sentinels gets the
// code of the earlier row, as with the table's own.
func TestCodeNodeSentinels(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want codes.Code
	}{
		{fmt.Errorf("read: %w", ErrStopped), codes.Unavailable},
		{ErrOwnerUnavailable, codes.Unavailable},
		{parquetx.ErrNoSuchRowGroup, codes.InvalidArgument},
		{parquetx.ErrNoSuchColumn, codes.InvalidArgument},
		{errNotParquet, codes.InvalidArgument},
		{origin.ErrNotFound, codes.NotFound},
		{errors.Join(ErrStopped, origin.ErrNotFound), codes.NotFound},
		{errors.Join(origin.ErrNotFound, parquetx.ErrNoSuchColumn), codes.InvalidArgument},
		{errors.New("short read"), codes.Internal},
		{fmt.Errorf("stat s3://b/k: %w", origin.ErrNoVersion), codes.Unimplemented},
		{nil, codes.OK},
	} {
		if got := Code(tc.err); got != tc.want {
			t.Errorf("Code(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestNoVersionStatus: an object its origin stores without an ETag is
// answered UNIMPLEMENTED, as the S3 gateway answers it 501, with a message
// that names the missing ETag and still carries the sentinel's text (so
// FromStatus gives origin.ErrNoVersion back); the gateway's 501 for it
// counts as Unimplemented in locus_reads_total, like the gRPC answer.
func TestNoVersionStatus(t *testing.T) {
	err := fmt.Errorf("%w: HEAD s3://b/k", origin.ErrNoVersion)
	st, _ := status.FromError(toStatus(err))
	if st.Code() != codes.Unimplemented || !strings.Contains(st.Message(), "without an ETag") {
		t.Errorf("toStatus(%v) = %v %q, want Unimplemented naming the missing ETag", err, st.Code(), st.Message())
	}
	if back := FromStatus(st.Err()); !errors.Is(back, origin.ErrNoVersion) {
		t.Errorf("FromStatus(%v) does not match origin.ErrNoVersion", st.Err())
	}
	if got := gatewayCode(501, err); got != codes.Unimplemented.String() {
		t.Errorf("gatewayCode(501, %v) = %s, want Unimplemented", err, got)
	}
	// It was "error" in locus_origin_requests_total, as a store failure.
	if got := originStatus(err); got != "no_version" {
		t.Errorf("originStatus(%v) = %q, want no_version", err, got)
	}
}
