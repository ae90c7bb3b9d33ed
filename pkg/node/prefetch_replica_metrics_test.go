package node

import (
	"context"
	"testing"

	"github.com/locuscache/locus/pkg/parquetx"
)

// TestReplicaPrefetchNotCountedAsReads: locus_cache_hits_total and
// locus_cache_misses_total are the readers' (their help, and
// locus_cache_prefetch_pages_total's: "Not in locus_cache_hits_total or
// locus_cache_misses_total"). A Prefetch on blocks where this node is a
// replica went through viewRouted -> cache.View, a reader's read: its
// pages were counted as reader misses (and, the second time, hits), and
// not at all in locus_cache_prefetch_pages_total. Was so; now it goes
// through cache.Prefetch with the fill route (found by a review).
func TestReplicaPrefetchNotCountedAsReads(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 2}) // replication 2
	const blocks = 16
	uri := "s3://bkt/replica-prefetch"
	c.mem.Put(uri, randBytes(5, blocks*tBlock))
	b := blockListed(t, c, uri, blocks, "n0", "n1") // n1 is the replica
	rep := c.nodes[1]
	before := rvmScrape(t, rep)
	for range 2 {
		if _, err := rep.Prefetch(context.Background(), PrefetchRequest{URI: uri,
			Ranges: []parquetx.Range{{Offset: b * tBlock, Length: tBlock}}}); err != nil {
			t.Fatal(err)
		}
	}
	d := rvmDelta(before, rvmScrape(t, rep))
	rvmLog(t, "replica after two prefetches of one block", d)
	const pages = tBlock / tPage
	if h, m := d["locus_cache_hits_total{}"], d["locus_cache_misses_total{cause=cold}"]; h != 0 || m != 0 {
		t.Errorf("prefetches counted as reads on the replica: hits %v, cold misses %v (want 0, 0)", h, m)
	}
	if f := d["locus_cache_prefetch_pages_total{result=fetched}"]; f != pages {
		t.Errorf("locus_cache_prefetch_pages_total{result=fetched} %+v, want %d", f, pages)
	}
}
