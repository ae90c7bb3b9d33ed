package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/readpath"
	"github.com/locuscache/locus/pkg/ring"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// Small geometry for unit tests: 4 KiB pages, 64 KiB blocks, so a 1 MiB
// object has 16 blocks spread over the nodes.
const (
	tPage  = 4 << 10
	tBlock = 64 << 10
)

// fakeMembers is a Membership with a view the test sets.
type fakeMembers struct {
	v      atomic.Pointer[membership.View]
	mu     sync.Mutex
	states []membership.State
	left   bool
}

func (f *fakeMembers) View() *membership.View { return f.v.Load() }
func (f *fakeMembers) SetState(_ context.Context, s membership.State) error {
	f.mu.Lock()
	f.states = append(f.states, s)
	f.mu.Unlock()
	return nil
}
func (f *fakeMembers) Leave(context.Context) error {
	f.mu.Lock()
	f.left = true
	f.mu.Unlock()
	return nil
}
func (f *fakeMembers) Shutdown() error { return nil }

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("LOCUS_NODE_DEBUG") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// tcluster is a set of in-process nodes over one store, with a fixed view
// the test controls.
type tcluster struct {
	t     testing.TB
	store origin.Store
	mem   *origintest.MemStore // when store is a MemStore
	nodes []*Node
	fakes []*fakeMembers
	extra []membership.Member // members that are not nodes here (dead or fake peers)
	repl  int                 // the nodes' replication (preference-list length)
}

type tclusterOpts struct {
	n     int
	store origin.Store
	// repl is the nodes' replication; 0 = the default (DefaultReplication,
	// 2). Tests about what happens behind one owner (a dead owner, a
	// failing peer) set 1: with 2, the second node of a list steps in.
	repl     int
	statTTL  time.Duration
	mutate   func(i int, c *Config)
	memBytes int64
}

func newTCluster(t testing.TB, o tclusterOpts) *tcluster {
	t.Helper()
	c := &tcluster{t: t, store: o.store}
	if c.store == nil {
		c.mem = origintest.NewMemStore()
		c.store = c.mem
	}
	if o.statTTL == 0 {
		o.statTTL = time.Hour
	}
	if o.memBytes == 0 {
		o.memBytes = 8 << 20
	}
	for i := range o.n {
		f := &fakeMembers{}
		cfg := Config{
			ID:              fmt.Sprintf("n%d", i),
			Rack:            "r1",
			GRPCAddr:        "127.0.0.1:0",
			HTTPAddr:        "127.0.0.1:0",
			MemorySize:      o.memBytes,
			PageSize:        tPage,
			BlockSize:       tBlock,
			Origin:          c.store,
			StatTTL:         o.statTTL,
			Membership:      f,
			PeerIdleTimeout: 5 * time.Second,
			PeerBackoff:     50 * time.Millisecond,
			DrainTimeout:    5 * time.Second,
			Replication:     o.repl,
			Logger:          testLogger(t),
		}
		if o.mutate != nil {
			o.mutate(i, &cfg)
		}
		// The view must be set before New: New does not read it, but keep
		// View never nil.
		v, err := membership.NewView(nil, ring.Config{})
		if err != nil {
			t.Fatal(err)
		}
		f.v.Store(v)
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c.repl = n.cfg.Replication
		c.nodes = append(c.nodes, n)
		c.fakes = append(c.fakes, f)
	}
	c.publish()
	for _, n := range c.nodes {
		if err := n.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			n.Stop(ctx)
		})
	}
	return c
}

// publish gives every node a view of all nodes plus the extra members.
func (c *tcluster) publish() {
	c.t.Helper()
	var ms []membership.Member
	for _, n := range c.nodes {
		ms = append(ms, membership.Member{NodeMeta: membership.NodeMeta{
			ID: n.ID(), Rack: n.Rack(), GRPCAddr: n.GRPCAddr(), HTTPAddr: n.HTTPAddr(),
			Slots: 4, BlockSize: tBlock, PageSize: tPage, Replication: n.cfg.Replication,
		}, GossipAddr: "127.0.0.1:1"})
	}
	ms = append(ms, c.extra...)
	v, err := membership.NewView(ms, ring.Config{})
	if err != nil {
		c.t.Fatal(err)
	}
	for _, f := range c.fakes {
		f.v.Store(v)
	}
}

// addMember adds a member that is not one of the nodes (a dead address or
// a fake peer server) to everyone's view.
func (c *tcluster) addMember(id, grpcAddr string) {
	c.extra = append(c.extra, membership.Member{NodeMeta: membership.NodeMeta{
		ID: id, Rack: "r1", GRPCAddr: grpcAddr, Slots: 4, BlockSize: tBlock, PageSize: tPage, Replication: c.repl,
	}, GossipAddr: "127.0.0.1:1"})
	c.publish()
}

