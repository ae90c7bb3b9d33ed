package node_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/locuscache/locus/pkg/node"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin/origintest"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// A page whose bytes change on disk under a running owner (a byte flipped
// in its slab) is served as is to the owner's own readers under the
// default verify mode, which trusts pages the process wrote; but a peer
// read checks every page, so the replica that fills from the owner gets
// the origin's bytes, caches those, and the owner's page is repaired.
func TestCorruptOwnerPageNotCopiedToReplica(t *testing.T) {
	mem := origintest.NewMemStore()
	const size = 1 << 20 // one block (nodetest: 1 MiB blocks, 64 KiB pages)
	data := randBytes(41, size)
	c := nodetest.Start(t, nodetest.Options{N: 2, Origin: mem, CacheBytes: 64 << 20})
	uri := "s3://lake/corrupt.bin"
	mem.Put(uri, data)
	pref := c.Preferred(uri, 0)
	if len(pref) != 2 {
		t.Fatalf("preference list of %d nodes, want 2", len(pref))
	}
	index := func(n *node.Node) int {
		for i, m := range c.Nodes {
			if m == n {
				return i
			}
		}
		t.Fatal("not a node of the cluster")
		return -1
	}
	owner, replica := index(pref[0]), index(pref[1])
	ctx := context.Background()
	read := func(i int) []byte {
		t.Helper()
		got, _, err := nodetest.ReadRange(ctx, c.Client(t, i), &cachev1.ReadRangeRequest{Uri: uri, Offset: 0, Length: size})
		if err != nil {
			t.Fatalf("read on node %d: %v", i, err)
		}
		return got
	}
	if !bytes.Equal(read(owner), data) {
		t.Fatal("setup: the owner's first read differs from the object")
	}
	flipIn(t, c.CacheDir(owner), data[100_000:100_064], 10)
	if got := read(owner); bytes.Equal(got, data) {
		t.Log("the owner's own read already saw the change") // not expected under first-read verification, but not wrong
	}
	if got := read(replica); !bytes.Equal(got, data) {
		t.Fatal("the replica's read (filled from the owner) returned the changed bytes")
	}
	if n := c.Nodes[owner].CacheStats().CorruptPages; n != 1 {
		t.Fatalf("owner: %d corrupt pages, want 1 (detected by the peer read)", n)
	}
	if got := read(owner); !bytes.Equal(got, data) {
		t.Fatal("the owner still serves the changed bytes after the peer read repaired its page")
	}
	if got := read(replica); !bytes.Equal(got, data) {
		t.Fatal("the replica's second read (its own cache) differs from the object")
	}
}

// flipIn flips byte k of the first copy of needle in the files under dir.
func flipIn(t *testing.T, dir string, needle []byte, k int) {
	t.Helper()
	var file string
	at := int64(-1)
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || at >= 0 {
			return nil
		}
		b, err := os.ReadFile(p)
		if err == nil {
			if i := bytes.Index(b, needle); i >= 0 {
				file, at = p, int64(i+k)
			}
		}
		return nil
	})
	if at < 0 {
		t.Fatal("the bytes to flip are not in the cache directory")
	}
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b[:], at); err != nil {
		t.Fatal(err)
	}
}
