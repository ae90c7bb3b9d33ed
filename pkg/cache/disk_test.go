package cache_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/cache/cachetest"
)

func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// Close and reopen: the pages are re-indexed from their headers and served
// without origin calls.
func TestRestartServesHits(t *testing.T) {
	dir := t.TempDir()
	org := cachetest.NewOrigin()
	var objs []cache.Object
	for i := 0; i < 5; i++ {
		objs = append(objs, org.PutGenerated("s3://b/restart/"+string(rune('a'+i)), "etag-1", 6*testPage+int64(i*100)))
	}
	c := newDisk(t, org, dir, 64)
	for _, obj := range objs {
		mustGet(t, c, obj, 0, obj.Size)
	}
	resident := c.Stats().ResidentPages // 35 unless a shard overflowed
	if resident < 30 {
		t.Fatalf("%d of 35 pages resident before the restart", resident)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	org.Reset()
	c2 := newDisk(t, org, dir, 64)
	st := c2.Stats()
	if st.ReindexedPages != resident || st.ResidentPages != resident {
		t.Fatalf("after restart: %d re-indexed, %d resident; want %d", st.ReindexedPages, st.ResidentPages, resident)
	}
	var hits int64
	for _, obj := range objs {
		got, res := mustGet(t, c2, obj, 0, obj.Size)
		checkBytes(t, obj, 0, got)
		hits += res.HitPages
	}
	if hits != resident {
		t.Fatalf("after restart: %d hit pages, want %d", hits, resident)
	}
	if n := org.Calls(); resident == 35 && n != 0 {
		t.Fatalf("restarted cache made %d origin calls, want 0", n)
	}
	checkInv(t, c2)
	// A restart with another page size discards the slabs.
	c2.Close()
	c3 := newDisk(t, org, dir, 32, func(cfg *cache.Config) { cfg.PageSize = 2 * testPage })
	if st := c3.Stats(); st.ReindexedPages != 0 {
		t.Fatalf("page size changed: %d pages re-indexed, want 0", st.ReindexedPages)
	}
	got, _ := mustGet(t, c3, objs[0], 0, objs[0].Size)
	checkBytes(t, objs[0], 0, got)
}

// A second cache on the same directory is refused.
func TestDirLocked(t *testing.T) {
	dir := t.TempDir()
	org := cachetest.NewOrigin()
	newDisk(t, org, dir, 8)
	_, err := cache.New(cache.Config{Origin: org, Dir: dir, CapacityBytes: 1 << 20, PageSize: testPage})
	if !errors.Is(err, cache.ErrDirLocked) {
		t.Fatalf("second cache on one dir: %v, want ErrDirLocked", err)
	}
}

// The slab files never exceed the configured capacity, headers included.
func TestCapacityIsHardLimit(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/big", "v", 1000*testPage)
	for _, capacity := range []int64{64 << 10, 100_000, 1 << 20, 3<<20 + 12345} {
		dir := t.TempDir()
		c, err := cache.New(cache.Config{Origin: org, Dir: dir, CapacityBytes: capacity, PageSize: testPage, SlabSize: 256 << 10})
		if err != nil {
			t.Fatal(err)
		}
		mustGet(t, c, obj, 0, obj.Size)
		st := c.Stats()
		if got := dirBytes(t, dir); got > capacity || st.DiskBytes > capacity {
			t.Fatalf("capacity %d: directory holds %d bytes (stats %d)", capacity, got, st.DiskBytes)
		}
		if st.CapacityPages == 0 || st.ResidentPages != st.CapacityPages {
			t.Fatalf("capacity %d: %d of %d pages resident after a 1000-page read", capacity, st.ResidentPages, st.CapacityPages)
		}
		checkInv(t, c)
		c.Close()
	}
}

func TestBadDir(t *testing.T) {
	org := cachetest.NewOrigin()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := cache.New(cache.Config{Origin: org, Dir: file, CapacityBytes: 4 << 20})
	if !errors.Is(err, cache.ErrBadDir) {
		t.Fatalf("Dir is a file: %v, want ErrBadDir", err)
	}
	_, err = cache.New(cache.Config{Origin: org, Dir: filepath.Join(file, "sub"), CapacityBytes: 4 << 20})
	if !errors.Is(err, cache.ErrBadDir) {
		t.Fatalf("Dir under a file: %v, want ErrBadDir", err)
	}
	t.Run("read-only", func(t *testing.T) {
		dir := t.TempDir()
		if os.Geteuid() == 0 {
			// Root ignores permission bits: use a read-only tmpfs.
			if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
				t.Skipf("cannot mount a read-only tmpfs (%v: %s)", err, out)
			}
			t.Cleanup(func() { exec.Command("umount", dir).Run() })
		} else if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		_, err := cache.New(cache.Config{Origin: org, Dir: dir, CapacityBytes: 4 << 20})
		if !errors.Is(err, cache.ErrBadDir) {
			t.Fatalf("read-only dir: %v, want ErrBadDir", err)
		}
	})
}

