package node_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/node"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/parquetx"
	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// countingOrigin counts the reads one node makes of the shared origin.
type countingOrigin struct {
	origin.Store
	reads, bytes atomic.Int64
}

func (o *countingOrigin) ReadAt(ctx context.Context, uri, version string, p []byte, off int64) (int, error) {
	k, err := o.Store.ReadAt(ctx, uri, version, p, off)
	o.reads.Add(1)
	o.bytes.Add(int64(k))
	return k, err
}

// fillCluster is a nodetest cluster of 3 nodes at the default replication
// (2) over a MemStore, each node reading it through its own counter.
type fillCluster struct {
	*nodetest.Cluster
	mem     *origintest.MemStore
	origins []*countingOrigin
}

func startFillCluster(t *testing.T) *fillCluster {
	t.Helper()
	fc := &fillCluster{mem: origintest.NewMemStore()}
	for range 3 {
		fc.origins = append(fc.origins, &countingOrigin{Store: fc.mem})
	}
	fc.Cluster = nodetest.Start(t, nodetest.Options{N: 3, Origin: fc.mem, Mutate: func(i int, cfg *node.Config) {
		cfg.Origin = fc.origins[i]
	}})
	if r := fc.Replication(); r != 2 {
		t.Fatalf("replication %d, want the default 2", r)
	}
	return fc
}

// resetCounts zeroes the origin counters.
func (fc *fillCluster) resetCounts() {
	for _, o := range fc.origins {
		o.reads.Store(0)
		o.bytes.Store(0)
	}
}

// index returns the position of n in c.Nodes.
func (fc *fillCluster) index(n *node.Node) int {
	for i, m := range fc.Nodes {
		if m == n {
			return i
		}
	}
	panic("not a node of the cluster")
}

// originReads returns node i's origin read count and bytes.
func (fc *fillCluster) originReads(i int) (int64, int64) {
	return fc.origins[i].reads.Load(), fc.origins[i].bytes.Load()
}

// totalOriginBytes sums the bytes every node read from the origin.
func (fc *fillCluster) totalOriginBytes() int64 {
	var n int64
	for _, o := range fc.origins {
		n += o.bytes.Load()
	}
	return n
}

