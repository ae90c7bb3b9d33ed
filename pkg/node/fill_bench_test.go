package node

import (
	"context"
	"fmt"
	"testing"

	"github.com/locuscache/locus/internal/benchpair"
	"github.com/locuscache/locus/pkg/readpath"
)

// BenchmarkReplicaHit measures what recognising fills costs a replica's
// cached reads (fillTally: one fill-log lookup per page) against the
// owner's cached reads of the same size, in the same run: two in-process
// nodes with replication 2 (every block's list holds both), a 4 MiB block
// owned by n0 and one where n0 is second, both cached on n0; Node.Read
// with a discarding emit.
//
//	go test -run '^$' -bench ReplicaHit -benchtime 200x ./pkg/node
//
// The paired sub-benchmark alternates the two and reports replica/owner,
// the ratio of their rates.
func BenchmarkReplicaHit(b *testing.B) {
	const block = 4 << 20
	for _, page := range []int{16 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("page=%dKiB", page>>10), func(b *testing.B) {
			c := newTCluster(b, tclusterOpts{n: 2, memBytes: 64 << 20, mutate: func(_ int, cfg *Config) {
				cfg.PageSize, cfg.BlockSize = page, block
			}})
			uri := "s3://bkt/bench-replica.bin"
			c.mem.Put(uri, randBytes(90, 16*block))
			n := c.nodes[0]
			var own, rep int64 = -1, -1
			for blk := int64(0); blk < 16 && (own < 0 || rep < 0); blk++ {
				if c.nodes[0].View().Ring.Owner(ringKey(uri, blk)).ID == n.ID() {
					own = max(own, blk)
				} else {
					rep = max(rep, blk)
				}
			}
			if own < 0 || rep < 0 {
				b.Fatal("setup: no owned or no replica block")
			}
			ctx := context.Background()
			read := func(b *testing.B, blk int64, check func(readpath.Summary) bool) {
				s, err := n.Read(ctx, readpath.Request{URI: uri, Offset: blk * block, Length: block}, func([]byte) error { return nil })
				if err != nil || !check(s) {
					b.Fatalf("read of block %d: %v %+v", blk, err, s)
				}
			}
			owner := func(b *testing.B) { read(b, own, func(s readpath.Summary) bool { return s.LocalHitBytes == block }) }
			replica := func(b *testing.B) { read(b, rep, func(s readpath.Summary) bool { return s.LocalHitBytes == block }) }
			read(b, own, func(readpath.Summary) bool { return true })
			read(b, rep, func(s readpath.Summary) bool { return s.PeerHitBytes+s.OriginBytes == block })
			b.Run("owner", func(b *testing.B) {
				b.SetBytes(block)
				b.ReportAllocs()
				for b.Loop() {
					owner(b)
				}
			})
			b.Run("replica", func(b *testing.B) {
				b.SetBytes(block)
				b.ReportAllocs()
				for b.Loop() {
					replica(b)
				}
			})
			b.Run("paired", func(b *testing.B) {
				b.SetBytes(2 * block)
				o, r := benchpair.Alternate(b, owner, replica)
				b.ReportMetric(o.Seconds()/r.Seconds(), "replica/owner")
			})
		})
	}
}

// BenchmarkPeerServe measures what checking every page's checksum costs a
// peer read served from a disk cache (cache.ViewVerified) against the same
// node's own read of the same cached 4 MiB block (cache.View, pages this
// process wrote trusted), in-process: Node.Read with Peer set or not, an
// emit that copies the bytes out (as the gRPC server copies them into its
// messages). Only the owner's side is measured: the transfer that a real
// peer read adds is left out.
//
//	go test -run '^$' -bench PeerServe -benchtime 200x ./pkg/node
func BenchmarkPeerServe(b *testing.B) {
	const block = 4 << 20
	c := newTCluster(b, tclusterOpts{n: 1, mutate: func(_ int, cfg *Config) {
		cfg.PageSize, cfg.BlockSize = 1<<20, block
		cfg.CacheDir, cfg.CacheSize = b.TempDir(), 64<<20
	}})
	uri := "s3://bkt/bench-peer.bin"
	c.mem.Put(uri, randBytes(91, block))
	n := c.nodes[0]
	ctx := context.Background()
	buf := make([]byte, 1<<20)
	read := func(b *testing.B, peer bool) {
		s, err := n.Read(ctx, readpath.Request{URI: uri, Length: block, Peer: peer}, func(p []byte) error { copy(buf, p); return nil })
		if err != nil || s.LocalHitBytes != block {
			b.Fatalf("read (peer %v): %v %+v", peer, err, s)
		}
	}
	if _, err := n.Read(ctx, readpath.Request{URI: uri, Length: block}, func([]byte) error { return nil }); err != nil {
		b.Fatal(err)
	}
	for _, peer := range []bool{false, true} {
		name := "own-read"
		if peer {
			name = "peer-read"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(block)
			b.ReportAllocs()
			for b.Loop() {
				read(b, peer)
			}
		})
	}
}