func TestInvalidConfig(t *testing.T) {
	org := cachetest.NewOrigin()
	for _, cfg := range []cache.Config{
		{},
		{Origin: org},
		{Origin: org, MemoryBytes: -1},
		{Origin: org, MemoryBytes: 1 << 20, PageSize: 1000},
		{Origin: org, MemoryBytes: 1 << 20, PageSize: 256},
		{Origin: org, MemoryBytes: 100},
		{Origin: org, Dir: "/tmp/x"},
		{Origin: org, MemoryBytes: 1 << 20, Policy: "nope"},
		{Origin: org, MemoryBytes: 1 << 20, Shards: 5000},
		{Origin: org, MemoryBytes: 1 << 20, Verify: 7},
		{Origin: org, MemoryBytes: 1 << 20, MaxFetchBytes: 2 << 30},
		{Origin: org, Dir: "/tmp/x", CapacityBytes: 100},
	} {
		if _, err := cache.New(cfg); !errors.Is(err, cache.ErrInvalidConfig) {
			t.Errorf("New(%+v): %v, want ErrInvalidConfig", cfg, err)
		}
	}
	// A cache of exactly one page has no room for the page's header: the
	// error names the capacity and the least that works (it named the
	// slab size, a field the caller had not set).
	dir := t.TempDir()
	_, err := cache.New(cache.Config{Origin: org, Dir: dir, CapacityBytes: 1 << 20})
	if !errors.Is(err, cache.ErrInvalidConfig) || !strings.Contains(err.Error(), "CapacityBytes 1048576 cannot hold one 1048576-byte page") || !strings.Contains(err.Error(), "give at least") {
		t.Errorf("New with a one-page capacity: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused config left %d files in the cache directory", len(entries))
	}
}

// Bytes flipped in a slab are detected on the first read after a restart:
// the page is counted corrupt, dropped and refetched, and correct bytes
// are served. A flipped header makes the page disappear (a cold miss).
func TestCorruptionDetected(t *testing.T) {
	dir := t.TempDir()
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/corrupt", "v", 4*testPage)
	c := newDisk(t, org, dir, 16)
	mustGet(t, c, obj, 0, obj.Size)
	data, ok1 := c.Locate(obj, 1)
	hdr, ok2 := c.Locate(obj, 2)
	if !ok1 || !ok2 {
		t.Fatal("pages 1 and 2 not resident")
	}
	c.Close()
	flip(t, data.Path, data.Data+100)
	flip(t, hdr.Path, hdr.HeaderOff+60)

	org.Reset()
	c2 := newDisk(t, org, dir, 16)
	if st := c2.Stats(); st.ReindexedPages != 3 {
		t.Fatalf("re-indexed %d pages, want 3 (page 2's header is broken)", st.ReindexedPages)
	}
	got, res := mustGet(t, c2, obj, 0, obj.Size)
	checkBytes(t, obj, 0, got)
	if res.Misses[cache.MissCorrupt].Pages != 1 || res.Misses[cache.MissCold].Pages != 1 || res.HitPages != 2 {
		t.Fatalf("read: %+v, want 1 corrupt miss, 1 cold miss, 2 hits", res)
	}
	if st := c2.Stats(); st.CorruptPages != 1 || st.HitPages != 2 || st.Misses[cache.MissCorrupt].Pages != 1 {
		t.Fatalf("stats: %d corrupt, %d hits, %d corrupt misses; want 1, 2, 1", st.CorruptPages, st.HitPages, st.Misses[cache.MissCorrupt].Pages)
	}
	if rq := org.Requests(); len(rq) != 1 || rq[0].Off != testPage || rq[0].Len != 2*testPage {
		t.Fatalf("origin requests %+v, want one for pages 1 and 2", rq)
	}
	// Now all good and verified.
	got, res = mustGet(t, c2, obj, 0, obj.Size)
	checkBytes(t, obj, 0, got)
	if res.HitPages != 4 {
		t.Fatalf("second read: %+v, want 4 hits", res)
	}
	checkInv(t, c2)
}

