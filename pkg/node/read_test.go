package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/readpath"
	"github.com/locuscache/locus/pkg/ring"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// TestReadSingleNode: every block is owned here; the first read comes from
// the origin (cold misses), the second is a local hit, for ranges of every
// shape.
func TestReadSingleNode(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 1})
	const size = 300_000
	data := randBytes(1, size)
	uri := "s3://bkt/one"
	c.mem.Put(uri, data)
	n := c.nodes[0]
	tests := []struct {
		name        string
		off, length int64
	}{
		{"whole", 0, size},
		{"first byte", 0, 1},
		{"inside a page", 5, 100},
		{"page aligned", tPage, tPage},
		{"across pages", tPage - 3, 7},
		{"across blocks", tBlock - 10, 20},
		{"many blocks", 1234, 4*tBlock + 77},
		{"past the end", size - 10, 1000},
		{"last byte", size - 1, 1},
		{"at the end", size, 5},
		{"huge length", 100, math.MaxInt64 - 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n.Invalidate(uri)
			want := data[min(tc.off, size):min(tc.off+min(tc.length, size), size)]
			got, s := mustRead(t, n, readpath.Request{URI: uri, Offset: tc.off, Length: tc.length})
			if !bytes.Equal(got, want) {
				t.Fatalf("bytes differ: got %d, want %d", len(got), len(want))
			}
			if s.LocalHitBytes != 0 || s.OriginBytes != int64(len(want)) || s.Version == "" || s.ObjectSize != size || s.NodeID != "n0" {
				t.Fatalf("first read summary %+v", s)
			}
			if len(want) > 0 && s.Misses[readpath.Invalidated].Bytes+s.Misses[readpath.Cold].Bytes != int64(len(want)) {
				t.Fatalf("first read misses %+v", s.Misses)
			}
			got, s = mustRead(t, n, readpath.Request{URI: uri, Offset: tc.off, Length: tc.length})
			if !bytes.Equal(got, want) {
				t.Fatal("second read: bytes differ")
			}
			if s.LocalHitBytes != int64(len(want)) || s.OriginBytes != 0 {
				t.Fatalf("second read summary %+v, want all local hits", s)
			}
		})
	}
}

// TestReadThreeNodes: a read on any node serves the blocks whose preference
// list holds it (the blocks it owns, with replication 1) locally and the
// others through their lists; the second read is all hits, split between
// local and peer exactly as the ring says, and the pages are cached on the
// nodes of their lists only. Run with replication 1 and 2 (the default).
func TestReadThreeNodes(t *testing.T) {
	for _, repl := range []int{1, 2} {
		t.Run(fmt.Sprintf("replication=%d", repl), func(t *testing.T) { testReadThreeNodes(t, repl) })
	}
}

func testReadThreeNodes(t *testing.T, repl int) {
	c := newTCluster(t, tclusterOpts{n: 3, repl: repl})
	const size = 1<<20 + 12345
	data := randBytes(2, size)
	uri := "s3://bkt/three"
	c.mem.Put(uri, data)
	for _, tc := range []struct{ off, length int64 }{{0, size}, {tBlock/2 + 3, 5 * tBlock}, {size - 100, 100}} {
		for i, n := range c.nodes {
			t.Run(fmt.Sprintf("node%d_%d_%d", i, tc.off, tc.length), func(t *testing.T) {
				for _, m := range c.nodes {
					m.Invalidate(uri)
				}
				end := min(tc.off+tc.length, size)
				local := ownedBytes(c, uri, tc.off, end, n.ID())
				got, s := mustRead(t, n, readpath.Request{URI: uri, Offset: tc.off, Length: tc.length})
				if !bytes.Equal(got, data[tc.off:end]) {
					t.Fatal("bytes differ")
				}
				if s.OriginBytes != end-tc.off || s.LocalHitBytes != 0 || s.PeerHitBytes != 0 {
					t.Fatalf("cold read summary %+v", s)
				}
				got, s = mustRead(t, n, readpath.Request{URI: uri, Offset: tc.off, Length: tc.length})
				if !bytes.Equal(got, data[tc.off:end]) {
					t.Fatal("bytes differ")
				}
				if s.LocalHitBytes != local || s.PeerHitBytes != end-tc.off-local || s.OriginBytes != 0 {
					t.Fatalf("warm read summary %+v, want local %d peer %d", s, local, end-tc.off-local)
				}
				// Each block is cached on the nodes of its list up to the
				// reader when it is in the list, else on the first node
				// (its owner).
				for _, m := range c.nodes {
					want := cachedOn(c, uri, tc.off, end, n.ID(), m.ID())
					if used := m.CacheStats().UsedBytes; (want == 0) != (used == 0) {
						t.Errorf("%s caches %d bytes, should cache %d of the range", m.ID(), used, want)
					}
				}
			})
		}
	}
}