// metric returns the value of a counter series of n's registry, 0 when
// absent.
func metric(t *testing.T, n *node.Node, name, label, value string) float64 {
	t.Helper()
	mfs, err := n.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// pagesOf returns the bytes of the pages holding [off, end) of an object
// of size bytes: what filling that range reads from the origin.
func pagesOf(off, end, size int64) int64 {
	const ps = nodetest.DefaultPageSize
	return min(size, (end+ps-1)/ps*ps) - off/ps*ps
}

// TestReplicaFillsFromOwner: with replication 2 on 3 nodes, a block read
// through its owner (from the origin) and then through its list's second
// node (the replica) is a peer hit there: the replica fills its cache
// from the owner's, the origin sees no new request, the summary and the
// replica's locus_cache_bytes_read_total say peer. The next read on the
// replica is a local hit; a node outside the list still reads through the
// owner.
func TestReplicaFillsFromOwner(t *testing.T) {
	fc := startFillCluster(t)
	const size = 3<<20 + 12345
	for i, rg := range []struct{ off, length int64 }{
		{0, 1 << 20},             // a whole block
		{1<<20 + 1000, 300_000},  // inside a block, unaligned to pages
		{2<<20 + 77, 1<<20 - 77}, // to the end of a block
		{3 << 20, size - 3<<20},  // the last block, a short last page
	} {
		t.Run(fmt.Sprintf("%d_%d", rg.off, rg.length), func(t *testing.T) {
			uri := fmt.Sprintf("s3://bkt/fill-owner-%d.bin", i)
			data := randBytes(uint64(40+i), size)
			fc.mem.Put(uri, data)
			want := data[rg.off : rg.off+rg.length]
			list := fc.Preferred(uri, rg.off)
			if len(list) != 2 {
				t.Fatalf("preference list of %d nodes", len(list))
			}
			owner, replica, other := fc.index(list[0]), fc.index(list[1]), fc.index(fc.NonOwner(uri, rg.off))
			fc.resetCounts()

			got, s := rangeRead(t, fc.Client(t, owner), uri, rg.off, rg.length)
			if !bytes.Equal(got, want) || s.OriginBytes != rg.length || s.Misses[readpath.Cold].Bytes != rg.length {
				t.Fatalf("read on the owner: %+v, want %d cold origin bytes", s, rg.length)
			}
			reads, rbytes := fc.originReads(owner)
			if rbytes != pagesOf(rg.off, rg.off+rg.length, size) {
				t.Fatalf("the owner read %d bytes from the origin, want the %d bytes of the range's pages",
					rbytes, pagesOf(rg.off, rg.off+rg.length, size))
			}
			peerBefore := metric(t, fc.Nodes[replica], "locus_cache_bytes_read_total", "source", "peer")

			got, s = rangeRead(t, fc.Client(t, replica), uri, rg.off, rg.length)
			if !bytes.Equal(got, want) {
				t.Fatal("bytes differ on the replica")
			}
			if s.PeerHitBytes != rg.length || s.OriginBytes != 0 || s.LocalHitBytes != 0 || s.MissPages() != 0 || s.NodeID != fc.Nodes[replica].ID() {
				t.Fatalf("first read on the replica: %+v, want %d peer-hit bytes", s, rg.length)
			}
			if r, b := fc.originReads(replica); r != 0 || b != 0 {
				t.Fatalf("the replica read the origin %d times (%d bytes)", r, b)
			}
			if r, b := fc.originReads(owner); r != reads || b != rbytes {
				t.Fatalf("the owner read the origin again: %d reads, %d bytes (was %d, %d)", r, b, reads, rbytes)
			}
			if d := metric(t, fc.Nodes[replica], "locus_cache_bytes_read_total", "source", "peer") - peerBefore; d != float64(rg.length) {
				t.Fatalf("locus_cache_bytes_read_total{source=\"peer\"} grew by %v on the replica, want %d", d, rg.length)
			}

			got, s = rangeRead(t, fc.Client(t, replica), uri, rg.off, rg.length)
			if !bytes.Equal(got, want) || s.LocalHitBytes != rg.length {
				t.Fatalf("second read on the replica: %+v, want a local hit", s)
			}

			got, s = rangeRead(t, fc.Client(t, other), uri, rg.off, rg.length)
			if !bytes.Equal(got, want) || s.PeerHitBytes != rg.length {
				t.Fatalf("read outside the list: %+v, want a peer hit", s)
			}
			if fc.totalOriginBytes() != fc.origins[owner].bytes.Load() || fc.origins[owner].bytes.Load() != rbytes {
				t.Fatalf("origin bytes by node %d %d %d, want only the owner's %d",
					fc.origins[0].bytes.Load(), fc.origins[1].bytes.Load(), fc.origins[2].bytes.Load(), rbytes)
			}
		})
	}
}

// TestReplicaFirst: a block read on its replica while the owner is cold:
// the owner fetches it from the origin once (serving the replica's peer
// read), the replica's summary says origin bytes with the owner's cause
// (cold), and both nodes hold the pages afterwards.
func TestReplicaFirst(t *testing.T) {
	fc := startFillCluster(t)
	const size = 2<<20 + 999
	uri := "s3://bkt/replica-first.bin"
	data := randBytes(50, size)
	fc.mem.Put(uri, data)
	off, length := int64(1<<20+5000), int64(700_000)
	want := data[off : off+length]
	list := fc.Preferred(uri, off)
	owner, replica := fc.index(list[0]), fc.index(list[1])

	got, s := rangeRead(t, fc.Client(t, replica), uri, off, length)
	if !bytes.Equal(got, want) {
		t.Fatal("bytes differ")
	}
	pages := pagesOf(off, off+length, size)
	if s.OriginBytes != length || s.Misses[readpath.Cold].Bytes != length || s.PeerHitBytes != 0 || s.LocalHitBytes != 0 {
		t.Fatalf("read on the replica, owner cold: %+v, want %d cold origin bytes", s, length)
	}
	if wantPages := pages / nodetest.DefaultPageSize; s.Misses[readpath.Cold].Pages != wantPages {
		t.Fatalf("cold pages %d, want %d", s.Misses[readpath.Cold].Pages, wantPages)
	}
	if r, b := fc.originReads(replica); r != 0 || b != 0 {
		t.Fatalf("the replica read the origin: %d reads, %d bytes", r, b)
	}
	ownerReads, ownerBytes := fc.originReads(owner)
	if ownerBytes != pages || ownerReads < 1 || ownerReads > pages/nodetest.DefaultPageSize {
		t.Fatalf("the owner read %d bytes in %d requests, want the %d bytes of the pages, each once", ownerBytes, ownerReads, pages)
	}
	for _, i := range []int{owner, replica} {
		got, s := rangeRead(t, fc.Client(t, i), uri, off, length)
		if !bytes.Equal(got, want) || s.LocalHitBytes != length {
			t.Fatalf("read on %s afterwards: %+v, want a local hit", fc.Nodes[i].ID(), s)
		}
	}
	if fc.totalOriginBytes() != pages {
		t.Fatalf("the origin served %d bytes, want %d", fc.totalOriginBytes(), pages)
	}
}

// TestReplicaConcurrent: many concurrent readers of one block on its
// replica fetch each page once: from the origin (by the owner) when the
// owner is cold, from the owner when it is warm. Every reader's summary
// says so, including the readers that waited for another's fill: no
// reader of a warm owner reports origin bytes.
func TestReplicaConcurrent(t *testing.T) {
	fc := startFillCluster(t)
	const size = 2 << 20
	const readers = 16
	run := func(t *testing.T, uri string, off, length int64, check func(readpath.Summary) error) {
		t.Helper()
		data := randBytes(uint64(len(uri)), size)
		var wg sync.WaitGroup
		errs := make(chan error, readers)
		replica := fc.index(fc.Preferred(uri, off)[1])
		for r := range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o := off + int64(r%4)*1000 // overlapping, differently aligned
				l := length - int64(r%4)*1000
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				got, s, err := nodetest.ReadRange(ctx, fc.Client(t, replica), &cachev1.ReadRangeRequest{Uri: uri, Offset: o, Length: l})
				switch {
				case err != nil:
					errs <- err
				case !bytes.Equal(got, data[o:o+l]):
					errs <- fmt.Errorf("reader %d: bytes differ", r)
				case s.Check() != nil || s.Bytes != l:
					errs <- fmt.Errorf("reader %d: summary %+v: %v", r, s, s.Check())
				default:
					if err := check(s); err != nil {
						errs <- fmt.Errorf("reader %d: %+v: %w", r, s, err)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}

	t.Run("owner cold", func(t *testing.T) {
		uri := "s3://bkt/conc-cold.bin"
		fc.mem.Put(uri, randBytes(uint64(len(uri)), size))
		before := fc.totalOriginBytes()
		list := fc.Preferred(uri, 0)
		run(t, uri, 0, 1<<20, func(s readpath.Summary) error {
			if s.Misses[readpath.OwnerUnavailable].Bytes != 0 || s.OriginBytes != s.Misses[readpath.Cold].Bytes {
				return fmt.Errorf("origin bytes not all the owner's cold misses")
			}
			return nil
		})
		if r, b := fc.originReads(fc.index(list[1])); r != 0 || b != 0 {
			t.Fatalf("the replica read the origin: %d reads, %d bytes", r, b)
		}
		if d := fc.totalOriginBytes() - before; d != 1<<20 {
			t.Fatalf("the origin served %d bytes for a 1 MiB block, want each page once", d)
		}
	})

	t.Run("owner warm", func(t *testing.T) {
		uri := "s3://bkt/conc-warm.bin"
		fc.mem.Put(uri, randBytes(uint64(len(uri)), size))
		list := fc.Preferred(uri, 1<<20)
		owner := fc.index(list[0])
		rangeRead(t, fc.Client(t, owner), uri, 1<<20, 1<<20)
		before := fc.totalOriginBytes()
		served := metric(t, list[0], "locus_peer_served_bytes_total", "source", "local")
		run(t, uri, 1<<20, 1<<20, func(s readpath.Summary) error {
			if s.OriginBytes != 0 || s.LocalHitBytes+s.PeerHitBytes != s.Bytes {
				return fmt.Errorf("want only local and peer hits")
			}
			return nil
		})
		if d := fc.totalOriginBytes() - before; d != 0 {
			t.Fatalf("the origin served %d bytes with the owner warm", d)
		}
		if d := metric(t, list[0], "locus_peer_served_bytes_total", "source", "local") - served; d != 1<<20 {
			t.Fatalf("the owner served %v bytes to peer reads, want each page of the block once (%d)", d, 1<<20)
		}
	})
}

// TestReplicaPrefetch: Prefetch on a replica fills the replica through the
// owner, warming both when the owner is cold (fetched bytes are the
// owner's origin bytes), and counts what the owner had as cached.
func TestReplicaPrefetch(t *testing.T) {
	fc := startFillCluster(t)
	const size = 2 << 20
	uri := "s3://bkt/prefetch-replica.bin"
	data := randBytes(60, size)
	fc.mem.Put(uri, data)
	list := fc.Preferred(uri, 0)
	owner, replica := fc.index(list[0]), fc.index(list[1])
	ctx := context.Background()
	const length = 600_000

	res, err := fc.Nodes[replica].Prefetch(ctx, node.PrefetchRequest{URI: uri, Ranges: []parquetx.Range{{Offset: 0, Length: length}}})
	if err != nil || res.FetchedBytes != length || res.CachedBytes != 0 {
		t.Fatalf("prefetch on the replica, owner cold: %+v %v, want %d fetched", res, err, length)
	}
	if r, _ := fc.originReads(replica); r != 0 {
		t.Fatalf("the replica read the origin %d times", r)
	}
	for _, i := range []int{owner, replica} {
		if got, s := rangeRead(t, fc.Client(t, i), uri, 0, length); !bytes.Equal(got, data[:length]) || s.LocalHitBytes != length {
			t.Fatalf("read on %s after the prefetch: %+v, want a local hit", fc.Nodes[i].ID(), s)
		}
	}
	res, err = fc.Nodes[replica].Prefetch(ctx, node.PrefetchRequest{URI: uri, Ranges: []parquetx.Range{{Offset: 0, Length: length}}})
	if err != nil || res.FetchedBytes != 0 || res.CachedBytes != length {
		t.Fatalf("second prefetch: %+v %v, want all cached", res, err)
	}

	// The owner warm, the replica cold: cached (on the owner), not fetched.
	rangeRead(t, fc.Client(t, owner), uri, length, length)
	before := fc.totalOriginBytes()
	res, err = fc.Nodes[replica].Prefetch(ctx, node.PrefetchRequest{URI: uri, Ranges: []parquetx.Range{{Offset: length, Length: length}}})
	if err != nil || res.FetchedBytes != 0 || res.CachedBytes != length || fc.totalOriginBytes() != before {
		t.Fatalf("prefetch on the replica, owner warm: %+v %v (origin +%d bytes), want all cached", res, err, fc.totalOriginBytes()-before)
	}
	if _, s := rangeRead(t, fc.Client(t, replica), uri, length, length); s.LocalHitBytes != length {
		t.Fatalf("read on the replica after the prefetch: %+v, want a local hit", s)
	}
}
