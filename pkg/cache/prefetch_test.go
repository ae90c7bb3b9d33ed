package cache_test

import (
	"context"
	"math"
	"testing"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/cache/cachetest"
)

// A Prefetch (a warm-up, not a reader) is counted apart from the reads: its
// pages are neither hits nor misses in Stats, so the hit ratio operators
// see from HitPages and Misses (locus_cache_hits_total and
// locus_cache_misses_total) is the readers' alone; the sizing estimators
// see only reads too. Its own result still says what it found.
func TestPrefetchIsNotCountedAsReads(t *testing.T) {
	for _, mode := range []string{"ram", "disk"} {
		t.Run(mode, func(t *testing.T) {
			org := cachetest.NewOrigin()
			obj := org.PutGenerated("s3://b/warm", "v", 8*testPage)
			var c *cache.Cache
			sizing := func(cfg *cache.Config) { cfg.PolicySizing = true }
			if mode == "ram" {
				c = newRAM(t, org, 64, sizing)
			} else {
				c = newDisk(t, org, t.TempDir(), 64, sizing)
			}
			ctx := context.Background()
			res, err := c.Prefetch(ctx, obj, 0, 6*testPage)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Misses[cache.MissCold].Pages; got != 6 {
				t.Errorf("first Prefetch result: %d cold misses, want 6", got)
			}
			if res, err = c.Prefetch(ctx, obj, 0, 8*testPage); err != nil {
				t.Fatal(err)
			}
			if res.HitPages != 6 || res.Misses[cache.MissCold].Pages != 2 {
				t.Errorf("second Prefetch result: %d hits, %d cold misses, want 6 and 2", res.HitPages, res.Misses[cache.MissCold].Pages)
			}
			s := c.Stats()
			if s.HitPages != 0 || missPages(s) != 0 {
				t.Errorf("after two Prefetches: Stats has %d hits and %d misses, want 0 and 0", s.HitPages, missPages(s))
			}
			if s.PrefetchCachedPages != 6 || s.PrefetchFetchedPages != 8 {
				t.Errorf("Stats: PrefetchCachedPages %d, PrefetchFetchedPages %d, want 6 and 8", s.PrefetchCachedPages, s.PrefetchFetchedPages)
			}
			if s.PolicySizingReads != 0 {
				t.Errorf("the sizing miniatures replayed %d page reads of Prefetches, want 0", s.PolicySizingReads)
			}
			dst := make([]byte, 2*testPage)
			if _, err := c.Get(ctx, obj, 7*testPage, 2*testPage, dst); err != nil {
				t.Fatal(err)
			}
			if s := c.Stats(); s.HitPages != 1 || missPages(s) != 0 {
				t.Errorf("after a Get of a prefetched page: %d hits and %d misses, want 1 and 0", s.HitPages, missPages(s))
			}
		})
	}
}

func missPages(s cache.Stats) int64 {
	var n int64
	for _, m := range s.Misses {
		n += m.Pages
	}
	return n
}

// A Prefetch does not use a page's RAM-tier copy: RAMHits counts reads
// served from the RAM tier, and a warm-up is not one. Was: every page a
// Prefetch found cached with a RAM copy counted a RAM hit.
func TestPrefetchLeavesTheRAMTierAlone(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/ram-warm", "v", 4*testPage)
	c := newDisk(t, org, t.TempDir(), 16, func(cfg *cache.Config) { cfg.MemoryBytes = 4 * testPage })
	ctx := context.Background()
	dst := make([]byte, obj.Size)
	for range 4 { // cached, hit twice (copied to the RAM tier), then a RAM hit
		if _, err := c.Get(ctx, obj, 0, obj.Size, dst); err != nil {
			t.Fatal(err)
		}
	}
	before := c.Stats()
	if before.RAMPages != 4 || before.RAMHits == 0 {
		t.Fatalf("after four reads: %d RAM pages, %d RAM hits; want 4 and some", before.RAMPages, before.RAMHits)
	}
	res, err := c.Prefetch(ctx, obj, 0, obj.Size)
	if err != nil || res.HitPages != 4 {
		t.Fatalf("Prefetch: %+v, %v; want 4 hit pages", res, err)
	}
	if after := c.Stats(); after.RAMHits != before.RAMHits || after.PrefetchCachedPages != 4 {
		t.Errorf("Prefetch of 4 RAM-tier pages: RAMHits %d -> %d (want unchanged), PrefetchCachedPages %d (want 4)",
			before.RAMHits, after.RAMHits, after.PrefetchCachedPages)
	}
}

// An object of more than 2^32 pages is never cached, so its Prefetch has
// nothing to do: it fetches nothing (it used to read the whole range from
// the origin and count it nowhere).
func TestPrefetchOfAnUncacheableObjectFetchesNothing(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/huge-warm", "v", math.MaxInt64)
	c := newRAM(t, org, 8)
	res, err := c.Prefetch(context.Background(), obj, 0, 3*testPage)
	if err != nil {
		t.Fatal(err)
	}
	if n := org.Calls(); n != 0 || res.Bytes != 0 {
		t.Errorf("Prefetch of a 2^63-byte object: %d origin calls, result %+v; want none", n, res)
	}
	if st := c.Stats(); st.PrefetchFetchedPages != 0 || missPages(st) != 0 || st.OriginBytes != 0 {
		t.Errorf("Stats after it: %+v", st)
	}
}