// cachedOn counts the bytes of [off, end) that a cold read on reader
// caches on node id: blocks whose list holds the reader are cached by the
// reader and by the nodes before it in the list (a replica fills through
// them, and they fill their own caches serving it), the others by the
// first node of their list.
func cachedOn(c *tcluster, uri string, off, end int64, reader, id string) int64 {
	var n int64
	for b := off / tBlock; b*tBlock < end; b++ {
		list := c.nodes[0].View().Ring.Owners(ringKey(uri, b), c.repl)
		by := list[:1]
		if i := slices.IndexFunc(list, func(o ring.Node) bool { return o.ID == reader }); i >= 0 {
			by = list[:i+1]
		}
		if slices.ContainsFunc(by, func(o ring.Node) bool { return o.ID == id }) {
			n += min(end, (b+1)*tBlock) - max(off, b*tBlock)
		}
	}
	return n
}

// TestPeerReadNeverForwards: a read marked Peer is served from the
// receiver's own cache even for blocks it does not own.
func TestPeerReadNeverForwards(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 3})
	data := randBytes(3, 8*tBlock)
	uri := "s3://bkt/peer"
	c.mem.Put(uri, data)
	n := c.nodes[0]
	got, s := mustRead(t, n, readpath.Request{URI: uri, Offset: 0, Length: int64(len(data)), Peer: true})
	if !bytes.Equal(got, data) || s.PeerHitBytes != 0 || s.OriginBytes != int64(len(data)) {
		t.Fatalf("peer read: %+v", s)
	}
	_, s = mustRead(t, n, readpath.Request{URI: uri, Offset: 0, Length: int64(len(data)), Peer: true})
	if s.LocalHitBytes != int64(len(data)) {
		t.Fatalf("second peer read: %+v, want all local", s)
	}
	for _, m := range c.nodes[1:] {
		if used := m.CacheStats().UsedBytes; used != 0 {
			t.Errorf("%s cached %d bytes of a peer read it did not serve", m.ID(), used)
		}
	}
}

// TestOwnerDown: blocks owned by a member nobody can reach come from the
// origin, counted as owner_unavailable, and are not cached here. With
// replication 1: with 2 the second node of the list serves them
// (TestReplication).
func TestOwnerDown(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 2, repl: 1})
	c.addMember("zz-dead", deadAddr(t))
	const size = 20 * tBlock
	data := randBytes(4, size)
	uri := "s3://bkt/down"
	c.mem.Put(uri, data)
	dead := ownedBytes(c, uri, 0, size, "zz-dead")
	if dead == 0 {
		t.Fatal("test setup: the dead member owns nothing")
	}
	n := c.nodes[0]
	for round := range 2 {
		got, s := mustRead(t, n, readpath.Request{URI: uri, Offset: 0, Length: size})
		if !bytes.Equal(got, data) {
			t.Fatal("bytes differ")
		}
		ou := s.Misses[readpath.OwnerUnavailable]
		if ou.Bytes != dead || ou.Pages != dead/tPage {
			t.Fatalf("round %d: owner_unavailable %+v, want %d bytes in %d pages", round, ou, dead, dead/tPage)
		}
		if round == 1 && s.OriginBytes != dead {
			t.Fatalf("round 1: origin bytes %d, want only the dead owner's %d", s.OriginBytes, dead)
		}
	}
	if used, own := n.CacheStats().UsedBytes, ownedBytes(c, uri, 0, size, n.ID()); used != own {
		t.Fatalf("n0 caches %d bytes, owns %d: it cached pages of the dead owner", used, own)
	}
}

