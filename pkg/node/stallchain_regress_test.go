package node

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/readpath"
)

// TestClientOutwaitsStalledOwners: a client reads through a healthy node
// whose block's list holds two owners that accept the stream and then
// stall. The node is silent while it gives each of them its
// PeerIdleTimeout, then reads the origin itself (owner_unavailable); a
// client with the default ratio of its IdleTimeout to the node's
// PeerIdleTimeout (scaled down here) must still be waiting by then. Was:
// both defaults were 30 s, the client's timer started first (before the
// node's stat and dial), so it always gave up on the healthy node: a
// node failure, and without an Origin an ErrNodeUnavailable read that
// the node would have served (found by a review).
func TestClientOutwaitsStalledOwners(t *testing.T) {
	const peerIdle = 2 * time.Second
	ratio := float64(client.DefaultIdleTimeout) / float64(DefaultPeerIdleTimeout)
	c := newTCluster(t, tclusterOpts{n: 1, repl: 2, mutate: func(_ int, cfg *Config) {
		cfg.PeerIdleTimeout = peerIdle
		cfg.PeerBackoff = time.Minute
	}})
	const size = 16 * tBlock
	data := randBytes(91, size)
	uri := "s3://bkt/stalled-owners"
	c.mem.Put(uri, data)
	stall := func() *fakePeer { return chunkPeer(data, 0, nil, true, false) } // accepts the stream, never answers
	c.addMember("za", startFakePeer(t, stall()))
	c.addMember("zb", startFakePeer(t, stall()))
	var blk int64 = -1
	for b := range int64(size / tBlock) {
		o := c.nodes[0].View().Ring.Owners(ringKey(uri, b), 2)
		if !c.prefers(uri, b, "n0") && len(o) == 2 {
			blk = b
			break
		}
	}
	if blk < 0 {
		t.Skip("setup: n0 is in every block's list")
	}
	cl, err := client.New(client.Config{IdleTimeout: time.Duration(ratio * float64(peerIdle))})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var buf bytes.Buffer
	start := time.Now()
	s, err := cl.ReadRange(context.Background(), c.nodes[0].GRPCAddr(), uri, blk*tBlock, tBlock, &buf)
	if err != nil {
		t.Fatalf("read through a healthy node whose block's owners stall (client idle timeout %v, node peer idle timeout %v): %v after %v",
			time.Duration(ratio*float64(peerIdle)), peerIdle, err, time.Since(start))
	}
	if !bytes.Equal(buf.Bytes(), data[blk*tBlock:(blk+1)*tBlock]) {
		t.Fatal("bytes differ")
	}
	if s.NodeID != "n0" || s.Misses[readpath.OwnerUnavailable].Bytes != tBlock {
		t.Fatalf("summary %+v: want the node's, every byte owner_unavailable", s)
	}
}
