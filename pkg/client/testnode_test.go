package client

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// testNode is an in-process CacheService over a MemStore, with faults the
// client must survive. Every byte it serves counts as a local hit.
type testNode struct {
	cachev1.UnimplementedCacheServiceServer
	store *origintest.MemStore
	chunk int
	id    string

	mu sync.Mutex // guards the fault fields
	// After failAfter bytes of a ReadRange (0 = never), the stream:
	failAfter  int64
	failCode   codes.Code // ends with this status (codes.OK = see below)
	noSummary  bool       // ends OK without a summary
	stall      bool       // blocks until the client gives up
	badOffset  bool       // sends a chunk at a wrong offset
	onFail     func()     // runs when the fault triggers (e.g. overwrite the object)
	statCode   codes.Code // Stat fails with this code
	sumVersion string     // if set, the summary names this version
	rowGroups  []*cachev1.RowGroup

	reads, stats atomic.Int64
	addr         string
	srv          *grpc.Server
}

func startTestNode(t *testing.T, store *origintest.MemStore) *testNode {
	t.Helper()
	n := &testNode{store: store, chunk: 1000, id: "test-node"}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n.addr = l.Addr().String()
	n.srv = grpc.NewServer()
	cachev1.RegisterCacheServiceServer(n.srv, n)
	go func() { _ = n.srv.Serve(l) }()
	t.Cleanup(n.srv.Stop)
	return n
}

func (n *testNode) faults() (failAfter int64, code codes.Code, noSummary, stall, badOffset bool, onFail func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.failAfter, n.failCode, n.noSummary, n.stall, n.badOffset, n.onFail
}

func (n *testNode) set(f func(n *testNode)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f(n)
}

func grpcErr(err error) error {
	switch {
	case errors.Is(err, origin.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, origin.ErrVersionChanged):
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

func (n *testNode) Stat(ctx context.Context, req *cachev1.StatRequest) (*cachev1.StatResponse, error) {
	n.stats.Add(1)
	n.mu.Lock()
	code, rgs := n.statCode, n.rowGroups
	n.mu.Unlock()
	if code != codes.OK {
		return nil, status.Error(code, "injected stat failure")
	}
	info, err := n.store.Stat(ctx, req.GetUri())
	if err != nil {
		return nil, grpcErr(err)
	}
	return &cachev1.StatResponse{Uri: info.URI, Size: info.Size, Version: info.Version,
		LastModifiedUnixNano: info.ModTime.UnixNano(), Parquet: rgs != nil, RowGroups: rgs}, nil
}

func (n *testNode) ReadRange(req *cachev1.ReadRangeRequest, stream grpc.ServerStreamingServer[cachev1.ReadRangeResponse]) error {
	n.reads.Add(1)
	ctx := stream.Context()
	info, err := n.store.Stat(ctx, req.GetUri())
	if err != nil {
		return grpcErr(err)
	}
	if v := req.GetExpectedVersion(); v != "" && v != info.Version {
		return status.Errorf(codes.FailedPrecondition, "object at %s, not %s", info.Version, v)
	}
	if req.GetOffset() < 0 || req.GetLength() < 1 {
		return status.Error(codes.InvalidArgument, "bad range")
	}
	if req.GetOffset() > info.Size {
		return status.Error(codes.OutOfRange, "offset past the end")
	}
	failAfter, code, noSummary, stall, badOffset, onFail := n.faults()
	pos, end := req.GetOffset(), min(req.GetOffset()+req.GetLength(), info.Size)
	var sent int64
	buf := make([]byte, n.chunk)
	for pos < end {
		k := min(int64(n.chunk), end-pos)
		if failAfter > 0 {
			if sent >= failAfter {
				if onFail != nil {
					onFail()
				}
				switch {
				case stall:
					<-ctx.Done()
					return ctx.Err()
				case noSummary:
					return nil
				case badOffset:
					return stream.Send(&cachev1.ReadRangeResponse{Msg: &cachev1.ReadRangeResponse_Chunk{
						Chunk: &cachev1.Chunk{Offset: pos + 1, Data: []byte{1, 2, 3}}}})
				default:
					return status.Error(code, "injected failure")
				}
			}
			k = min(k, failAfter-sent)
		}
		m, err := n.store.ReadAt(ctx, info.URI, info.Version, buf[:k], pos)
		if err != nil && !errors.Is(err, io.EOF) {
			return grpcErr(err)
		}
		if err := stream.Send(&cachev1.ReadRangeResponse{Msg: &cachev1.ReadRangeResponse_Chunk{
			Chunk: &cachev1.Chunk{Offset: pos, Data: buf[:m]}}}); err != nil {
			return err
		}
		pos += int64(m)
		sent += int64(m)
	}
	sum := readpath.Summary{Bytes: sent, LocalHitBytes: sent, Version: info.Version, ObjectSize: info.Size, NodeID: n.id}
	n.mu.Lock()
	if n.sumVersion != "" {
		sum.Version = n.sumVersion
	}
	n.mu.Unlock()
	return stream.Send(&cachev1.ReadRangeResponse{Msg: &cachev1.ReadRangeResponse_Summary{Summary: sum.ToProto()}})
}