// chunkPeer serves ReadRange from data, failing after `after` chunks with
// fail (or hanging when hang is set).
func chunkPeer(data []byte, after int, fail error, hang bool, badOffset bool) *fakePeer {
	return &fakePeer{readRange: func(req *cachev1.ReadRangeRequest, s grpc.ServerStreamingServer[cachev1.ReadRangeResponse]) error {
		end := min(int64(len(data)), req.Offset+req.Length)
		sent := 0
		for off := req.Offset; off < end; off += tPage {
			if sent == after {
				if hang {
					<-s.Context().Done()
					return s.Context().Err()
				}
				return fail
			}
			o := off
			if badOffset {
				o++
			}
			if err := s.Send(&cachev1.ReadRangeResponse{Msg: &cachev1.ReadRangeResponse_Chunk{Chunk: &cachev1.Chunk{
				Offset: o, Data: data[off:min(end, off+tPage)]}}}); err != nil {
				return err
			}
			sent++
		}
		return fail
	}}
}

// TestPeerFailures: a peer that fails mid-stream, breaks the protocol, or
// stops sending: the read continues from the byte reached, from the
// origin, and returns exactly the object's bytes. With replication 1, so
// the fake peer is the only node of its blocks' lists.
func TestPeerFailures(t *testing.T) {
	const size = 12 * tBlock
	data := randBytes(5, size)
	tests := []struct {
		name        string
		peer        *fakePeer
		wantPeerHit bool // some bytes came from the peer before it failed
	}{
		{"unavailable after 3 chunks", chunkPeer(data, 3, status.Error(codes.Unavailable, "gone"), false, false), true},
		{"internal at once", chunkPeer(data, 0, status.Error(codes.Internal, "boom"), false, false), false},
		{"no summary", chunkPeer(data, 1<<30, nil, false, false), true},
		{"wrong offsets", chunkPeer(data, 1<<30, nil, false, true), false},
		{"hangs after 2 chunks", chunkPeer(data, 2, nil, true, false), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newTCluster(t, tclusterOpts{n: 1, repl: 1, mutate: func(_ int, cfg *Config) { cfg.PeerIdleTimeout = 300 * time.Millisecond }})
			c.addMember("zz-fake", startFakePeer(t, tc.peer))
			uri := "s3://bkt/fail"
			c.mem.Put(uri, data)
			fake := ownedBytes(c, uri, 0, size, "zz-fake")
			if fake == 0 {
				t.Fatal("setup: the fake peer owns nothing")
			}
			got, s := mustRead(t, c.nodes[0], readpath.Request{URI: uri, Offset: 0, Length: size})
			if !bytes.Equal(got, data) {
				t.Fatal("bytes differ")
			}
			if tc.peer.calls.Load() == 0 {
				t.Fatal("the fake peer was never asked")
			}
			if (s.PeerHitBytes > 0) != tc.wantPeerHit {
				t.Fatalf("peer hit bytes %d, want some: %v", s.PeerHitBytes, tc.wantPeerHit)
			}
			if s.PeerHitBytes+s.Misses[readpath.OwnerUnavailable].Bytes != fake {
				t.Fatalf("peer %d + owner_unavailable %d != fake peer's bytes %d", s.PeerHitBytes, s.Misses[readpath.OwnerUnavailable].Bytes, fake)
			}
		})
	}
}

