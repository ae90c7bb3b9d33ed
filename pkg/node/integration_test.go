package node_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

func randBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n+8)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b[:n:n]
}

// originBytes reads [off, off+length) straight from the origin (truncated
// at the end), the reference the cache must match.
func originBytes(t testing.TB, s origin.Store, uri string, off, length int64) []byte {
	t.Helper()
	info, err := s.Stat(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	end := min(info.Size, off+length)
	p := make([]byte, max(0, end-off))
	n, err := s.ReadAt(context.Background(), uri, info.Version, p, off)
	if err != nil && !(err == io.EOF && n == len(p)) {
		t.Fatal(err)
	}
	return p[:n]
}

func rangeRead(t testing.TB, c cachev1.CacheServiceClient, uri string, off, length int64) ([]byte, readpath.Summary) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, s, err := nodetest.ReadRange(ctx, c, &cachev1.ReadRangeRequest{Uri: uri, Offset: off, Length: length})
	if err != nil {
		t.Fatalf("ReadRange(%s, %d, %d): %v", uri, off, length, err)
	}
	return b, s
}

// TestVersityRangeReads: range reads through a node are byte-identical to
// reading versitygw directly, and a second read is a local hit.
func TestVersityRangeReads(t *testing.T) {
	gw := origintest.StartVersityGW(t)
	const size = 5<<20 + 4321
	gw.Put(t, "data/obj.bin", randBytes(1, size))
	uri := gw.URI("data/obj.bin")
	c := nodetest.Start(t, nodetest.Options{N: 1, VersityGW: gw})
	cl := c.Client(t, 0)
	direct := gw.Store(t)
	for _, r := range []struct{ off, length int64 }{
		{0, size}, {0, 1}, {17, 1000}, {nodetest.DefaultPageSize - 1, 2}, {1<<20 - 5, 3 << 20},
		{size - 1, 1}, {size - 100, 1 << 20}, {3 << 20, 64 << 10},
	} {
		want := originBytes(t, direct, uri, r.off, r.length)
		got, s := rangeRead(t, cl, uri, r.off, r.length)
		if !bytes.Equal(got, want) {
			t.Fatalf("[%d,+%d): %d bytes differ from the origin's %d", r.off, r.length, len(got), len(want))
		}
		if s.ObjectSize != size || s.Version == "" || s.NodeID != "node0" {
			t.Fatalf("summary %+v", s)
		}
		got, s = rangeRead(t, cl, uri, r.off, r.length)
		if !bytes.Equal(got, want) {
			t.Fatal("second read differs")
		}
		if s.LocalHitBytes != int64(len(want)) || s.OriginBytes != 0 {
			t.Fatalf("second read of [%d,+%d): %+v, want all local hits", r.off, r.length, s)
		}
	}
}

