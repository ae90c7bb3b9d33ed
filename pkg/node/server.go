package node

import (
	"context"
	"errors"
	"math"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/parquetx"
	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// service implements cachev1.CacheServiceServer over a Node.
type service struct {
	cachev1.UnimplementedCacheServiceServer
	n *Node
}

// ReadRange streams the range as Chunk messages of at most MaxChunkSize
// bytes, then the ReadSummary. Chunks are encoded straight from the cache's
// pages (grpc-go marshals a message before Send returns, so the page needs
// to stay pinned only for the call).
func (s *service) ReadRange(req *cachev1.ReadRangeRequest, stream grpc.ServerStreamingServer[cachev1.ReadRangeResponse]) error {
	ctx := stream.Context()
	pos := req.GetOffset()
	// The version goes out in the header, before the first chunk (Read
	// fills vs once it knows which version it reads: before any byte).
	vs := &readVersionSink{}
	ctx = context.WithValue(ctx, readVersionKey{}, vs)
	headerSet := false
	chunk := &cachev1.Chunk{}
	msg := &cachev1.ReadRangeResponse{Msg: &cachev1.ReadRangeResponse_Chunk{Chunk: chunk}}
	alias := &aliasChunk{done: make(chan struct{}, 1)}
	emit := func(p []byte) error {
		if !headerSet && vs.version != "" {
			headerSet = true
			if err := stream.SetHeader(metadata.Pairs(versionHeader, vs.version)); err != nil {
				return err
			}
		}
		for len(p) > 0 {
			k := min(len(p), MaxChunkSize)
			if k >= aliasMin {
				// Zero-copy: gRPC's writer reads the cache's page; wait
				// until it has, so the page stays pinned meanwhile.
				alias.offset, alias.data = pos, p[:k]
				err := stream.SendMsg(alias)
				alias.data = nil
				if err != nil {
					return err
				}
				if err := alias.wait(ctx); err != nil {
					if errors.Is(err, errChunkKept) { // a client's hang-up alone is no news
						s.n.log.Warn("gRPC kept a chunk past the stream's end", "uri", req.GetUri(), "offset", pos, "err", err)
					}
					return err
				}
			} else {
				chunk.Offset, chunk.Data = pos, p[:k]
				err := stream.Send(msg)
				chunk.Data = nil
				if err != nil {
					return err
				}
			}
			pos += int64(k)
			p = p[k:]
		}
		return nil
	}
	sum, err := s.n.Read(ctx, readpath.Request{
		URI:             req.GetUri(),
		Offset:          req.GetOffset(),
		Length:          req.GetLength(),
		ExpectedVersion: req.GetExpectedVersion(),
		Peer:            req.GetPeer(),
	}, emit)
	if err != nil {
		return toStatus(err)
	}
	return stream.Send(&cachev1.ReadRangeResponse{Msg: &cachev1.ReadRangeResponse_Summary{Summary: sum.ToProto()}})
}

// Stat answers size, version, modification time and, for Parquet objects,
// the row groups and their column chunks.
// The times UnixNano can represent (int64 nanoseconds since 1970).
var (
	minUnixNano = time.Unix(0, math.MinInt64)
	maxUnixNano = time.Unix(0, math.MaxInt64)
)

func (s *service) Stat(ctx context.Context, req *cachev1.StatRequest) (*cachev1.StatResponse, error) {
	info, f, err := s.n.StatParquet(ctx, req.GetUri())
	if err != nil {
		return nil, toStatus(err)
	}
	resp := &cachev1.StatResponse{Uri: info.URI, Size: info.Size, Version: info.Version}
	// 0 means the origin did not say; so does a time UnixNano cannot hold
	// (before 1678 or after 2262: it would wrap to another date).
	if t := info.ModTime; !t.IsZero() && t.After(minUnixNano) && t.Before(maxUnixNano) {
		resp.LastModifiedUnixNano = t.UnixNano()
	}
	if f != nil {
		resp.Parquet = true
		resp.NumRows = f.NumRows
		for _, rg := range f.RowGroups {
			m := &cachev1.RowGroup{Index: int32(rg.Index), Offset: rg.Offset, Length: rg.Length, NumRows: rg.NumRows}
			for _, c := range rg.Columns {
				m.Columns = append(m.Columns, &cachev1.ColumnChunk{Path: c.Path, Offset: c.Offset, Length: c.Length})
			}
			resp.RowGroups = append(resp.RowGroups, m)
		}
	}
	return resp, nil
}

// Prefetch loads byte ranges and row-group column chunks into their
// owners' caches.
func (s *service) Prefetch(ctx context.Context, req *cachev1.PrefetchRequest) (*cachev1.PrefetchResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	forwarded := len(md.Get(peerHeader)) > 0
	p := PrefetchRequest{URI: req.GetUri(), Columns: req.GetColumns()}
	for _, r := range req.GetRanges() {
		p.Ranges = append(p.Ranges, parquetx.Range{Offset: r.GetOffset(), Length: r.GetLength()})
	}
	for _, g := range req.GetRowGroups() {
		p.RowGroups = append(p.RowGroups, int(g))
	}
	if len(p.Ranges) == 0 && len(p.RowGroups) == 0 {
		return nil, status.Error(codes.InvalidArgument, "prefetch: no ranges and no row groups")
	}
	res, err := s.n.prefetch(ctx, p, forwarded)
	if err != nil {
		return nil, toStatus(err)
	}
	return &cachev1.PrefetchResponse{FetchedBytes: res.FetchedBytes, CachedBytes: res.CachedBytes}, nil
}

// Ping reports the node's identity, state and ring epoch.
func (s *service) Ping(ctx context.Context, _ *cachev1.PingRequest) (*cachev1.PingResponse, error) {
	v := s.n.members.View()
	state := membership.StateAlive
	if s.n.Draining() {
		state = membership.StateDraining
	}
	return &cachev1.PingResponse{
		NodeId:          s.n.cfg.ID,
		Rack:            s.n.cfg.Rack,
		State:           string(state),
		RingEpoch:       v.Epoch,
		ProtocolVersion: membership.ProtocolVersion,
		BlockSize:       s.n.cfg.BlockSize,
		PageSize:        int64(s.n.cfg.PageSize),
	}, nil
}