// TestVersionChange: reads never mix versions. A change noticed before any
// byte is delivered restarts the read with the new version; one noticed
// after fails it; the next read sees the new version.
func TestVersionChange(t *testing.T) {
	const size = 6 * tBlock
	v1, v2 := randBytes(6, size), randBytes(7, size)
	uri := "s3://bkt/ver"

	t.Run("restart before any byte", func(t *testing.T) {
		c := newTCluster(t, tclusterOpts{n: 1})
		c.mem.Put(uri, v1)
		if _, err := c.nodes[0].Stat(context.Background(), uri); err != nil { // stat cached at v1
			t.Fatal(err)
		}
		c.mem.Put(uri, v2)
		got, s := mustRead(t, c.nodes[0], readpath.Request{URI: uri, Offset: 0, Length: size})
		if !bytes.Equal(got, v2) || s.Version == "m1" {
			t.Fatalf("got version %s, bytes equal v2: %v", s.Version, bytes.Equal(got, v2))
		}
	})
	t.Run("fail after bytes, then new version", func(t *testing.T) {
		c := newTCluster(t, tclusterOpts{n: 1})
		c.mem.Put(uri, v1)
		mustRead(t, c.nodes[0], readpath.Request{URI: uri, Offset: 0, Length: size / 2}) // first half cached at v1
		c.mem.Put(uri, v2)
		got, _, err := read(t, c.nodes[0], readpath.Request{URI: uri, Offset: 0, Length: size})
		if !errors.Is(err, origin.ErrVersionChanged) || !errors.Is(err, cache.ErrVersionChanged) || Code(err) != codes.FailedPrecondition {
			t.Fatalf("err = %v, want a version change", err)
		}
		if !bytes.Equal(got, v1[:len(got)]) {
			t.Fatal("delivered bytes are not all of v1")
		}
		got, s := mustRead(t, c.nodes[0], readpath.Request{URI: uri, Offset: 0, Length: size})
		if !bytes.Equal(got, v2) || s.Misses[readpath.Invalidated].Bytes == 0 {
			t.Fatalf("after the change: equal v2 %v, summary %+v (want invalidated misses)", bytes.Equal(got, v2), s)
		}
	})
	t.Run("expected version", func(t *testing.T) {
		c := newTCluster(t, tclusterOpts{n: 1})
		i1 := c.mem.Put(uri, v1)
		if _, _, err := read(t, c.nodes[0], readpath.Request{URI: uri, Offset: 0, Length: 10, ExpectedVersion: "nope"}); Code(err) != codes.FailedPrecondition {
			t.Fatalf("wrong expected version: %v", err)
		}
		if _, s := mustRead(t, c.nodes[0], readpath.Request{URI: uri, Offset: 0, Length: 10, ExpectedVersion: i1.Version}); s.Version != i1.Version {
			t.Fatal(s.Version)
		}
		c.mem.Put(uri, v2) // stat cache still says v1: a pinned read must not restart into v2
		if _, _, err := read(t, c.nodes[0], readpath.Request{URI: uri, Offset: size / 2, Length: 10, ExpectedVersion: i1.Version}); Code(err) != codes.FailedPrecondition {
			t.Fatalf("pinned read of a changed object: %v", err)
		}
	})
	t.Run("through a peer with a stale stat", func(t *testing.T) {
		c := newTCluster(t, tclusterOpts{n: 3})
		c.mem.Put(uri, v1)
		for _, n := range c.nodes { // everyone's stat cache says v1, pages cached
			mustRead(t, n, readpath.Request{URI: uri, Offset: 0, Length: size})
		}
		c.mem.Put(uri, v2)
		// The owners learn the new version; n0 still has v1 in its stat cache.
		for _, n := range c.nodes[1:] {
			n.Invalidate(uri)
			mustRead(t, n, readpath.Request{URI: uri, Offset: 0, Length: size})
		}
		// Blocks n0 owns are cached at v1 and served first only if block 0
		// is n0's; either way no v1 byte may be followed by v2 bytes.
		got, s, err := read(t, c.nodes[0], readpath.Request{URI: uri, Offset: 0, Length: size})
		switch {
		case err == nil:
			if !bytes.Equal(got, v2) && !bytes.Equal(got, v1) {
				t.Fatal("mixed versions")
			}
		case Code(err) == codes.FailedPrecondition:
			if !bytes.Equal(got, v1[:len(got)]) {
				t.Fatal("failed read delivered bytes that are not v1")
			}
		default:
			t.Fatalf("read: %v (%+v)", err, s)
		}
		got, _ = mustRead(t, c.nodes[0], readpath.Request{URI: uri, Offset: 0, Length: size})
		if !bytes.Equal(got, v2) {
			t.Fatal("second read after the change is not v2")
		}
	})
}

