package nodetest

import (
	"context"
	"fmt"
	"io"

	"google.golang.org/grpc"

	"github.com/locuscache/locus/pkg/node"
	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// ReadRange reads a range over gRPC and returns the bytes, the summary and
// the stream's error. It checks the protocol: chunks in offset order, then
// exactly one summary whose byte count matches, then the end of the
// stream; a violation is an error.
func ReadRange(ctx context.Context, c cachev1.CacheServiceClient, req *cachev1.ReadRangeRequest) ([]byte, readpath.Summary, error) {
	var buf []byte
	s, err := StreamRange(ctx, c, req, func(p []byte) error { buf = append(buf, p...); return nil })
	return buf, s, err
}

// StreamRange is ReadRange handing each chunk's data to fn instead of
// collecting it (fn must not retain it).
func StreamRange(ctx context.Context, c cachev1.CacheServiceClient, req *cachev1.ReadRangeRequest, fn func([]byte) error) (readpath.Summary, error) {
	stream, err := c.ReadRange(ctx, req, grpc.ForceCodecV2(node.Codec{}))
	if err != nil {
		return readpath.Summary{}, err
	}
	var got int64
	var m node.RawResponse
	defer m.Release()
	for {
		err := stream.RecvMsg(&m)
		if err == io.EOF {
			return readpath.Summary{}, fmt.Errorf("nodetest: stream ended without a summary after %d bytes", got)
		}
		if err != nil {
			return readpath.Summary{}, err
		}
		if m.Summary != nil {
			s := readpath.FromProto(m.Summary)
			if s.Bytes != got {
				return s, fmt.Errorf("nodetest: summary says %d bytes, stream had %d", s.Bytes, got)
			}
			if err := s.Check(); err != nil {
				return s, err
			}
			if err := stream.RecvMsg(&m); err != io.EOF {
				return s, fmt.Errorf("nodetest: message after the summary (%v)", err)
			}
			return s, nil
		}
		if m.Offset != req.GetOffset()+got {
			return readpath.Summary{}, fmt.Errorf("nodetest: chunk at %d, want %d", m.Offset, req.GetOffset()+got)
		}
		for _, d := range m.Data {
			if err := fn(d); err != nil {
				return readpath.Summary{}, err
			}
			got += int64(len(d))
		}
	}
}