// prefers reports whether id is in the preference list of block b of uri
// (its first c.repl owners): the nodes that cache the block.
func (c *tcluster) prefers(uri string, b int64, id string) bool {
	for _, o := range c.nodes[0].View().Ring.Owners(ring.BlockKey(uri, b), c.repl) {
		if o.ID == id {
			return true
		}
	}
	return false
}

// read reads through node i and returns the bytes and summary.
func read(t testing.TB, n *Node, req readpath.Request) ([]byte, readpath.Summary, error) {
	t.Helper()
	var buf bytes.Buffer
	s, err := n.Read(context.Background(), req, func(p []byte) error { buf.Write(p); return nil })
	return buf.Bytes(), s, err
}

func mustRead(t testing.TB, n *Node, req readpath.Request) ([]byte, readpath.Summary) {
	t.Helper()
	b, s, err := read(t, n, req)
	if err != nil {
		t.Fatalf("read %+v on %s: %v", req, n.ID(), err)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("read %+v on %s: inconsistent summary: %v", req, n.ID(), err)
	}
	if s.Bytes != int64(len(b)) {
		t.Fatalf("summary says %d bytes, got %d", s.Bytes, len(b))
	}
	return b, s
}

func randBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// dial returns a CacheService client for a node's gRPC address.
func dial(t testing.TB, addr string) cachev1.CacheServiceClient {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr, PeerDialOptions(insecure.NewCredentials())...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cachev1.NewCacheServiceClient(cc)
}

// grpcRead reads a range over gRPC and returns the bytes, summary and the
// error of the stream.
func grpcRead(ctx context.Context, c cachev1.CacheServiceClient, req *cachev1.ReadRangeRequest) ([]byte, readpath.Summary, error) {
	stream, err := c.ReadRange(ctx, req)
	if err != nil {
		return nil, readpath.Summary{}, err
	}
	var buf []byte
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			return buf, readpath.Summary{}, fmt.Errorf("stream ended without a summary")
		}
		if err != nil {
			return buf, readpath.Summary{}, err
		}
		switch x := m.Msg.(type) {
		case *cachev1.ReadRangeResponse_Chunk:
			if x.Chunk.Offset != req.Offset+int64(len(buf)) {
				return buf, readpath.Summary{}, fmt.Errorf("chunk at %d, want %d", x.Chunk.Offset, req.Offset+int64(len(buf)))
			}
			buf = append(buf, x.Chunk.Data...)
		case *cachev1.ReadRangeResponse_Summary:
			if _, err := stream.Recv(); err != io.EOF {
				return buf, readpath.Summary{}, fmt.Errorf("message after the summary: %v", err)
			}
			return buf, readpath.FromProto(x.Summary), nil
		}
	}
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

// fakePeer is a CacheService server whose ReadRange the test scripts.
type fakePeer struct {
	cachev1.UnimplementedCacheServiceServer
	readRange func(*cachev1.ReadRangeRequest, grpc.ServerStreamingServer[cachev1.ReadRangeResponse]) error
	calls     atomic.Int64
}

func (f *fakePeer) ReadRange(req *cachev1.ReadRangeRequest, s grpc.ServerStreamingServer[cachev1.ReadRangeResponse]) error {
	f.calls.Add(1)
	return f.readRange(req, s)
}

func startFakePeer(t testing.TB, f *fakePeer) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	cachev1.RegisterCacheServiceServer(s, f)
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return l.Addr().String()
}

// blocksOf lists the blocks of [off, end) whose preference list holds id
// (with replication 1: the blocks id owns).
func blocksOf(c *tcluster, uri string, off, end int64, id string) []int64 {
	var bs []int64
	for b := off / tBlock; b*tBlock < end; b++ {
		if c.prefers(uri, b, id) {
			bs = append(bs, b)
		}
	}
	return bs
}

// blockListed returns the first block of uri (of blocks) whose
// preference list of two is exactly [first, second], failing the test if
// none is.
func blockListed(t *testing.T, c *tcluster, uri string, blocks int64, first, second string) int64 {
	t.Helper()
	for b := int64(0); b < blocks; b++ {
		o := c.nodes[0].View().Ring.Owners(ringKey(uri, b), 2)
		if len(o) == 2 && o[0].ID == first && o[1].ID == second {
			return b
		}
	}
	t.Fatalf("setup: no block of %s lists %s first and %s second", uri, first, second)
	return -1
}

// ownedBytes counts the bytes of [off, end) in blocks whose preference
// list holds id: those id serves from its own cache.
func ownedBytes(c *tcluster, uri string, off, end int64, id string) int64 {
	var n int64
	for _, b := range blocksOf(c, uri, off, end, id) {
		n += min(end, (b+1)*tBlock) - max(off, b*tBlock)
	}
	return n
}

func ringKey(uri string, b int64) string { return ring.BlockKey(uri, b) }
