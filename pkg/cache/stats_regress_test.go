package cache_test

import (
	"context"
	"errors"
	"testing"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/cache/cachetest"
)

// TestStatsHitsCountServedPages: Stats.HitPages ("pages served from this
// node's cache" on /metrics) counts the pages a read handed out. Was: plan
// counted every page it pinned into a read window, and readWindow took
// counts back only for a retried window, so a reader that stopped after
// one page was counted as if it had read its whole window (up to
// FetchParallelism x MaxFetchBytes). Fixed: a window that stops takes back
// the hits of the pages it did not hand out.
func TestStatsHitsCountServedPages(t *testing.T) {
	org := cachetest.NewOrigin()
	const pages = 1024
	obj := org.PutGenerated("s3://bkt/obj", "v1", pages*testPage)
	c := newRAM(t, org, 2*pages)
	mustGet(t, c, obj, 0, pages*testPage) // every page cached
	before := c.Stats()
	stop := errors.New("enough")
	handed := 0
	res, err := c.View(context.Background(), obj, 0, pages*testPage, func(p []byte) error {
		handed++
		return stop
	})
	if !errors.Is(err, stop) {
		t.Fatalf("View: %v", err)
	}
	after := c.Stats()
	if got := after.HitPages - before.HitPages; got != int64(handed) {
		t.Errorf("View handed out %d page(s) and stopped (result: %d hit pages); Stats.HitPages rose by %d", handed, res.HitPages, got)
	}
}

// TestStatsRAMHitsCountServedPages: Stats.RAMHits (pages served from the
// RAM tier) counts the RAM-tier pages a read handed out, as HitPages
// does. Was: the RAM tier counted a hit for every page a window pinned,
// and a read that stopped after one page did not take the others back.
func TestStatsRAMHitsCountServedPages(t *testing.T) {
	org := cachetest.NewOrigin()
	const pages = 64
	obj := org.PutGenerated("s3://bkt/ram-stop", "v1", pages*testPage)
	c := newDisk(t, org, t.TempDir(), 2*pages, func(cfg *cache.Config) { cfg.MemoryBytes = 2 * pages * testPage })
	for range 3 { // cached, then hit twice: every page copied to the RAM tier
		mustGet(t, c, obj, 0, pages*testPage)
	}
	before := c.Stats()
	if before.RAMPages != pages {
		t.Fatalf("%d pages in the RAM tier, want %d", before.RAMPages, pages)
	}
	stop := errors.New("enough")
	handed := 0
	if _, err := c.View(context.Background(), obj, 0, pages*testPage, func([]byte) error {
		handed++
		return stop
	}); !errors.Is(err, stop) {
		t.Fatalf("View: %v", err)
	}
	after := c.Stats()
	if got := after.RAMHits - before.RAMHits; got != int64(handed) {
		t.Errorf("View handed out %d RAM-tier page(s) and stopped; Stats.RAMHits rose by %d", handed, got)
	}
	if got := after.HitPages - before.HitPages; got != int64(handed) {
		t.Errorf("View handed out %d page(s) and stopped; Stats.HitPages rose by %d", handed, got)
	}
}
