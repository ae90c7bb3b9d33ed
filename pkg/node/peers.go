package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// peerHeader marks a call forwarded by another node (Prefetch): the
// receiver serves it locally and never forwards it again. ReadRange uses its
// own peer field instead.
const peerHeader = "locus-peer"

// versionHeader carries, in a ReadRange stream's header metadata, the
// version of the object the stream's bytes come from, so that a peer read
// can refuse another version's bytes before using any (the summary, which
// names it too, comes after them).
const versionHeader = "locus-version"

// errPeerIdle cancels a peer stream that stayed silent too long.
var errPeerIdle = errors.New("node: peer stream idle too long")

// peerPool keeps one gRPC connection per peer address, and remembers peers
// that just failed so reads skip them for a while. Safe for concurrent use.
type peerPool struct {
	creds   credentials.TransportCredentials
	idle    time.Duration
	backoff time.Duration
	log     *slog.Logger
	m       *metrics

	mu        sync.Mutex
	conns     map[string]*grpc.ClientConn
	downUntil map[string]time.Time
	closed    bool
}

func newPeerPool(creds credentials.TransportCredentials, idle, backoff time.Duration, log *slog.Logger, m *metrics) *peerPool {
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	return &peerPool{
		creds: creds, idle: idle, backoff: backoff, log: log, m: m,
		conns:     make(map[string]*grpc.ClientConn),
		downUntil: make(map[string]time.Time),
	}
}

// PeerDialOptions returns the gRPC dial options a cache node uses for its
// peers, given the transport credentials (nil = plaintext): large
// flow-control windows, a receive limit above MaxChunkSize, keepalives,
// and a quick reconnect. Clients of the CacheService (pkg/client) can use
// the same.
func PeerDialOptions(creds credentials.TransportCredentials) []grpc.DialOption {
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	return []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithInitialWindowSize(peerWindow),
		grpc.WithInitialConnWindowSize(peerWindow),
		grpc.WithReadBufferSize(256 << 10),
		grpc.WithWriteBufferSize(64 << 10),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecvMsg), grpc.ForceCodecV2(Codec{})),
		experimental.WithBufferPool(pool),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: 3 * time.Second,
		}),
	}
}

// conn returns the pooled connection to addr, creating it (lazily
// connecting) if needed.
func (p *peerPool) conn(addr string) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrStopped
	}
	if cc, ok := p.conns[addr]; ok {
		return cc, nil
	}
	cc, err := grpc.NewClient("passthrough:///"+addr, PeerDialOptions(p.creds)...)
	if err != nil {
		return nil, err
	}
	p.conns[addr] = cc
	return cc, nil
}

// down reports whether addr failed recently.
func (p *peerPool) down(addr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.downUntil[addr]
	if ok && time.Now().After(t) {
		delete(p.downUntil, addr)
		return false
	}
	return ok
}

func (p *peerPool) markDown(addr string) {
	p.mu.Lock()
	p.downUntil[addr] = time.Now().Add(p.backoff)
	p.mu.Unlock()
}

// prune closes the connections to addresses no member of v uses.
func (p *peerPool) prune(v *membership.View) {
	keep := make(map[string]bool, len(v.Members))
	for _, m := range v.Members {
		keep[m.GRPCAddr] = true
	}
	var drop []*grpc.ClientConn
	p.mu.Lock()
	for addr, cc := range p.conns {
		if !keep[addr] {
			drop = append(drop, cc)
			delete(p.conns, addr)
			delete(p.downUntil, addr)
		}
	}
	p.mu.Unlock()
	for _, cc := range drop {
		cc.Close()
	}
}

func (p *peerPool) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = map[string]*grpc.ClientConn{}
	p.mu.Unlock()
	for _, cc := range conns {
		cc.Close()
	}
}