// countingSizer counts the accesses a Sizer is given.
type countingSizer struct{ n int }

func (s *countingSizer) Access(uint64)        { s.n++ }
func (s *countingSizer) HitRatio(int) float64 { return 0 }

// A corrupt page is planned twice (as a hit, then as a refetch), but the
// sizing estimators see one read of it: each page a read asks for counts
// once.
func TestCorruptPageFeedsSizersOnce(t *testing.T) {
	dir := t.TempDir()
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/corrupt-sized", "v", 4*testPage)
	c := newDisk(t, org, dir, 16)
	mustGet(t, c, obj, 0, obj.Size)
	data, _ := c.Locate(obj, 1)
	c.Close()
	flip(t, data.Path, data.Data+100)

	sz := &countingSizer{}
	c2 := newDisk(t, org, dir, 16, func(cfg *cache.Config) { cfg.Sizer, cfg.PolicySizing = sz, true })
	_, res := mustGet(t, c2, obj, 0, obj.Size)
	if res.Misses[cache.MissCorrupt].Pages != 1 {
		t.Fatalf("read: %+v, want 1 corrupt miss", res)
	}
	if sz.n != 4 {
		t.Errorf("the Sizer saw %d page reads, want 4", sz.n)
	}
	if got := c2.Stats().PolicySizingReads; got != 4 {
		t.Errorf("the miniatures replayed %d page reads, want 4 (a 16-page cache samples every page)", got)
	}
}

