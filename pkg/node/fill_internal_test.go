package node

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// listBlock returns the first block of an object of nblocks blocks whose
// preference list is [first, second].
func listBlock(t *testing.T, c *tcluster, uri string, nblocks int64, first, second string) int64 {
	t.Helper()
	for b := range nblocks {
		l := c.nodes[0].View().Ring.Owners(ringKey(uri, b), c.repl)
		if l[0].ID == first && l[1].ID == second {
			return b
		}
	}
	t.Fatalf("setup: no block of %s has the list [%s %s]", uri, first, second)
	return 0
}

func nodeByID(c *tcluster, id string) *Node {
	for _, n := range c.nodes {
		if n.ID() == id {
			return n
		}
	}
	return nil
}

// TestReplicaOwnerDown: when a block's owner is down (crashed, still in
// the view), its replica fills from the origin: owner_unavailable in the
// summary, cached here (the next read is a local hit), and the node
// outside the list reads through the replica.
func TestReplicaOwnerDown(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 3})
	const size = 16 * tBlock
	uri := "s3://bkt/owner-down.bin"
	data := randBytes(70, size)
	c.mem.Put(uri, data)
	b := listBlock(t, c, uri, size/tBlock, "n0", "n1")
	owner, replica, other := nodeByID(c, "n0"), nodeByID(c, "n1"), nodeByID(c, "n2")
	owner.Abort()
	off, length := b*tBlock+100, int64(tBlock-200)
	got, s := mustRead(t, replica, readpath.Request{URI: uri, Offset: off, Length: length})
	if !bytes.Equal(got, data[off:off+length]) {
		t.Fatal("bytes differ")
	}
	if s.OriginBytes != length || s.Misses[readpath.OwnerUnavailable].Bytes != length || s.Misses[readpath.OwnerUnavailable].Pages != tBlock/tPage {
		t.Fatalf("read on the replica, owner down: %+v, want %d owner_unavailable bytes in %d pages", s, length, tBlock/tPage)
	}
	if got, s = mustRead(t, replica, readpath.Request{URI: uri, Offset: off, Length: length}); !bytes.Equal(got, data[off:off+length]) || s.LocalHitBytes != length {
		t.Fatalf("second read on the replica: %+v, want a local hit", s)
	}
	if got, s = mustRead(t, other, readpath.Request{URI: uri, Offset: off, Length: length}); !bytes.Equal(got, data[off:off+length]) || s.PeerHitBytes != length {
		t.Fatalf("read outside the list: %+v, want a peer hit from the replica", s)
	}
}

// TestReplicaPeerFailsMidFill: an owner that fails after 3 pages of a
// replica's fill: those pages count as peer hits, the rest comes from the
// origin as owner_unavailable, and the bytes are exactly the object's. The
// replica asked for the object's version, as a peer read.
func TestReplicaPeerFailsMidFill(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 1})
	const size = 16 * tBlock
	uri := "s3://bkt/mid-fill.bin"
	data := randBytes(71, size)
	info := c.mem.Put(uri, data)
	var mu sync.Mutex
	var asked []*cachev1.ReadRangeRequest
	inner := chunkPeer(data, 3, status.Error(codes.Unavailable, "gone"), false, false)
	fake := &fakePeer{readRange: func(req *cachev1.ReadRangeRequest, s grpc.ServerStreamingServer[cachev1.ReadRangeResponse]) error {
		mu.Lock()
		asked = append(asked, req)
		mu.Unlock()
		return inner.readRange(req, s)
	}}
	c.addMember("zz-owner", startFakePeer(t, fake))
	b := listBlock(t, c, uri, size/tBlock, "zz-owner", "n0")
	off := b * tBlock
	got, s := mustRead(t, c.nodes[0], readpath.Request{URI: uri, Offset: off, Length: tBlock})
	if !bytes.Equal(got, data[off:off+tBlock]) {
		t.Fatal("bytes differ")
	}
	if s.PeerHitBytes != 3*tPage || s.Misses[readpath.OwnerUnavailable].Bytes != tBlock-3*tPage || s.OriginBytes != tBlock-3*tPage {
		t.Fatalf("summary %+v, want 3 pages from the peer, the rest owner_unavailable", s)
	}
	mu.Lock()
	if len(asked) != 1 || !asked[0].GetPeer() || asked[0].GetExpectedVersion() != info.Version || asked[0].GetOffset() != off {
		t.Fatalf("peer requests %v, want one peer read at %d of version %s", asked, off, info.Version)
	}
	mu.Unlock()
	if _, s = mustRead(t, c.nodes[0], readpath.Request{URI: uri, Offset: off, Length: tBlock}); s.LocalHitBytes != tBlock {
		t.Fatalf("second read: %+v, want a local hit", s)
	}
}

