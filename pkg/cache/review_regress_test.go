package cache_test

// Regression tests from a review of the page cache on 2026-12-01 (races
// between Close, the tiers and restarts): each failed before its fix.

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/cache"

	"github.com/locuscache/locus/pkg/cache/cachetest"
)

// TestStatsDuringClose: Stats may be called while Close runs (a metrics
// scrape during shutdown), and reports the slab files' size after it too.
// Was: Stats summed the disk store's slab list, which Close sets to nil:
// a data race (-race fails), and DiskBytes 0 after Close although the
// files stay on disk.
func TestStatsDuringClose(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://rv/stats-close", "v1", 10*testPage)
	for i := 0; i < 10; i++ {
		c := newDisk(t, org, t.TempDir(), 16)
		mustGet(t, c, obj, 0, obj.Size)
		want := c.Stats().DiskBytes
		done := make(chan struct{})
		go func() {
			defer close(done)
			for j := 0; j < 200; j++ {
				c.Stats()
			}
		}()
		c.Close()
		<-done
		if got := c.Stats().DiskBytes; got != want {
			t.Fatalf("DiskBytes after Close: got %d, want %d", got, want)
		}
	}
}

// TestFailedClearAfterReplacedWriteIsCounted: a page whose write was in
// progress when a new version replaced its object has its header zeroed
// by the writer; when that write fails, it is a failed slab write like any
// other: counted in WriteErrors, and it pauses storing (Degraded). Was:
// the error was dropped, so Stats said no write had failed while a
// header of the replaced version stayed valid on disk.
func TestFailedClearAfterReplacedWriteIsCounted(t *testing.T) {
	org := cachetest.NewOrigin()
	x1 := org.PutGenerated("s3://rv/replaced-clear", "v1", testPage)
	inWrite, release := make(chan struct{}), make(chan struct{})
	var once, released sync.Once
	unblock := func() { released.Do(func() { close(release) }) }
	defer unblock() // a failure below must not leave the write blocked
	var failClears atomic.Bool
	zeros := make([]byte, 512)
	faults := cache.Faults{
		AfterData: func() { once.Do(func() { close(inWrite); <-release }) },
		Pwrite: func(fd int, p []byte, off int64) (int, error) {
			if failClears.Load() && bytes.Equal(p, zeros) {
				return 0, syscall.EIO
			}
			return syscall.Pwrite(fd, p, off)
		},
	}
	c := newDisk(t, org, t.TempDir(), 16, func(cfg *cache.Config) { *cfg = cache.WithFaults(*cfg, faults) })
	got := make(chan error, 1)
	go func() {
		_, err := c.Get(context.Background(), x1, 0, testPage, make([]byte, testPage))
		got <- err
	}()
	<-inWrite // x1's data is written, its header not yet
	failClears.Store(true)
	x2 := org.PutGenerated(x1.URI, "v2", testPage)
	replaced := make(chan error, 1)
	go func() {
		// The origin serves v2: v1 is dropped, and the read waits for
		// v1's write in progress.
		_, err := c.Get(context.Background(), x2, 0, testPage, make([]byte, testPage))
		replaced <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); org.Calls() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the read of v2 never asked the origin")
		}
	}
	time.Sleep(20 * time.Millisecond) // it confirms v2, drops v1 and waits for v1's write
	unblock()
	if err := <-replaced; err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.WriteErrors == 0 || !st.Degraded {
		t.Fatalf("the header clear of a replaced version's page failed: WriteErrors %d, Degraded %v; want at least 1, true", st.WriteErrors, st.Degraded)
	}
}