// Under the default VerifyFirstRead a running cache trusts the pages it
// wrote, even after their bytes change on disk (and copies them to its RAM
// tier); ViewVerified checks the disk page of every hit, so what it serves
// (a peer's fill, which caches it elsewhere) is never the changed bytes.
func TestViewVerified(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/verified", "v", 2*testPage)
	c := newDisk(t, org, t.TempDir(), 16, func(cfg *cache.Config) { cfg.MemoryBytes = 4 * testPage })
	mustGet(t, c, obj, 0, obj.Size)
	loc, _ := c.Locate(obj, 0)
	flip(t, loc.Path, loc.Data+7)
	for range 3 { // trusted: the changed byte is served, and copied to RAM
		mustGet(t, c, obj, 0, obj.Size)
	}
	if st := c.Stats(); st.RAMPages == 0 || st.CorruptPages != 0 {
		t.Fatalf("setup: %d RAM pages, %d corrupt; want copies in RAM, none detected", st.RAMPages, st.CorruptPages)
	}
	var got []byte
	res, err := c.ViewVerified(context.Background(), obj, 0, obj.Size, func(p []byte) error {
		got = append(got, p...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkBytes(t, obj, 0, got)
	if res.Misses[cache.MissCorrupt].Pages != 1 || res.HitPages != 1 || c.Stats().CorruptPages != 1 {
		t.Fatalf("ViewVerified: %+v, %d corrupt; want page 0 a corrupt miss, page 1 a hit", res, c.Stats().CorruptPages)
	}
	got, _ = mustGet(t, c, obj, 0, obj.Size) // and the plain read is healed too
	checkBytes(t, obj, 0, got)
	if _, err := c.ViewVerified(context.Background(), obj, 0, 1, nil); !errors.Is(err, cache.ErrInvalidRange) {
		t.Fatalf("nil callback: %v, want ErrInvalidRange", err)
	}
	checkInv(t, c)
}

// With VerifyAlways, corruption under a running cache is caught too.
func TestCorruptionVerifyAlways(t *testing.T) {
	dir := t.TempDir()
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/always", "v", 2*testPage)
	c := newDisk(t, org, dir, 16, func(cfg *cache.Config) { cfg.Verify = cache.VerifyAlways })
	mustGet(t, c, obj, 0, obj.Size)
	loc, _ := c.Locate(obj, 0)
	flip(t, loc.Path, loc.Data+7)
	got, res := mustGet(t, c, obj, 0, obj.Size)
	checkBytes(t, obj, 0, got)
	if res.Misses[cache.MissCorrupt].Pages != 1 || c.Stats().CorruptPages != 1 {
		t.Fatalf("read after flip: %+v, want a corrupt miss", res)
	}
	checkInv(t, c)
}

func flip(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// A full disk at start: the cache runs on the slabs that fit, or passes
// reads through, and says so. Uses a 2 MiB tmpfs.
func TestDiskFullAtStart(t *testing.T) {
	dir := mountTmpfs(t, "size=2m") // TestDiskFullInjected covers ENOSPC where this skips
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/full", "v", 40*testPage)
	c, err := cache.New(cache.Config{Origin: org, Dir: dir, CapacityBytes: 8 << 20, SlabSize: 1 << 20, PageSize: testPage})
	if err != nil {
		t.Fatalf("New on a full disk: %v", err)
	}
	defer c.Close()
	st := c.Stats()
	if !st.Degraded || !strings.Contains(st.DegradedReason, "disk full") || st.DiskBytes > 2<<20 {
		t.Fatalf("stats on a full disk: degraded %v (%q), %d disk bytes", st.Degraded, st.DegradedReason, st.DiskBytes)
	}
	t.Logf("degraded: %s; %d slots", st.DegradedReason, st.CapacityPages)
	// The cache stops short of the disk's end: it keeps 5% free for the
	// rest of the machine rather than filling the file system.
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if free := int64(fs.Bavail) * int64(fs.Bsize); free < (2<<20)/20 {
		t.Fatalf("%d bytes free after New on a 2 MiB file system: the cache filled the disk", free)
	}
	for i := 0; i < 2; i++ {
		got, _ := mustGet(t, c, obj, 0, obj.Size)
		checkBytes(t, obj, 0, got)
	}

	// Nothing fits: pass-through.
	dir2 := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir2).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir2).Run() })
	sz := &exactSizer{dists: map[int]int{}}
	c2, err := cache.New(cache.Config{Origin: org, Dir: dir2, CapacityBytes: 8 << 20, SlabSize: 1 << 20, PageSize: testPage,
		Sizer: sz, PolicySizing: true})
	if err != nil {
		t.Fatalf("New on a full disk: %v", err)
	}
	defer c2.Close()
	if st := c2.Stats(); st.Mode != "pass-through" || !st.Degraded {
		t.Fatalf("nothing fits: mode %q, degraded %v", st.Mode, st.Degraded)
	}
	got, res := mustGet(t, c2, obj, 0, obj.Size)
	checkBytes(t, obj, 0, got)
	if res.MissBytes != obj.Size {
		t.Fatalf("pass-through read: %+v", res)
	}
	// No size, so no estimate at multiples of it.
	if st := c2.Stats(); st.Sizing != nil || st.PolicySizing != nil {
		t.Fatalf("pass-through sizing %+v, policy sizing %+v: want none", st.Sizing, st.PolicySizing)
	}
}

// A warm restart on a disk that has filled up since (the slab files already
// hold their space) keeps every slab and its pages: reusing an allocated
// slab takes no new space, so the reserve does not apply to it.
func TestWarmRestartOnFullDiskKeepsSlabs(t *testing.T) {
	dir := mountTmpfs(t, "size=16m")
	cdir := filepath.Join(dir, "cache")
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/warm", "v", 12<<20)
	cfg := cache.Config{Origin: org, Dir: cdir, CapacityBytes: 8 << 20, SlabSize: 1 << 20, PageSize: testPage, Policy: "lru"}
	c, err := cache.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.Degraded {
		t.Fatalf("setup: degraded on an empty 16 MiB disk: %s", st.DegradedReason)
	}
	mustGet(t, c, obj, 0, obj.Size) // fill every slot
	pages := c.Stats().ResidentPages
	capPages := st.CapacityPages
	c.Close()

	// Something else fills the disk, leaving less than the reserve free.
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	free := int64(fs.Bavail) * int64(fs.Bsize)
	filler := free - 256<<10
	if err := os.WriteFile(filepath.Join(dir, "other"), make([]byte, filler), 0o644); err != nil {
		t.Fatal(err)
	}

	c2, err := cache.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	st2 := c2.Stats()
	if st2.Degraded || st2.CapacityPages != capPages || st2.ReindexedPages != pages {
		t.Fatalf("warm restart on a disk with 256 KiB free: degraded %v (%q), %d of %d slots, %d of %d pages re-indexed; want every slab and page kept (they take no new space)",
			st2.Degraded, st2.DegradedReason, st2.CapacityPages, capPages, st2.ReindexedPages, pages)
	}
}