// TestVersityOverwrite: after an object is overwritten, every read returns
// one version whole (never a mix), and once the stat TTL passed, the new
// one; partially cached objects included.
func TestVersityOverwrite(t *testing.T) {
	gw := origintest.StartVersityGW(t)
	const size = 3<<20 + 99
	v1, v2 := randBytes(2, size), randBytes(3, size)
	gw.Put(t, "ow.bin", v1)
	uri := gw.URI("ow.bin")
	c := nodetest.Start(t, nodetest.Options{N: 1, VersityGW: gw, StatTTL: 300 * time.Millisecond})
	cl := c.Client(t, 0)
	rangeRead(t, cl, uri, 0, size/2) // half cached at v1
	etag2 := gw.Put(t, "ow.bin", v2)
	deadline := time.Now().Add(5 * time.Second)
	sawNew := false
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got, s, err := nodetest.ReadRange(ctx, cl, &cachev1.ReadRangeRequest{Uri: uri, Offset: 0, Length: size})
		cancel()
		switch {
		case err != nil:
			// A read that met the change after its first byte fails; it
			// must not have delivered bytes of both versions.
			if !bytes.Equal(got, v1[:len(got)]) && !bytes.Equal(got, v2[:len(got)]) {
				t.Fatalf("failed read delivered mixed bytes (%v)", err)
			}
		case bytes.Equal(got, v2):
			if s.Version != etag2 {
				t.Fatalf("v2 bytes under version %s, want %s", s.Version, etag2)
			}
			sawNew = true
		case bytes.Equal(got, v1):
			if sawNew {
				t.Fatal("old version served after the new one")
			}
		default:
			t.Fatal("read returned bytes that are neither version: mixed")
		}
		if sawNew {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !sawNew {
		t.Fatal("new version never served")
	}
	got, s := rangeRead(t, cl, uri, 0, size)
	if !bytes.Equal(got, v2) || s.Version != etag2 {
		t.Fatal("after the change: not v2")
	}
}

// TestVersityThreeNodes: with three nodes (replication 2, the default), a
// read on the node outside the block's preference list is served through
// the owner: a miss the first time, a peer hit the second.
func TestVersityThreeNodes(t *testing.T) {
	gw := origintest.StartVersityGW(t)
	const size = 6 << 20
	data := randBytes(4, size)
	gw.Put(t, "three.bin", data)
	uri := gw.URI("three.bin")
	c := nodetest.Start(t, nodetest.Options{N: 3, VersityGW: gw})
	for _, off := range []int64{0, 2 << 20, 5<<20 + 12345} {
		owner, other := c.Owner(uri, off), c.NonOwner(uri, off)
		var oi int
		for i, n := range c.Nodes {
			if n == other {
				oi = i
			}
		}
		cl := c.Client(t, oi)
		length := min(int64(100_000), (off/(1<<20)+1)*(1<<20)-off) // within the block
		got, s := rangeRead(t, cl, uri, off, length)
		if !bytes.Equal(got, data[off:off+length]) {
			t.Fatal("bytes differ")
		}
		if s.OriginBytes != length || s.Misses[readpath.Cold].Bytes != length {
			t.Fatalf("first read on non-owner %s (owner %s): %+v, want cold misses", other.ID(), owner.ID(), s)
		}
		got, s = rangeRead(t, cl, uri, off, length)
		if !bytes.Equal(got, data[off:off+length]) {
			t.Fatal("bytes differ")
		}
		if s.PeerHitBytes != length || s.NodeID != other.ID() {
			t.Fatalf("second read on non-owner %s: %+v, want a peer hit", other.ID(), s)
		}
		if other.CacheStats().UsedBytes != 0 && owner.CacheStats().UsedBytes == 0 {
			t.Fatal("pages cached on the non-owner, not the owner")
		}
	}
	// The whole object from each node: equal to the origin's bytes.
	for i := range c.Nodes {
		got, s := rangeRead(t, c.Client(t, i), uri, 0, size)
		if !bytes.Equal(got, data) || s.LocalHitBytes+s.PeerHitBytes+s.OriginBytes != size {
			t.Fatalf("node %d: whole read differs (%+v)", i, s)
		}
	}
}

// TestConcurrentReadsUnderEviction: many concurrent streams over a cache far
// smaller than the data, so pages are evicted and their slots reused while
// other streams send from them: every stream must still return exactly the
// origin's bytes (chunks are sent from pinned pages without copying).
func TestConcurrentReadsUnderEviction(t *testing.T) {
	mem := origintest.NewMemStore()
	const objects, size = 6, 1 << 20
	var uris []string
	var datas [][]byte
	for i := range objects {
		uri := fmt.Sprintf("s3://bucket/evict-%d.bin", i)
		d := randBytes(uint64(100+i), size)
		mem.Put(uri, d)
		uris, datas = append(uris, uri), append(datas, d)
	}
	c := nodetest.Start(t, nodetest.Options{N: 2, Origin: mem, MemoryBytes: 1 << 20, PageSize: 32 << 10, BlockSize: 256 << 10})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := c.Client(t, w%2)
			for r := range 3 {
				i := (w + r) % objects
				off := int64((w * 7919 * (r + 1)) % (size / 2))
				got, s, err := nodetest.ReadRange(context.Background(), cl, &cachev1.ReadRangeRequest{Uri: uris[i], Offset: off, Length: size})
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, datas[i][off:]) {
					errs <- fmt.Errorf("object %d from %d: bytes differ (%+v)", i, off, s)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if ev := c.Nodes[0].CacheStats().Evictions + c.Nodes[1].CacheStats().Evictions; ev == 0 {
		t.Fatal("no evictions: the test did not stress page reuse")
	}
}
