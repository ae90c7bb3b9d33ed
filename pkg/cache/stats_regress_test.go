package cache_test

import (
	"context"
	"errors"
	"testing"

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
