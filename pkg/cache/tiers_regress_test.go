package cache_test

// Regression tests from a third adversarial review of the page cache
// (tiers, accounting, restart): each failed before its fix.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/cache/cachetest"
)

// TestStatsWaitsCountServedPages: a read that waits for another
// read's flights and stops after its first page must not count the pages
// it never handed out, as it does not for hits (TestStatsHitsCountServedPages).
// Was: readWindow took back only hits; a waiter's misses stay counted,
// although the origin requests behind them are the leader's (which counts
// them itself), so the same stopped View counts 1 access over cached pages
// and a whole window over pages in flight.
func TestStatsWaitsCountServedPages(t *testing.T) {
	org := cachetest.NewOrigin()
	const pages = 64
	obj := org.PutGenerated("s3://rv/wait", "v1", pages*testPage)
	org.Delay = 300 * time.Millisecond
	c := newRAM(t, org, 2*pages)
	leader := make(chan error, 1)
	go func() {
		_, err := c.Get(context.Background(), obj, 0, obj.Size, make([]byte, obj.Size))
		leader <- err
	}()
	// Wait until the leader registered its flights (its origin request is
	// in progress).
	for deadline := time.Now().Add(5 * time.Second); org.Calls() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("leader never asked the origin")
		}
		time.Sleep(time.Millisecond)
	}
	stop := errors.New("enough")
	handed := 0
	res, err := c.View(context.Background(), obj, 0, obj.Size, func(p []byte) error {
		handed++
		return stop
	})
	if !errors.Is(err, stop) {
		t.Fatalf("View: %v", err)
	}
	if err := <-leader; err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	var misses int64
	for _, m := range st.Misses {
		misses += m.Pages
	}
	// The leader asked for every page (pages misses); the waiter handed
	// out one page (res: 1 miss).
	if want := int64(pages + handed); st.HitPages+misses != want {
		t.Errorf("leader read %d pages, waiter handed out %d (its result: %d miss pages); Stats count %d hits + %d misses, want %d accesses",
			pages, handed, res.Misses[cache.MissCold].Pages, st.HitPages, misses, want)
	}
}

// TestNoCorruptMissesWithoutCorruption: a RAM-only cache has no
// checksum to fail (CorruptPages stays 0), so no miss may be filed as
// MissCorrupt ("the page was cached but failed its checksum"). Was: the
// history's Bloom filters answer for the corrupt fingerprint too, and
// once evictions have filled them a cold miss is filed as corrupt by a
// false positive: locus_cache_misses_total{cause="corrupt"} rises on a
// healthy node.
func TestNoCorruptMissesWithoutCorruption(t *testing.T) {
	org := cachetest.NewOrigin()
	c := newRAM(t, org, 64) // default HistoryPages
	ctx := context.Background()
	for i := 0; i < 400; i++ {
		obj := org.PutGenerated(fmt.Sprintf("s3://rv/c%d", i), "v1", 64*testPage)
		if _, err := c.Prefetch(ctx, obj, 0, obj.Size); err != nil {
			t.Fatal(err)
		}
	}
	st := c.Stats()
	if st.CorruptPages != 0 {
		t.Fatalf("%d corrupt pages in a RAM cache", st.CorruptPages)
	}
	if m := st.Misses[cache.MissCorrupt]; m.Pages != 0 {
		t.Errorf("no page ever failed a checksum, yet %d misses are filed as corrupt (cold %d, capacity %d, invalidated %d)",
			m.Pages, st.Misses[cache.MissCold].Pages, st.Misses[cache.MissCapacity].Pages, st.Misses[cache.MissInvalidated].Pages)
	}
}

// TestInvalidateWithFailedHeaderClear: Invalidate promises the
// dropped pages' headers are cleared on disk so they do not come back
// after a restart. When clearing a header fails (an I/O error on the
// slab), it must say so (an error) or retry later; it returns success and
// forgets the slot (clearEvictedHeaders empties the stale list even for a
// failed clear), so the invalidated page is re-indexed and served at the
// next start.
func TestInvalidateWithFailedHeaderClear(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://rv/inv-eio", "v1", 4*testPage-10)
	dir := t.TempDir()
	var fail atomic.Bool
	base := cache.Config{Origin: org, Dir: dir, CapacityBytes: 1 << 20, PageSize: testPage, Policy: "lru"}
	c, err := cache.New(cache.WithFaults(base, cache.Faults{
		Pwrite: func(fd int, p []byte, off int64) (int, error) {
			if fail.Load() {
				return 0, syscall.EIO
			}
			return syscall.Pwrite(fd, p, off)
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	mustGet(t, c, obj, 0, obj.Size)
	fail.Store(true)
	n, ierr := c.Invalidate(obj.URI)
	fail.Store(false)
	// A second invalidation after the disk healed may retry the clears.
	if _, err := c.Invalidate(obj.URI); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	down := base
	down.Origin = cache.OriginFunc(func(context.Context, cache.Object, []byte, int64) (int, error) {
		return 0, errors.New("origin down")
	})
	c2, err := cache.New(down)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	back := 0
	page := make([]byte, testPage)
	for p := int64(0); p*testPage < obj.Size; p++ {
		if _, err := c2.Get(context.Background(), obj, p*testPage, testPage, page); err == nil {
			back++
		}
	}
	if back > 0 && ierr == nil {
		t.Errorf("Invalidate dropped %d pages and returned no error (the header clears failed with EIO); after a restart %d of its pages are served again", n, back)
	}
}