// TestReplicaVersionChange: a replica never caches or mixes bytes of an
// old version: its peer reads carry the version it read, so an owner
// behind it fetches the new version, and an owner ahead of it refuses, and
// the read starts over at the new version.
func TestReplicaVersionChange(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 2}) // stat entries live an hour
	const size = 8 * tBlock
	v1, v2 := randBytes(80, size), randBytes(81, size)

	t.Run("owner stale", func(t *testing.T) {
		uri := "s3://bkt/version-owner-stale.bin"
		c.mem.Put(uri, v1)
		b := listBlock(t, c, uri, size/tBlock, "n0", "n1")
		owner, replica := nodeByID(c, "n0"), nodeByID(c, "n1")
		off := b * tBlock
		mustRead(t, owner, readpath.Request{URI: uri, Offset: off, Length: tBlock}) // v1 cached, stat v1
		info2 := c.mem.Put(uri, v2)
		got, s := mustRead(t, replica, readpath.Request{URI: uri, Offset: off, Length: tBlock})
		if !bytes.Equal(got, v2[off:off+tBlock]) || s.Version != info2.Version {
			t.Fatalf("replica read after the change: version %s, want the new %s and its bytes", s.Version, info2.Version)
		}
		if s.OriginBytes != tBlock || s.PeerHitBytes != 0 {
			t.Fatalf("replica read after the change: %+v, want the owner's misses", s)
		}
		for _, n := range []*Node{replica, owner} {
			got, s := mustRead(t, n, readpath.Request{URI: uri, Offset: off, Length: tBlock})
			if !bytes.Equal(got, v2[off:off+tBlock]) || s.LocalHitBytes != tBlock {
				t.Fatalf("read on %s: %+v, want the new version from its cache", n.ID(), s)
			}
		}
	})

	t.Run("replica stale", func(t *testing.T) {
		uri := "s3://bkt/version-replica-stale.bin"
		info1 := c.mem.Put(uri, v1)
		b := listBlock(t, c, uri, size/tBlock, "n0", "n1")
		owner, replica := nodeByID(c, "n0"), nodeByID(c, "n1")
		off := b * tBlock
		mustRead(t, replica, readpath.Request{URI: uri, Offset: off, Length: tBlock / 2}) // both cache v1's first half
		info2 := c.mem.Put(uri, v2)
		owner.Invalidate(uri) // the owner sees v2; the replica's stat still says v1
		got, s, err := read(t, replica, readpath.Request{URI: uri, Offset: off, Length: tBlock})
		switch {
		case err == nil:
			if !bytes.Equal(got, v2[off:off+tBlock]) || s.Version != info2.Version {
				t.Fatalf("read on the stale replica: %d bytes of version %s, want all of %s", len(got), s.Version, info2.Version)
			}
		case errors.Is(err, origin.ErrVersionChanged) && errors.Is(err, cache.ErrVersionChanged):
			if !bytes.Equal(got, v1[off:off+int64(len(got))]) {
				t.Fatalf("failed read delivered bytes that are not a prefix of version %s", info1.Version)
			}
		default:
			t.Fatalf("read on the stale replica: %v", err)
		}
		got, s = mustRead(t, replica, readpath.Request{URI: uri, Offset: off, Length: tBlock})
		if !bytes.Equal(got, v2[off:off+tBlock]) || s.Version != info2.Version {
			t.Fatalf("next read on the replica: version %s, want all of %s", s.Version, info2.Version)
		}
	})
}

