package cache_test

import (
	"context"
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