// TestReadGoesOnCachingAfterItsObjectIsCollected: the object table
// collects objects with no page resident when it grows (past 4,096
// objects); an object a read is fetching has none yet. The read must go
// on caching what it fetches, and what it fetched meanwhile must count as
// seen (a capacity miss), not as never seen. Was: the read kept the
// collected (dead) object, so not one page of the rest of the read was
// cached however long it was, and a second read missed every page as
// cold.
func TestReadGoesOnCachingAfterItsObjectIsCollected(t *testing.T) {
	org := cachetest.NewOrigin()
	const pages = 8
	x := org.PutGenerated("s3://rv/collected", "v1", pages*testPage)
	started, release := make(chan struct{}), make(chan struct{})
	var gated atomic.Bool
	gate := cache.OriginFunc(func(ctx context.Context, o cache.Object, p []byte, off int64) (int, error) {
		if o.URI == x.URI && gated.CompareAndSwap(false, true) {
			close(started)
			<-release
		}
		return org.ReadAt(ctx, o, p, off)
	})
	// One page per window: the read looks at its object again and again.
	c := newRAM(t, gate, 64, func(cfg *cache.Config) { cfg.MaxFetchBytes = testPage; cfg.FetchParallelism = 1 })
	done := make(chan error, 1)
	go func() {
		_, err := c.Get(context.Background(), x, 0, x.Size, make([]byte, x.Size))
		done <- err
	}()
	<-started // x's first page is being fetched: x has no page resident
	// Enough other objects, each soon evicted, for the table to collect.
	for i, prev := 0, c.Stats().Objects; ; i++ {
		if i > 100000 {
			t.Fatal("the object table never collected")
		}
		y := org.PutGenerated(fmt.Sprintf("s3://rv/filler-%d", i), "v1", 1)
		mustGet(t, c, y, 0, 1)
		n := c.Stats().Objects
		if n < prev {
			break // collected
		}
		prev = n
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_, res := mustGet(t, c, x, 0, x.Size)
	if res.HitPages < pages-1 || res.Misses[cache.MissCold].Pages != 0 {
		t.Fatalf("second read of %d pages: %d hits, misses %v; want at least %d hits (only the page in flight when x was collected missing) and no cold miss",
			pages, res.HitPages, res.Misses, pages-1)
	}
}

// TestUncacheableMissesStayColdAfterCollection: an object whose pages are
// never cached (its URI and version do not fit a page header) has no page
// resident, so the object table collects it whenever it grows, also while
// a read fetches it; its misses stay cold misses (never cached), not
// capacity misses.
func TestUncacheableMissesStayColdAfterCollection(t *testing.T) {
	org := cachetest.NewOrigin()
	long := org.PutGenerated("s3://rv/"+strings.Repeat("k", 600), "v1", testPage)
	started, release := make(chan struct{}), make(chan struct{})
	var gated atomic.Bool
	gate := cache.OriginFunc(func(ctx context.Context, o cache.Object, p []byte, off int64) (int, error) {
		if o.URI == long.URI && gated.CompareAndSwap(false, true) {
			close(started)
			<-release
		}
		return org.ReadAt(ctx, o, p, off)
	})
	c := newDisk(t, gate, t.TempDir(), 16)
	done := make(chan error, 1)
	go func() {
		_, err := c.Get(context.Background(), long, 0, testPage, make([]byte, testPage))
		done <- err
	}()
	<-started
	for i, prev := 0, c.Stats().Objects; ; i++ {
		if i > 100000 {
			t.Fatal("the object table never collected")
		}
		y := org.PutGenerated(fmt.Sprintf("s3://rv/filler-%d", i), "v1", 1)
		mustGet(t, c, y, 0, 1)
		n := c.Stats().Objects
		if n < prev {
			break // collected
		}
		prev = n
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, res := mustGet(t, c, long, 0, testPage); res.Misses[cache.MissCold].Pages != 1 {
		t.Fatalf("read of an uncacheable object after a collection: misses %v, want one cold miss", res.Misses)
	}
}

// TestNeverCachedVersionChangeMissesStayCold: a new version of an object
// whose pages were never cached, an object whose URI does not fit a page
// header or any object of a cache with no slot (every slab failed to
// preallocate), misses as cold: MissInvalidated says another version was
// cached, and none ever was. Was: any other version in the object table
// made every miss of the new one an invalidated miss.
func TestNeverCachedVersionChangeMissesStayCold(t *testing.T) {
	for _, mode := range []string{"uncacheable", "pass-through"} {
		t.Run(mode, func(t *testing.T) {
			org := cachetest.NewOrigin()
			uri := "s3://rv/never-cached"
			var c *cache.Cache
			if mode == "uncacheable" {
				uri += "/" + strings.Repeat("k", 600)
				c = newDisk(t, org, t.TempDir(), 16)
			} else {
				c = newDisk(t, org, t.TempDir(), 16, func(cfg *cache.Config) {
					*cfg = cache.WithFaults(*cfg, cache.Faults{Fallocate: func(int, int64, int64) error { return syscall.ENOSPC }})
				})
				if st := c.Stats(); st.Mode != "pass-through" {
					t.Fatalf("mode %q, want pass-through", st.Mode)
				}
			}
			v1 := org.PutGenerated(uri, "v1", 2*testPage)
			mustGet(t, c, v1, 0, v1.Size)
			v2 := org.PutGenerated(uri, "v2", 2*testPage)
			got, res := mustGet(t, c, v2, 0, v2.Size)
			checkBytes(t, v2, 0, got)
			if res.Misses[cache.MissCold].Pages != 2 {
				t.Fatalf("read of v2: misses %v, want 2 cold misses", res.Misses)
			}
			if st := c.Stats(); st.Misses[cache.MissInvalidated].Pages != 0 {
				t.Fatalf("Stats: %d invalidated misses, want 0 (nothing was ever cached)", st.Misses[cache.MissInvalidated].Pages)
			}
		})
	}
}

// TestRAMTierPromotesAfterManyReads: a disk page read twice since it was
// written is copied to the RAM tier, however often it was read before.
// Two pages read in turn through a one-page RAM tier push each other's
// copy out, so every read is a disk read, and each from a page's third on
// (its first fetched it, its second is its first read since) promotes
// it. Was: the per-slot read count, meant to saturate at
// 255, wrapped to 0, so every 256th read of a page and the next did not
// promote it.
func TestRAMTierPromotesAfterManyReads(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://rv/ram-wrap", "v1", 2*testPage)
	c := newDisk(t, org, t.TempDir(), 16, func(cfg *cache.Config) { cfg.MemoryBytes = testPage })
	const rounds = 600
	for i := 0; i < rounds; i++ {
		for p := int64(0); p < 2; p++ {
			got, _ := mustGet(t, c, obj, p*testPage, testPage)
			checkBytes(t, obj, p*testPage, got)
		}
	}
	st := c.Stats()
	if want := int64(2*rounds - 4); st.Promotions != want || st.RAMHits != 0 {
		t.Fatalf("%d alternating reads: %d promotions, %d RAM hits; want %d, 0", 2*rounds, st.Promotions, st.RAMHits, want)
	}
}
