package node

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// TestSlowReaderLongStream: a reader (the task, or the gRPC/S3 client on
// the other end) that pauses longer than PeerIdleTimeout while the owner's
// stream is held back by flow control is not the owner's fault: the owner
// stays up and its bytes stay peer hits. Was: the idle timer ran during
// emit, so the healthy owner's stream was cancelled as idle, the owner
// marked down for PeerBackoff, and the rest of the range counted
// owner_unavailable. Fixed: the timer is stopped while emit runs.
func TestSlowReaderLongStream(t *testing.T) {
	const bigBlock = 32 << 20
	c := newTCluster(t, tclusterOpts{n: 2, repl: 1, memBytes: 96 << 20, mutate: func(i int, cfg *Config) {
		cfg.BlockSize = bigBlock
		// Long enough for a first chunk under -race on a loaded machine
		// (a CI run with 300 ms saw every byte come from the origin), and
		// well under the consumer's pause below.
		cfg.PeerIdleTimeout = 2 * time.Second
		cfg.PeerBackoff = time.Minute
	}})
	const size = 4 * bigBlock
	data := randBytes(12, size)
	uri := "s3://bkt/slowreader-long"
	c.mem.Put(uri, data)
	n0, n1 := c.nodes[0], c.nodes[1]
	var off int64 = -1
	for b := int64(0); b < 4; b++ {
		if o := n0.View().Ring.Owners(ringKey(uri, b), 1); o[0].ID == n1.ID() {
			off = b * bigBlock
			break
		}
	}
	if off < 0 {
		t.Skip("setup: n1 owns no block")
	}
	mustRead(t, n1, readpath.Request{URI: uri, Offset: off, Length: bigBlock})
	mustRead(t, n0, readpath.Request{URI: uri, Offset: off, Length: 1 << 20}) // n0 dials n1
	var buf bytes.Buffer
	var got int64
	slept := false
	s, err := n0.Read(context.Background(), readpath.Request{URI: uri, Offset: off, Length: bigBlock}, func(p []byte) error {
		got += int64(len(p))
		if !slept && got > 4<<20 {
			slept = true
			time.Sleep(5 * time.Second) // the consumer pauses; the owner is healthy
		}
		buf.Write(p)
		return nil
	})
	t.Logf("summary %+v err %v", s, err)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), data[off:off+bigBlock]) {
		t.Fatal("bytes differ")
	}
	if ou := s.Misses[readpath.OwnerUnavailable]; ou.Bytes != 0 {
		t.Errorf("a paused consumer turned %d bytes into owner_unavailable misses", ou.Bytes)
	}
	if n0.peers.down(n1.GRPCAddr()) {
		t.Errorf("n0 marked the healthy owner n1 down because its own reader paused")
	}
}

// TestCompletePeerFailureAsksNoOne: the first node of the list sends every
// byte of the range, then its stream breaks before the summary (it was
// killed right after its last chunk). Nothing is left to read, and no one
// is asked. Was: readRemote asked the next node for a zero-length range
// (INVALID_ARGUMENT there, a failed peer read, a warning).
func TestCompletePeerFailureAsksNoOne(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 1, repl: 2})
	const size = 16 * tBlock
	data := randBytes(13, size)
	uri := "s3://bkt/complete-then-fail"
	c.mem.Put(uri, data)
	a := chunkPeer(data, 1<<30, status.Error(codes.Unavailable, "killed after the last chunk"), false, false)
	b := &fakePeer{readRange: func(req *cachev1.ReadRangeRequest, s grpc.ServerStreamingServer[cachev1.ReadRangeResponse]) error {
		return status.Errorf(codes.InvalidArgument, "asked for %d bytes at %d", req.Length, req.Offset)
	}}
	c.addMember("fa", startFakePeer(t, a))
	c.addMember("fb", startFakePeer(t, b))
	blk := int64(-1)
	for x := int64(0); x < size/tBlock; x++ {
		o := c.nodes[0].View().Ring.Owners(ringKey(uri, x), 2)
		if o[0].ID == "fa" && o[1].ID == "fb" {
			blk = x
			break
		}
	}
	if blk < 0 {
		t.Skip("setup: no block listed [fa, fb]")
	}
	off := blk * tBlock
	got, s := mustRead(t, c.nodes[0], readpath.Request{URI: uri, Offset: off, Length: tBlock})
	if !bytes.Equal(got, data[off:off+tBlock]) {
		t.Fatal("bytes differ")
	}
	t.Logf("summary %+v", s)
	if n := b.calls.Load(); n != 0 {
		t.Errorf("the second node of the list was asked %d times for a range already complete", n)
	}
}