// ENOSPC injected into fallocate at start and into writes later.
func TestDiskFullInjected(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/inj", "v", 30*testPage)
	var slabs atomic.Int32
	cfg := cache.WithFaults(cache.Config{Origin: org, Dir: t.TempDir(), CapacityBytes: 4 << 20, SlabSize: 1 << 20, PageSize: testPage},
		cache.Faults{Fallocate: func(fd int, off, n int64) error {
			if slabs.Add(1) > 2 {
				return syscall.ENOSPC
			}
			return syscall.Fallocate(fd, 0, off, n)
		}})
	c, err := cache.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); !st.Degraded || st.DiskBytes > 2<<20 || st.CapacityPages == 0 {
		t.Fatalf("after ENOSPC on slab 3: %+v", st)
	}
	// The slabs that fit cache pages (a fault review found they did not).
	mustGet(t, c, obj, 0, 10*testPage)
	got, res := mustGet(t, c, obj, 0, 10*testPage)
	checkBytes(t, obj, 0, got)
	if res.HitPages != 10 {
		t.Fatalf("second read on the 2 slabs that fit: %d hits, want 10", res.HitPages)
	}
	c.Close()

	var fail atomic.Bool
	cfg = cache.WithFaults(cache.Config{Origin: org, Dir: t.TempDir(), CapacityBytes: 1 << 20, PageSize: testPage},
		cache.Faults{Pwrite: func(fd int, p []byte, off int64) (int, error) {
			if fail.Load() {
				return 0, syscall.ENOSPC
			}
			return syscall.Pwrite(fd, p, off)
		}})
	c, err = cache.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mustGet(t, c, obj, 0, 10*testPage)
	fail.Store(true)
	for i := 0; i < 2; i++ {
		got, _ := mustGet(t, c, obj, 0, obj.Size)
		checkBytes(t, obj, 0, got)
	}
	st := c.Stats()
	if !st.Degraded || st.WriteErrors == 0 || st.ResidentPages != 10 {
		t.Fatalf("after ENOSPC on write: degraded %v, %d write errors, %d resident; want true, >0, 10", st.Degraded, st.WriteErrors, st.ResidentPages)
	}
	checkInv(t, c)
	_, res = mustGet(t, c, obj, 0, 10*testPage)
	if res.HitPages != 10 {
		t.Fatalf("pages cached before the failure: %+v, want 10 hits", res)
	}
}

var _ = context.Background

// mountTmpfs mounts a tmpfs with opts on a fresh directory, or skips.
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs -o %s (%v: %s)", opts, err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

// useInodes creates empty files in dir until the file system has no
// inode left.
func useInodes(t *testing.T, dir string) {
	t.Helper()
	for i := 0; ; i++ {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("filler-%d", i)))
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling inodes: %v", err)
			}
			return
		}
		f.Close()
	}
}