// TestBadInput: malformed requests get documented errors and gRPC codes,
// never a panic.
func TestBadInput(t *testing.T) {
	root := t.TempDir()
	files, err := origin.NewFileStore(origin.FileConfig{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	mem := newMemRouter(t, files)
	c := newTCluster(t, tclusterOpts{n: 1, store: mem.router})
	mem.mem.Put("s3://bkt/k", randBytes(8, 1000))
	n := c.nodes[0]
	cl := dial(t, n.GRPCAddr())
	tests := []struct {
		name string
		req  readpath.Request
		code codes.Code
		is   error
	}{
		{"empty uri", readpath.Request{Length: 1}, codes.InvalidArgument, readpath.ErrInvalidRequest},
		{"negative offset", readpath.Request{URI: "s3://bkt/k", Offset: -1, Length: 1}, codes.InvalidArgument, cache.ErrInvalidRange},
		{"zero length", readpath.Request{URI: "s3://bkt/k"}, codes.InvalidArgument, cache.ErrInvalidRange},
		{"negative length", readpath.Request{URI: "s3://bkt/k", Length: -3}, codes.InvalidArgument, cache.ErrInvalidRange},
		{"overflow", readpath.Request{URI: "s3://bkt/k", Offset: math.MaxInt64, Length: 2}, codes.InvalidArgument, cache.ErrInvalidRange},
		{"offset past end", readpath.Request{URI: "s3://bkt/k", Offset: 1001, Length: 1}, codes.OutOfRange, cache.ErrOutOfRange},
		{"relative uri", readpath.Request{URI: "b/k", Length: 1}, codes.InvalidArgument, origin.ErrInvalidURI},
		{"unknown scheme", readpath.Request{URI: "gs://b/k", Length: 1}, codes.InvalidArgument, origin.ErrUnsupportedScheme},
		{"prefix", readpath.Request{URI: "s3://bkt/dir/", Length: 1}, codes.InvalidArgument, origin.ErrInvalidURI},
		{"bucket only", readpath.Request{URI: "s3://bkt", Length: 1}, codes.InvalidArgument, origin.ErrInvalidURI},
		{"missing key", readpath.Request{URI: "s3://bkt/nope", Length: 1}, codes.NotFound, origin.ErrNotFound},
		{"missing file", readpath.Request{URI: "file://" + root + "/nope", Length: 1}, codes.NotFound, origin.ErrNotFound},
		{"file traversal", readpath.Request{URI: "file://" + root + "/../etc/passwd", Length: 1}, codes.PermissionDenied, origin.ErrOutsideRoot},
		{"encoded traversal", readpath.Request{URI: "file://" + root + "/%2e%2e/etc/passwd", Length: 1}, codes.PermissionDenied, nil},
		{"file outside root", readpath.Request{URI: "file:///etc/passwd", Length: 1}, codes.PermissionDenied, origin.ErrOutsideRoot},
		{"file remote host", readpath.Request{URI: "file://evil/etc/passwd", Length: 1}, codes.InvalidArgument, origin.ErrInvalidURI},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := read(t, n, tc.req)
			if err == nil {
				t.Fatal("read succeeded")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want %v", err, tc.is)
			}
			if got := Code(err); got != tc.code && !(tc.is == nil && (got == codes.InvalidArgument || got == codes.PermissionDenied)) {
				t.Errorf("Code = %v, want %v (err %v)", got, tc.code, err)
			}
			_, _, gerr := grpcRead(context.Background(), cl, &cachev1.ReadRangeRequest{Uri: tc.req.URI, Offset: tc.req.Offset, Length: tc.req.Length})
			if got := status.Code(gerr); got != Code(err) {
				t.Errorf("gRPC code %v, want %v (%v)", got, Code(err), gerr)
			}
		})
	}
	// At the end: zero bytes and a summary, not an error.
	got, s, err := grpcRead(context.Background(), cl, &cachev1.ReadRangeRequest{Uri: "s3://bkt/k", Offset: 1000, Length: 5})
	if err != nil || len(got) != 0 || s.Bytes != 0 || s.ObjectSize != 1000 {
		t.Fatalf("read at the end: %v, %d bytes, %+v", err, len(got), s)
	}
}

// memRouter routes s3:// to a MemStore and file:// to a FileStore.
type memRouter struct {
	router *origin.Router
	mem    *origintest.MemStore
}

func newMemRouter(t testing.TB, files *origin.FileStore) memRouter {
	t.Helper()
	mem := origintest.NewMemStore()
	r, err := origin.NewRouter(map[string]origin.Store{"s3": mem, "file": files})
	if err != nil {
		t.Fatal(err)
	}
	return memRouter{router: r, mem: mem}
}

