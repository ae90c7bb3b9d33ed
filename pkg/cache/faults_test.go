package cache_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/cache/cachetest"
)

// Regression tests for faults a review found (2026-11-30): each failed
// before its fix.

// An object with more pages than a page key can index (2^32) is read
// straight from the origin: page p and page p+2^32 must not share a cached
// page or a flight. The first case also covers a size near MaxInt64, whose
// page count overflowed.
func TestHugeObjectPagesDoNotAlias(t *testing.T) {
	t.Run("cached page", func(t *testing.T) {
		org := cachetest.NewOrigin()
		obj := org.PutGenerated("s3://b/huge", "v", math.MaxInt64)
		c := newRAM(t, org, 16)
		mustGet(t, c, obj, 0, testPage)
		off := int64(1) << 32 * testPage
		got, res := mustGet(t, c, obj, off, testPage)
		checkBytes(t, obj, off, got)
		if res.HitPages != 0 || res.Misses[cache.MissCold].Pages != 1 {
			t.Fatalf("page 2^32 of a huge object: %+v, want one cold miss", res)
		}
		if st := c.Stats(); st.Misses[cache.MissCold].Pages != 2 || st.Uncacheable != 2 {
			t.Fatalf("stats: %d cold misses, %d uncacheable; want 2, 2", st.Misses[cache.MissCold].Pages, st.Uncacheable)
		}
	})
	t.Run("flight", func(t *testing.T) {
		org := cachetest.NewOrigin()
		const ps = 512
		obj := org.PutGenerated("s3://b/huge", "v", int64(3)<<40) // 6.4e9 pages of 512 bytes
		release := make(chan struct{})
		var calls atomic.Int32
		slow := cache.OriginFunc(func(ctx context.Context, o cache.Object, p []byte, off int64) (int, error) {
			calls.Add(1)
			if off == 0 {
				<-release
			}
			return org.ReadAt(ctx, o, p, off)
		})
		c, err := cache.New(cache.Config{Origin: slow, MemoryBytes: 64 * ps, PageSize: ps, Policy: "lru"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := make([]byte, ps)
			if _, err := c.Get(context.Background(), obj, 0, ps, dst); err != nil {
				t.Error(err)
			}
			checkBytes(t, obj, 0, dst)
		}()
		for calls.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		// Page 2^32 must not wait for page 0's flight (it would get
		// page 0's bytes, or wait for ever here).
		off := int64(1) << 32 * ps
		dst := make([]byte, ps)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = c.Get(ctx, obj, off, ps, dst)
		close(release)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		checkBytes(t, obj, off, dst)
	})
}

// Invalidate clears the header of a page that was evicted while a reader
// pinned it (its slot was not reused): after a restart it must not come
// back. With Version "" the cache cannot tell the bytes apart otherwise.
func TestInvalidatedEvictedPageStaysGoneAfterRestart(t *testing.T) {
	dir := t.TempDir()
	org := cachetest.NewOrigin()
	oldData := bytes.Repeat([]byte{0xAA}, testPage)
	x := org.Put("s3://b/x", "", oldData)
	one := func(cfg *cache.Config) { cfg.Shards = 1 }
	c := newDisk(t, org, dir, 16, one)
	slots := c.Stats().CapacityPages
	y := org.PutGenerated("s3://b/y", "v", (slots-1)*testPage)
	z := org.PutGenerated("s3://b/z", "v", slots*testPage)
	mustGet(t, c, x, 0, testPage)
	mustGet(t, c, y, 0, y.Size)
	_, err := c.View(context.Background(), x, 0, testPage, func([]byte) error {
		mustGet(t, c, z, 0, z.Size) // evicts y, then the pinned x: pending, not reused
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkInv(t, c)
	newData := bytes.Repeat([]byte{0xBB}, testPage)
	x = org.Put("s3://b/x", "", newData)
	if _, err := c.Invalidate(x.URI); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c = newDisk(t, org, dir, 16, one)
	got, res := mustGet(t, c, x, 0, testPage)
	if !bytes.Equal(got, newData) {
		t.Fatalf("after Invalidate and a restart: %+v, first byte %#x; want %#x from the origin", res, got[0], newData[0])
	}
}

// Invalidate waits for a write of the object in progress, which clears the
// header it wrote: once Invalidate has returned, the disk (as a crash would
// leave it: every completed pwrite) holds no valid header of the object.
func TestInvalidateWaitsForAWriteInProgress(t *testing.T) {
	dir, snap := t.TempDir(), t.TempDir()
	org := cachetest.NewOrigin()
	oldData := bytes.Repeat([]byte{0xAA}, testPage)
	x := org.Put("s3://b/x", "", oldData)
	inWrite, release := make(chan struct{}), make(chan struct{})
	var once, released sync.Once
	unblock := func() { released.Do(func() { close(release) }) }
	defer unblock() // a failure below must not leave the write blocked
	faults := cache.Faults{AfterData: func() {
		once.Do(func() { close(inWrite); <-release })
	}}
	c := newDisk(t, org, dir, 16, func(cfg *cache.Config) { *cfg = cache.WithFaults(*cfg, faults) })
	got := make(chan error, 1)
	go func() {
		_, err := c.Get(context.Background(), x, 0, testPage, make([]byte, testPage))
		got <- err
	}()
	<-inWrite // the page's data is written, its header not yet
	invalidated := make(chan struct{})
	go func() {
		if _, err := c.Invalidate(x.URI); err != nil {
			t.Error(err)
		}
		close(invalidated)
	}()
	select {
	case <-invalidated:
		t.Fatal("Invalidate returned while a write of the object was in progress")
	case <-time.After(50 * time.Millisecond):
	}
	unblock()
	<-invalidated
	// The state a crash right now would leave.
	files, _ := filepath.Glob(filepath.Join(dir, "slab-*.lcs"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(snap, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	c.Close()
	newData := bytes.Repeat([]byte{0xBB}, testPage)
	x = org.Put("s3://b/x", "", newData)
	c2 := newDisk(t, org, snap, 16)
	b, res := mustGet(t, c2, x, 0, testPage)
	if !bytes.Equal(b, newData) {
		t.Fatalf("after Invalidate and a crash: %+v, first byte %#x; want %#x from the origin", res, b[0], newData[0])
	}
}

// A page evicted while its write is in progress is not kept; read again,
// it is a capacity miss (seen, not kept), not a cold one.
func TestPageEvictedWhileWrittenMissesAsCapacity(t *testing.T) {
	org := cachetest.NewOrigin()
	x := org.PutGenerated("s3://b/x", "v", testPage)
	inWrite, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	var released sync.Once
	unblock := func() { released.Do(func() { close(release) }) }
	defer unblock() // a failure below must not leave the write blocked
	faults := cache.Faults{AfterData: func() {
		if first.CompareAndSwap(false, true) { // x's write only: y's go on
			close(inWrite)
			<-release
		}
	}}
	c := newDisk(t, org, t.TempDir(), 16, func(cfg *cache.Config) {
		*cfg = cache.WithFaults(*cfg, faults)
		cfg.Shards = 1
	})
	y := org.PutGenerated("s3://b/y", "v", c.Stats().CapacityPages*testPage)
	got := make(chan error, 1)
	go func() {
		_, err := c.Get(context.Background(), x, 0, testPage, make([]byte, testPage))
		got <- err
	}()
	<-inWrite                   // x's data is written, its header not yet
	mustGet(t, c, y, 0, y.Size) // LRU: evicts x while it is written
	unblock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if _, res := mustGet(t, c, x, 0, testPage); res.Misses[cache.MissCapacity].Pages != 1 {
		t.Fatalf("x read again: misses by cause %v, want one capacity miss", res.Misses)
	}
	checkInv(t, c)
}

// Bounds that keep a bad configuration an error, not a hang, a panic or an
// allocation of all memory.
func TestConfigBounds(t *testing.T) {
	org := cachetest.NewOrigin()
	for _, tc := range []struct {
		name string
		cfg  cache.Config
	}{
		{"fetch parallelism", cache.Config{Origin: org, MemoryBytes: 16 * testPage, PageSize: testPage, FetchParallelism: math.MaxInt / 1024}},
		{"history", cache.Config{Origin: org, MemoryBytes: 16 * testPage, PageSize: testPage, HistoryPages: math.MaxInt}},
		{"memory", cache.Config{Origin: org, MemoryBytes: math.MaxInt64 &^ (testPage - 1), PageSize: testPage}},
		{"slab files", cache.Config{Origin: org, Dir: t.TempDir(), CapacityBytes: 1 << 62, PageSize: testPage}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := cache.New(tc.cfg)
			if err == nil {
				c.Close()
				t.Fatal("New accepted the config")
			}
			if !errors.Is(err, cache.ErrInvalidConfig) {
				t.Fatalf("New: %v, want ErrInvalidConfig", err)
			}
		})
	}
}

// A follower whose leader was cancelled fetches the page itself in its next
// window, which plans the rest of its pages again: Stats must count each
// served page once.
func TestStatsCountARetriedWindowOnce(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/cancel", "v", 2*testPage)
	c := newRAM(t, org, 8)
	mustGet(t, c, obj, testPage, testPage) // page 1 cached
	org.Delay = 100 * time.Millisecond
	before := c.Stats()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Get(ctx, obj, 0, testPage, make([]byte, testPage))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond) // the leader is fetching page 0
	follower := make(chan cache.ReadResult, 1)
	go func() {
		dst := make([]byte, 2*testPage)
		res, err := c.Get(context.Background(), obj, 0, 2*testPage, dst)
		if err != nil {
			t.Error(err)
		}
		checkBytes(t, obj, 0, dst)
		follower <- res
	}()
	time.Sleep(20 * time.Millisecond) // the follower waits on page 0's flight
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v, want context.Canceled", err)
	}
	res := <-follower
	after := c.Stats()
	if hits := after.HitPages - before.HitPages; hits != res.HitPages {
		t.Fatalf("Stats counted %d hits; the one read that succeeded served %d", hits, res.HitPages)
	}
}

// A page dropped for a bad checksum whose refetch failed is a corrupt miss
// on its next read, not a cold one.
func TestCorruptPageStaysCorruptMissAfterAFailedRefetch(t *testing.T) {
	dir := t.TempDir()
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/cc", "v", testPage)
	c := newDisk(t, org, dir, 16)
	mustGet(t, c, obj, 0, testPage)
	loc, ok := c.Locate(obj, 0)
	if !ok {
		t.Fatal("not resident")
	}
	c.Close()
	f, err := os.OpenFile(loc.Path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0x5A}, loc.Data+7); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var fail atomic.Bool
	fail.Store(true)
	org.Fail = func(cache.Object, int64, int) error {
		if fail.Load() {
			return errors.New("origin down")
		}
		return nil
	}
	c = newDisk(t, org, dir, 16)
	if _, err := c.Get(context.Background(), obj, 0, testPage, make([]byte, testPage)); err == nil {
		t.Fatal("Get with the origin down: no error")
	}
	if st := c.Stats(); st.CorruptPages != 1 || st.Misses[cache.MissCorrupt].Pages != 1 {
		t.Fatalf("after the failed refetch: %d corrupt pages, %d corrupt misses; want 1, 1", st.CorruptPages, st.Misses[cache.MissCorrupt].Pages)
	}
	fail.Store(false)
	got, res := mustGet(t, c, obj, 0, testPage)
	checkBytes(t, obj, 0, got)
	if res.Misses[cache.MissCorrupt].Pages != 1 {
		t.Fatalf("the next read: misses %v, want 1 corrupt", res.Misses)
	}
}

// The list of evicted slots whose headers an invalidation must clear stays
// about the size of the free lists however many pages are evicted.
func TestStaleHeaderListStaysBounded(t *testing.T) {
	org := cachetest.NewOrigin()
	c := newDisk(t, org, t.TempDir(), 16, func(cfg *cache.Config) { cfg.Shards = 1; cfg.Policy = "lru" })
	for i := range 200 {
		obj := org.PutGenerated(fmt.Sprintf("s3://b/o%d", i), "v", 4*testPage)
		mustGet(t, c, obj, 0, obj.Size)
	}
	if n := c.StaleHeaderSlots(); n > 64 {
		t.Fatalf("after 800 pages through 16 slots: %d stale entries, want at most 64", n)
	}
	checkInv(t, c)
}

// Dropping an object costs time in proportion to the cache, not to the
// object: an object of nearly 2^32 pages (the most a page key indexes)
// with its last page cached was walked page by page from page 0, about two
// minutes per Invalidate (a review's finding, 2026-11-30). A new version
// seen by a reader takes the same path inside its Get.
func TestInvalidateHugeObjectIsQuick(t *testing.T) {
	org := cachetest.NewOrigin()
	size := (int64(1)<<32 - 1) * testPage
	obj := org.PutGenerated("s3://b/huge", "v1", size)
	c := newRAM(t, org, 16)
	mustGet(t, c, obj, size-10, 10)
	mustGet(t, c, obj, 0, 10)
	if st := c.Stats(); st.ResidentPages != 2 {
		t.Fatalf("resident pages %d, want 2 (the object is cacheable)", st.ResidentPages)
	}
	done := make(chan int, 1)
	go func() {
		n, err := c.Invalidate(obj.URI)
		if err != nil {
			t.Error(err)
		}
		done <- n
	}()
	select {
	case n := <-done:
		if n != 2 {
			t.Fatalf("Invalidate dropped %d pages, want 2", n)
		}
	case <-time.After(30 * time.Second): // milliseconds with the fix, minutes without
		t.Fatal("Invalidate of a huge object with 2 cached pages still running after 30 s")
	}
	if st := c.Stats(); st.ResidentPages != 0 {
		t.Fatalf("resident pages %d after Invalidate, want 0", st.ResidentPages)
	}
	obj = org.PutGenerated("s3://b/huge", "v2", size)
	got, res := mustGet(t, c, obj, size-10, 10)
	checkBytes(t, obj, size-10, got)
	if res.Misses[cache.MissInvalidated].Pages != 1 {
		t.Fatalf("read of the new version: %+v, want one invalidated miss", res)
	}
}

// An evicted page's slot handed to another page keeps the evicted page's
// header on disk until its new writer blanks it. Invalidate of the evicted
// page's object must not return before that blanking: a crash right after
// it returned would bring the invalidated page back. (A review found that
// Invalidate skipped such slots: they are no longer free, and their writer
// blanked the header outside the shard lock.)
func TestInvalidateWhileEvictedSlotIsBeingReused(t *testing.T) {
	dir, snap := t.TempDir(), t.TempDir()
	org := cachetest.NewOrigin()
	oldData := bytes.Repeat([]byte{0xAA}, testPage)
	x := org.Put("s3://b/x", "", oldData)
	var armed atomic.Bool
	inBlank, release := make(chan struct{}), make(chan struct{})
	var once, released sync.Once
	unblock := func() { released.Do(func() { close(release) }) }
	defer unblock()
	zero := make([]byte, 512)
	faults := cache.Faults{Pwrite: func(fd int, p []byte, off int64) (int, error) {
		if armed.Load() && len(p) == len(zero) && bytes.Equal(p, zero) {
			once.Do(func() {
				close(inBlank)
				select {
				case <-release:
				case <-time.After(5 * time.Second):
				}
			})
		}
		return syscall.Pwrite(fd, p, off)
	}}
	c := newDisk(t, org, dir, 16, func(cfg *cache.Config) {
		cfg.Shards = 1
		*cfg = cache.WithFaults(*cfg, faults)
	})
	slots := c.Stats().CapacityPages
	y := org.PutGenerated("s3://b/y", "v", (slots-1)*testPage)
	z := org.PutGenerated("s3://b/z", "v", testPage)
	mustGet(t, c, x, 0, testPage) // least recently used: the next insert evicts it
	mustGet(t, c, y, 0, y.Size)
	armed.Store(true)
	got := make(chan error, 1)
	go func() {
		_, err := c.Get(context.Background(), z, 0, testPage, make([]byte, testPage))
		got <- err
	}()
	select {
	case <-inBlank: // z's writer is blanking x's header in the reused slot
	case <-time.After(10 * time.Second):
		t.Fatal("z's write never blanked the evicted page's header")
	}
	invalidated := make(chan struct{})
	go func() {
		if _, err := c.Invalidate(x.URI); err != nil {
			t.Error(err)
		}
		close(invalidated)
	}()
	returnedEarly := false
	select {
	case <-invalidated:
		returnedEarly = true
	case <-time.After(50 * time.Millisecond):
	}
	if returnedEarly {
		snapshotSlabs(t, dir, snap) // the state a crash right now would leave
	}
	unblock()
	<-invalidated
	if !returnedEarly {
		snapshotSlabs(t, dir, snap)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	c.Close()
	newData := bytes.Repeat([]byte{0xBB}, testPage)
	x = org.Put("s3://b/x", "", newData)
	c2 := newDisk(t, org, snap, 16)
	b, res := mustGet(t, c2, x, 0, testPage)
	if !bytes.Equal(b, newData) {
		t.Fatalf("after Invalidate and a crash: %+v, first byte %#x; want %#x from the origin", res, b[0], newData[0])
	}
}

// snapshotSlabs copies dir's slab files to snap: the disk as a crash would
// leave it (every completed pwrite).
func snapshotSlabs(t *testing.T, dir, snap string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "slab-*.lcs"))
	if len(files) == 0 {
		t.Fatal("no slab files")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(snap, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A View whose callback panics served the pages up to the one it was
// given, not the rest of the window: Stats count only those as hits, as
// after a callback's error. (Was: the whole window stayed counted.)
func TestStatsAfterAViewCallbackPanics(t *testing.T) {
	for _, stop := range []string{"error", "panic"} {
		t.Run(stop, func(t *testing.T) {
			org := cachetest.NewOrigin()
			obj := org.PutGenerated("s3://b/x", "v", 8*testPage)
			c := newRAM(t, org, 16)
			mustGet(t, c, obj, 0, obj.Size)
			before := c.Stats()
			calls := 0
			func() {
				defer func() { _ = recover() }()
				_, _ = c.View(context.Background(), obj, 0, obj.Size, func([]byte) error {
					calls++
					if calls == 2 {
						if stop == "panic" {
							panic("callback")
						}
						return errors.New("callback")
					}
					return nil
				})
			}()
			after := c.Stats()
			if hits := after.HitPages - before.HitPages; hits != 2 {
				t.Fatalf("%d hits counted for a View whose callback stopped (%s) at its 2nd page; want 2", hits, stop)
			}
			checkInv(t, c)
		})
	}
}
