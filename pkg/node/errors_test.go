package node

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"

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
		{nil, codes.OK},
	} {
		if got := Code(tc.err); got != tc.want {
			t.Errorf("Code(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
