package node

import (
	"context"
	"fmt"
	"testing"
	"time"

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
				var o, r time.Duration
				for i := 0; b.Loop(); i++ {
					t0 := time.Now()
					if i%2 == 0 {
						owner(b)
						t1 := time.Now()
						replica(b)
						o, r = o+t1.Sub(t0), r+time.Since(t1)
					} else {
						replica(b)
						t1 := time.Now()
						owner(b)
						r, o = r+t1.Sub(t0), o+time.Since(t1)
					}
				}
				b.ReportMetric(o.Seconds()/r.Seconds(), "replica/owner")
			})
		})
	}
}
