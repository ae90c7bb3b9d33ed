package node

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/locuscache/locus/pkg/readpath"
)

// TestRandomRangesAcrossReplication reads 200 random ranges (any offset up
// to the size, up to four blocks long) from random nodes of a 4-node
// cluster at replication 1, 2 and 3, and checks every answer's bytes and
// summary. After every node has read the whole object once, a second pass
// of random reads is served from the cluster's caches: no origin bytes.
func TestRandomRangesAcrossReplication(t *testing.T) {
	for _, repl := range []int{1, 2, 3} {
		c := newTCluster(t, tclusterOpts{n: 4, repl: repl, memBytes: 16 << 20})
		const size = 20*tBlock + 1234
		data := randBytes(uint64(repl), size)
		uri := "s3://bkt/zz"
		c.mem.Put(uri, data)
		rng := rand.New(rand.NewPCG(1, uint64(repl)))
		for pass := 0; pass < 2; pass++ {
			var origin int64
			for i := 0; i < 200; i++ {
				n := c.nodes[rng.IntN(4)]
				off := rng.Int64N(size + 1)
				length := 1 + rng.Int64N(4*tBlock)
				got, s, err := read(t, n, readpath.Request{URI: uri, Offset: off, Length: length})
				if err != nil {
					t.Fatal(err)
				}
				end := min(size, off+length)
				if !bytes.Equal(got, data[off:end]) {
					t.Fatalf("repl %d pass %d: [%d,+%d) on %s: bytes differ from the object's", repl, pass, off, length, n.ID())
				}
				if err := s.Check(); err != nil || s.Bytes != int64(len(got)) {
					t.Fatalf("repl %d summary %+v: %v", repl, s, err)
				}
				if pass == 1 {
					origin += s.OriginBytes
				}
			}
			if pass == 1 && origin != 0 {
				t.Errorf("repl %d: warm pass read %d bytes from the origin, want 0", repl, origin)
			}
			// Warm the whole object through every node.
			for _, n := range c.nodes {
				mustRead(t, n, readpath.Request{URI: uri, Offset: 0, Length: size})
			}
		}
	}
}