// read reads [off, off+length) of obj from peer m as a peer read. It
// returns how many bytes it delivered to emit even on error, so the caller
// can continue from there. The summary is m's, with m's local hits counted
// as peer hits; when the stream fails the delivered bytes count as peer
// hits (what m fetched for them is unknown).
func (p *peerPool) read(ctx context.Context, m membership.Member, obj cache.Object, off, length int64, emit func([]byte) error) (got int64, sum readpath.Summary, err error) {
	answered := false // the peer's handler produced the error (not the connection)
	defer func() {
		if err != nil {
			sum = readpath.Summary{Bytes: got, PeerHitBytes: got}
			if !answered {
				p.failed(ctx, m, err)
			}
		}
		p.m.peerRead(err)
	}()
	cc, err := p.conn(m.GRPCAddr)
	if err != nil {
		return 0, sum, err
	}
	want := min(length, obj.Size-off)
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(p.idle, func() { cancel(errPeerIdle) })
	defer idle.Stop()
	stream, err := cachev1.NewCacheServiceClient(cc).ReadRange(sctx, &cachev1.ReadRangeRequest{
		Uri: obj.URI, Offset: off, Length: length, ExpectedVersion: obj.Version, Peer: true,
	})
	if err != nil {
		return 0, sum, p.streamErr(sctx, err)
	}
	var resp RawResponse
	defer resp.Release()
	for first := true; ; first = false {
		if err := stream.RecvMsg(&resp); err != nil {
			if err == io.EOF {
				return got, sum, fmt.Errorf("%w: %s ended the stream without a summary after %d bytes", ErrPeer, m.ID, got)
			}
			// A status the peer's handler returned (its origin failing,
			// say) still continues elsewhere, but does not mark the peer
			// down: gRPC reports a header error only when the peer never
			// answered (dial failure, connection lost).
			if _, herr := stream.Header(); herr == nil && context.Cause(sctx) == nil {
				answered = true
			}
			return got, sum, p.streamErr(sctx, err)
		}
		// The idle timer measures the peer, not this node's reader: it
		// is stopped while the chunk is checked and handed to emit (whose
		// reader may be slow: flow control then holds the peer back) and
		// restarted before the next receive.
		idle.Stop()
		if first {
			// A peer names the version it serves in the header (a node
			// from before versionHeader does not: its summary still does).
			if md, err := stream.Header(); err == nil {
				if v := md.Get(versionHeader); len(v) > 0 && v[0] != obj.Version {
					return got, sum, fmt.Errorf("%w: %s serves version %s, asked for version %s",
						ErrPeerVersion, m.ID, v[0], obj.Version)
				}
			}
		}
		if resp.Summary != nil {
			s := readpath.FromProto(resp.Summary)
			if s.Version != obj.Version {
				return got, sum, fmt.Errorf("%w: %s sent %d bytes of version %s, asked for version %s",
					ErrPeerVersion, m.ID, got, s.Version, obj.Version)
			}
			if s.Bytes != got || got != want || s.Check() != nil {
				return got, sum, fmt.Errorf("%w: %s summary says %d bytes of version %s (checked: %v), got %d of %d of version %s",
					ErrPeer, m.ID, s.Bytes, s.Version, s.Check(), got, want, obj.Version)
			}
			sum = readpath.Summary{
				Bytes:        s.Bytes,
				PeerHitBytes: s.LocalHitBytes + s.PeerHitBytes,
				OriginBytes:  s.OriginBytes,
				Misses:       s.Misses,
			}
			return got, sum, nil
		}
		if k := int64(resp.Len()); resp.Offset != off+got || k > want-got {
			return got, sum, fmt.Errorf("%w: %s sent %d bytes at %d, expected at most %d at %d",
				ErrPeer, m.ID, k, resp.Offset, want-got, off+got)
		}
		for _, d := range resp.Data {
			if err := emit(d); err != nil {
				return got, sum, asEmitError(err)
			}
			got += int64(len(d))
		}
		idle.Reset(p.idle)
	}
}

// streamErr turns a stream error into the error the read path handles: the
// sentinel of a definitive status, or the status itself.
func (p *peerPool) streamErr(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, errPeerIdle) {
		return fmt.Errorf("%w after %v: %w", errPeerIdle, p.idle, err)
	}
	return FromStatus(err)
}

// failed records a peer failure; availability failures make the pool skip
// the peer for a while.
func (p *peerPool) failed(ctx context.Context, m membership.Member, err error) {
	if peerFault(ctx, err) {
		p.markDown(m.GRPCAddr)
	}
}

// prefetch asks peer m to load ranges of one object version into its cache.
func (p *peerPool) prefetch(ctx context.Context, m membership.Member, uri string, ranges []*cachev1.ByteRange) (*cachev1.PrefetchResponse, error) {
	cc, err := p.conn(m.GRPCAddr)
	if err != nil {
		return nil, err
	}
	ctx = metadata.AppendToOutgoingContext(ctx, peerHeader, "1")
	resp, err := cachev1.NewCacheServiceClient(cc).Prefetch(ctx, &cachev1.PrefetchRequest{Uri: uri, Ranges: ranges})
	if err != nil {
		err = FromStatus(err)
		p.failed(ctx, m, err)
		return nil, err
	}
	return resp, nil
}