// TestReplication: with replication 2 a node serves the blocks whose
// preference list holds it from its own cache, and reads the others
// through the first reachable node of their list: a dead first owner is
// skipped for the second, so no byte comes uncached from the origin.
func TestReplication(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 2, repl: 2})
	c.addMember("zz-dead", deadAddr(t))
	const size = 24 * tBlock
	data := randBytes(9, size)
	uri := "s3://bkt/repl.bin"
	c.mem.Put(uri, data)
	n := c.nodes[1]
	var mine, viaDead int64
	r := n.View().Ring
	for b := int64(0); b < size/tBlock; b++ {
		owners := r.Owners(ringKey(uri, b), 2)
		switch {
		case owners[0].ID == "n1" || owners[1].ID == "n1":
			mine += tBlock
		case owners[0].ID == "zz-dead":
			viaDead += tBlock
		}
	}
	if viaDead == 0 || mine == 0 {
		t.Fatalf("setup: %d bytes in n1's lists, %d behind the dead member", mine, viaDead)
	}
	mustRead(t, n, readpath.Request{URI: uri, Offset: 0, Length: size})
	got, s := mustRead(t, n, readpath.Request{URI: uri, Offset: 0, Length: size})
	if !bytes.Equal(got, data) {
		t.Fatal("bytes differ")
	}
	if s.LocalHitBytes != mine || s.PeerHitBytes != size-mine || s.OriginBytes != 0 {
		t.Fatalf("second read: %+v, want local %d, peer %d", s, mine, size-mine)
	}
}

// TestPeerPoolPrune: connections to addresses no member uses any more are
// closed when the view changes. (Replication 1: every block of the other
// two members is read through them.)
func TestPeerPoolPrune(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 2, repl: 1})
	extra := startFakePeer(t, chunkPeer(nil, 0, nil, false, false))
	c.addMember("zz-extra", extra)
	uri := "s3://bkt/prune.bin"
	c.mem.Put(uri, randBytes(12, 16*tBlock))
	mustRead(t, c.nodes[0], readpath.Request{URI: uri, Offset: 0, Length: 16 * tBlock})
	p := c.nodes[0].peers
	has := func(addr string) bool { p.mu.Lock(); defer p.mu.Unlock(); _, ok := p.conns[addr]; return ok }
	if !has(c.nodes[1].GRPCAddr()) || !has(extra) {
		t.Fatal("no pooled connections after reading through both peers")
	}
	c.extra = nil
	c.publish()
	p.prune(c.nodes[0].View())
	if has(extra) || !has(c.nodes[1].GRPCAddr()) {
		t.Fatal("prune kept the departed member's connection or dropped a live one")
	}
}

// TestPeerBackoff: a peer that cannot be reached is skipped for a while;
// one whose handler answered with an error (its origin failing, say) is
// not. (Replication 1: each fake member is its blocks' only node.)
func TestPeerBackoff(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 1, repl: 1, mutate: func(_ int, cfg *Config) { cfg.PeerBackoff = time.Hour }})
	answering := startFakePeer(t, chunkPeer(nil, 0, status.Error(codes.Unavailable, "origin down over there"), false, false))
	dead := deadAddr(t)
	c.addMember("zz-answering", answering)
	c.addMember("zz-dead", dead)
	uri := "s3://bkt/backoff.bin"
	const size = 30 * tBlock
	data := randBytes(13, size)
	c.mem.Put(uri, data)
	if ownedBytes(c, uri, 0, size, "zz-answering") == 0 || ownedBytes(c, uri, 0, size, "zz-dead") == 0 {
		t.Fatal("setup: a fake member owns nothing")
	}
	got, _ := mustRead(t, c.nodes[0], readpath.Request{URI: uri, Offset: 0, Length: size})
	if !bytes.Equal(got, data) {
		t.Fatal("bytes differ")
	}
	p := c.nodes[0].peers
	if !p.down(dead) || p.down(answering) {
		t.Fatalf("down: dead %v (want true), answering %v (want false)", p.down(dead), p.down(answering))
	}
}