// TestEmitErrorUnchangedThroughPeer: Read returns emit's error unchanged,
// also when a peer served the bytes. Was: peers.read wrapped the error of
// readVersion's emit (already an emitError) in a second emitError, and
// Read unwraps one, so the caller got emitError{its error}.
func TestEmitErrorUnchangedThroughPeer(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 2, repl: 1})
	const size = 16 * tBlock
	uri := "s3://bkt/emit-err"
	c.mem.Put(uri, randBytes(14, size))
	bs := blocksOf(c, uri, 0, size, c.nodes[1].ID())
	if len(bs) == 0 {
		t.Fatal("setup: n1 owns no block")
	}
	stop := errors.New("reader had enough")
	_, err := c.nodes[0].Read(context.Background(), readpath.Request{URI: uri, Offset: bs[0] * tBlock, Length: tBlock},
		func([]byte) error { return stop })
	if err != stop {
		t.Fatalf("Read returned %T %v, want emit's error unchanged", err, err)
	}
}

// TestPeerWaiterOnRoutedFillIsNotOrigin: on a replica, a peer read
// (another node reading through the replica, its owner marked down on that
// node) waits for a page the replica is filling from the owner's cache;
// its summary counts those bytes as the fill was served (peer hits), not
// as origin bytes the origin never sent. Was: the peer read's summary
// took the cache's own cause (origin, cold). Fixed: peer reads served
// locally use the fill tally too.
func TestPeerWaiterOnRoutedFillIsNotOrigin(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 1})
	const size = 16 * tBlock
	uri := "s3://bkt/peer-waiter.bin"
	data := randBytes(73, size)
	c.mem.Put(uri, data)
	gate, fake, n, req, missPages := gatedOwnerReplica(t, c, uri, data)
	waitMisses := func(want int64) {
		for i := 0; missPages() < want; i++ {
			if i > 5000 {
				t.Fatalf("the cache counted %d missed pages, want %d", missPages(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	type result struct {
		got []byte
		s   readpath.Summary
		err error
	}
	own, peer := make(chan result, 1), make(chan result, 1)
	go func() { got, s, err := read(t, n, req); own <- result{got, s, err} }()
	waitMisses(tBlock / tPage)
	preq := req
	preq.Peer = true
	go func() { got, s, err := read(t, n, preq); peer <- result{got, s, err} }()
	waitMisses(2 * tBlock / tPage)
	close(gate)
	r := <-own
	if r.err != nil || !bytes.Equal(r.got, data[req.Offset:req.End()]) {
		t.Fatalf("own read: %v", r.err)
	}
	p := <-peer
	if p.err != nil || !bytes.Equal(p.got, data[req.Offset:req.End()]) {
		t.Fatalf("peer read: %v", p.err)
	}
	if calls := fake.calls.Load(); calls != 1 {
		t.Fatalf("the owner was asked %d times, want once", calls)
	}
	if _, reads, _, _ := c.mem.Counts(); reads != 0 {
		t.Fatalf("setup: the origin was read %d times", reads)
	}
	if p.s.OriginBytes != 0 {
		t.Errorf("peer read summary %+v: %d origin bytes, but the origin was never read (the owner's cache served them)", p.s, p.s.OriginBytes)
	}
}