// A file system with no inode left is a full disk: New degrades to
// pass-through instead of failing (it failed with ErrBadDir, so a cache
// node would not start; a review's finding, 2026-11-30), and a warm
// restart, whose lock and slab files exist already, reuses its slabs.
func TestNoInodesLeft(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/x", "v", 10*testPage)
	t.Run("cold start", func(t *testing.T) {
		dir := mountTmpfs(t, "size=4m,nr_inodes=16")
		useInodes(t, dir)
		for _, d := range []string{dir, filepath.Join(dir, "cache")} {
			c, err := cache.New(cache.Config{Origin: org, Dir: d, CapacityBytes: 1 << 20, PageSize: testPage})
			if err != nil {
				t.Fatalf("New in %s with no inode left: %v; want a degraded cache", d, err)
			}
			st := c.Stats()
			if st.Mode != "pass-through" || !st.Degraded || !strings.Contains(st.DegradedReason, "disk full") {
				t.Fatalf("stats: mode %q, degraded %v (%q); want pass-through for a full disk", st.Mode, st.Degraded, st.DegradedReason)
			}
			for i := 0; i < 2; i++ {
				got, _ := mustGet(t, c, obj, 0, obj.Size)
				checkBytes(t, obj, 0, got)
			}
			c.Close()
		}
		// With a RAM budget, the pages are cached in RAM instead.
		c, err := cache.New(cache.Config{Origin: org, Dir: dir, CapacityBytes: 1 << 20, MemoryBytes: 64 * testPage, PageSize: testPage})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if st := c.Stats(); st.Mode != "ram" || !st.Degraded || st.CapacityPages != 64 || !strings.Contains(st.DegradedReason, "in RAM") {
			t.Fatalf("stats with a RAM budget: mode %q, %d pages, degraded %v (%q); want ram, 64 pages, degraded", st.Mode, st.CapacityPages, st.Degraded, st.DegradedReason)
		}
		mustGet(t, c, obj, 0, obj.Size)
		got, res := mustGet(t, c, obj, 0, obj.Size)
		checkBytes(t, obj, 0, got)
		if res.HitPages != 10 {
			t.Fatalf("second read with a RAM budget on a full disk: %d hits, want 10", res.HitPages)
		}
		checkInv(t, c)
	})
	t.Run("warm restart", func(t *testing.T) {
		dir := mountTmpfs(t, "size=8m,nr_inodes=16")
		cfg := cache.Config{Origin: org, Dir: dir, CapacityBytes: 1 << 20, PageSize: testPage}
		c, err := cache.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		mustGet(t, c, obj, 0, obj.Size)
		pages := c.Stats().ResidentPages
		c.Close()
		useInodes(t, dir)
		c, err = cache.New(cfg)
		if err != nil {
			t.Fatalf("warm restart with no inode left: %v", err)
		}
		defer c.Close()
		if st := c.Stats(); st.Degraded || st.ReindexedPages != pages {
			t.Fatalf("warm restart with no inode left: degraded %v (%q), %d pages re-indexed; want %d, not degraded", st.Degraded, st.DegradedReason, st.ReindexedPages, pages)
		}
		got, res := mustGet(t, c, obj, 0, obj.Size)
		checkBytes(t, obj, 0, got)
		if res.HitPages != pages {
			t.Fatalf("after the restart: %d hits, want %d", res.HitPages, pages)
		}
	})
}

// A sparse slab (a file system without fallocate) needs its holes from
// the free space at a restart: counted as taking no new space, it filled a
// full disk to its last byte, past the reserve kept for the rest of the
// machine (a review's finding, 2026-11-30). Its pages are dropped instead.
func TestSparseSlabOnFullDiskKeepsReserve(t *testing.T) {
	dir := mountTmpfs(t, "size=8m")
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/x", "v", 4<<20)
	noFallocate := cache.Faults{Fallocate: func(int, int64, int64) error { return syscall.EOPNOTSUPP }}
	cfg := cache.WithFaults(cache.Config{Origin: org, Dir: dir, CapacityBytes: 4 << 20, SlabSize: 4 << 20, PageSize: testPage, Policy: "lru"}, noFallocate)
	c, err := cache.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustGet(t, c, obj, 0, 4*testPage) // a few pages: the slab stays mostly holes
	c.Close()
	// Something else takes all but 1 MiB of the disk.
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "other"), make([]byte, int64(fs.Bavail)*int64(fs.Bsize)-1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err = cache.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 2; i++ {
		got, _ := mustGet(t, c, obj, 0, obj.Size)
		checkBytes(t, obj, 0, got)
	}
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	reserve := int64(fs.Blocks) * int64(fs.Bsize) / 20
	if free := int64(fs.Bavail) * int64(fs.Bsize); free < reserve {
		t.Fatalf("%d bytes free after reads through a sparse slab on a full disk, want the reserve (%d) kept", free, reserve)
	}
}