// TestFillTallySummary: the read summary of a routed read, from the cache's
// result and the fills it recognised, in the cases the cache can produce.
func TestFillTallySummary(t *testing.T) {
	miss := func(c cache.MissCause, pages, b int64) (r cache.ReadResult) {
		r.Misses[c] = cache.MissCount{Pages: pages, Bytes: b}
		return r
	}
	for _, tc := range []struct {
		name      string
		r         cache.ReadResult
		seen      readpath.Summary // what the tally recognised
		seenPages int64
		want      readpath.Summary
	}{
		{
			name: "all hits",
			r:    cache.ReadResult{Bytes: 100, HitBytes: 100, HitPages: 2},
			want: readpath.Summary{Bytes: 100, LocalHitBytes: 100},
		},
		{
			name:      "all filled from a peer",
			r:         func() cache.ReadResult { r := miss(cache.MissCold, 2, 100); r.Bytes, r.MissBytes = 100, 100; return r }(),
			seen:      readpath.Summary{Bytes: 100, PeerHitBytes: 100},
			seenPages: 2,
			want:      readpath.Summary{Bytes: 100, PeerHitBytes: 100},
		},
		{
			name: "a peer's origin bytes keep the peer's cause",
			r: func() cache.ReadResult {
				r := miss(cache.MissCapacity, 2, 80)
				r.Bytes, r.HitBytes, r.MissBytes, r.HitPages = 100, 20, 80, 1
				return r
			}(),
			seen: func() readpath.Summary {
				s := readpath.Summary{Bytes: 80, PeerHitBytes: 30, OriginBytes: 50}
				s.Misses[readpath.Cold] = readpath.MissCount{Pages: 1, Bytes: 50}
				return s
			}(),
			seenPages: 2,
			want: func() readpath.Summary {
				s := readpath.Summary{Bytes: 100, LocalHitBytes: 20, PeerHitBytes: 30, OriginBytes: 50}
				s.Misses[readpath.Cold] = readpath.MissCount{Pages: 1, Bytes: 50}
				return s
			}(),
		},
		{
			name: "unrecognised misses keep the cache's causes, less the recognised pages",
			r: func() cache.ReadResult {
				r := miss(cache.MissCold, 3, 150)
				r.Bytes, r.MissBytes = 150, 150
				return r
			}(),
			seen:      readpath.Summary{Bytes: 100, PeerHitBytes: 100},
			seenPages: 2,
			want: func() readpath.Summary {
				s := readpath.Summary{Bytes: 150, PeerHitBytes: 100, OriginBytes: 50}
				s.Misses[readpath.Cold] = readpath.MissCount{Pages: 1, Bytes: 50}
				return s
			}(),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := fillTally{sum: tc.seen, pages: tc.seenPages}
			got := ft.summary(tc.r)
			if got != tc.want {
				t.Fatalf("summary\n got %+v\nwant %+v", got, tc.want)
			}
			if err := got.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestReplicaWaiterCountsPeer: a read that waits for another read's fill
// of the same pages (the cache fetches each page once) counts those pages
// where the fill got them, a peer's cache, like the read that fetched
// them; the owner is asked once.
func TestReplicaWaiterCountsPeer(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 1})
	const size = 16 * tBlock
	uri := "s3://bkt/waiter.bin"
	data := randBytes(72, size)
	c.mem.Put(uri, data)
	gate, fake, n, req, missPages := gatedOwnerReplica(t, c, uri, data)
	type result struct {
		got []byte
		s   readpath.Summary
		err error
	}
	results := make(chan result, 2)
	start := func() {
		go func() {
			got, s, err := read(t, n, req)
			results <- result{got, s, err}
		}()
	}
	waitMisses := func(want int64) {
		for i := 0; missPages() < want; i++ {
			if i > 5000 {
				t.Fatalf("the cache counted %d missed pages, want %d", missPages(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	start()
	waitMisses(tBlock / tPage) // the first read fetches the block
	start()
	waitMisses(2 * tBlock / tPage) // the second waits for its pages
	close(gate)
	for range 2 {
		r := <-results
		if r.err != nil || !bytes.Equal(r.got, data[req.Offset:req.End()]) {
			t.Fatalf("read: %v", r.err)
		}
		if r.s.PeerHitBytes != tBlock || r.s.OriginBytes != 0 {
			t.Errorf("summary %+v, want %d peer-hit bytes", r.s, tBlock)
		}
	}
	if calls := fake.calls.Load(); calls != 1 {
		t.Fatalf("the owner was asked %d times, want once", calls)
	}
}

// gatedOwnerReplica makes the one node of c (n0) the replica of a block
// of uri whose owner is a fake peer (zz-owner) serving data from its
// cache once gate is closed. It returns the gate, the fake owner, n0, a
// request for that block, and a count of n0's cache misses.
func gatedOwnerReplica(t *testing.T, c *tcluster, uri string, data []byte) (chan struct{}, *fakePeer, *Node, readpath.Request, func() int64) {
	t.Helper()
	size := int64(len(data))
	gate := make(chan struct{})
	inner := chunkPeer(data, 1<<30, nil, false, false)
	fake := &fakePeer{readRange: func(req *cachev1.ReadRangeRequest, s grpc.ServerStreamingServer[cachev1.ReadRangeResponse]) error {
		<-gate
		if err := inner.readRange(req, s); err != nil {
			return err
		}
		sum := readpath.Summary{Bytes: req.GetLength(), LocalHitBytes: req.GetLength(), Version: req.GetExpectedVersion(), ObjectSize: size}
		return s.Send(&cachev1.ReadRangeResponse{Msg: &cachev1.ReadRangeResponse_Summary{Summary: sum.ToProto()}})
	}}
	c.addMember("zz-owner", startFakePeer(t, fake))
	b := listBlock(t, c, uri, size/tBlock, "zz-owner", "n0")
	n := c.nodes[0]
	missPages := func() int64 {
		var p int64
		for _, m := range n.CacheStats().Misses {
			p += m.Pages
		}
		return p
	}
	return gate, fake, n, readpath.Request{URI: uri, Offset: b * tBlock, Length: tBlock}, missPages
}