// After a failed slab write the cache stops storing new pages for a pause
// (30 s, doubling while retries fail), then tries again: a disk that was
// full for a while is used again without a restart (it stopped for good; a
// review's suspicion, 2026-11-30).
func TestStoresAgainAfterWriteFailurePause(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/pause", "v", 12*testPage)
	var fail atomic.Bool
	var clock atomic.Int64 // seconds after the start
	t0 := time.Unix(1_800_000_000, 0)
	cfg := cache.WithFaults(cache.Config{Origin: org, Dir: t.TempDir(), CapacityBytes: 1 << 20, PageSize: testPage, Policy: "lru"},
		cache.Faults{
			Pwrite: func(fd int, p []byte, off int64) (int, error) {
				if fail.Load() {
					return 0, syscall.ENOSPC
				}
				return syscall.Pwrite(fd, p, off)
			},
			Clock: func() time.Time { return t0.Add(time.Duration(clock.Load()) * time.Second) },
		})
	c, err := cache.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	page := func(i int) (hits int64) {
		t.Helper()
		got, res := mustGet(t, c, obj, int64(i)*testPage, testPage)
		checkBytes(t, obj, int64(i)*testPage, got)
		return res.HitPages
	}
	page(0)
	fail.Store(true)
	page(1) // the write fails: a pause of 30 s begins
	st := c.Stats()
	if !st.Degraded || st.WriteErrors != 1 || !strings.Contains(st.DegradedReason, "30s") {
		t.Fatalf("after a failed write: degraded %v (%q), %d write errors; want a 30s pause, 1 error", st.Degraded, st.DegradedReason, st.WriteErrors)
	}
	fail.Store(false)
	clock.Store(29)
	page(2) // in the pause: not stored, no write tried
	if page(2) != 0 || c.Stats().WriteErrors != 1 {
		t.Fatalf("page 2 read during the pause was stored (or written)")
	}
	// Pages seen and not kept (page 1's write failed, page 2 came in the
	// pause) miss again as capacity misses, not as cold ones.
	for _, i := range []int64{1, 2} {
		if _, res := mustGet(t, c, obj, i*testPage, testPage); res.Misses[cache.MissCapacity].Pages != 1 {
			t.Fatalf("page %d read again in the pause: misses by cause %v, want one capacity miss", i, res.Misses)
		}
	}
	fail.Store(true)
	clock.Store(30)
	page(3) // the retry fails: a pause of 60 s
	if st := c.Stats(); st.WriteErrors != 2 || !strings.Contains(st.DegradedReason, "1m0s") {
		t.Fatalf("after a failed retry: %d write errors, reason %q; want 2 and a 1m0s pause", st.WriteErrors, st.DegradedReason)
	}
	fail.Store(false)
	clock.Store(89)
	if page(4); page(4) != 0 {
		t.Fatalf("page 4 read during the second pause was stored")
	}
	clock.Store(90)
	page(5) // the retry succeeds: storing again
	if st := c.Stats(); st.Degraded || page(5) != 1 {
		t.Fatalf("after a successful retry: degraded %v (%q), or page 5 not cached", st.Degraded, st.DegradedReason)
	}
	if page(0) != 1 {
		t.Fatalf("page 0, cached before the failures, is gone")
	}
	// A success between failures does not reset the pause (a sparse slab
	// on a full disk fails and succeeds by turns): a failure within 10 min
	// of the last pause's end doubles it again.
	fail.Store(true)
	clock.Store(100)
	page(6)
	if st := c.Stats(); !strings.Contains(st.DegradedReason, "2m0s") {
		t.Fatalf("a failure 10 s after a pause that a success ended: reason %q, want a 2m0s pause", st.DegradedReason)
	}
	// Once the pause is over the cache is not degraded, written to or not.
	fail.Store(false)
	clock.Store(220)
	if st := c.Stats(); st.Degraded {
		t.Fatalf("after the pause's end: degraded (%q), want not", st.DegradedReason)
	}
	// A failure long after the last pause starts again at 30 s.
	fail.Store(true)
	clock.Store(220 + 601)
	page(7)
	if st := c.Stats(); !strings.Contains(st.DegradedReason, "for 30s") {
		t.Fatalf("a failure 10 min after the last pause: reason %q, want a 30s pause", st.DegradedReason)
	}
	checkInv(t, c)
}
