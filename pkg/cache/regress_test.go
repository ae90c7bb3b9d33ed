package cache

// Regression tests from an adversarial review of the page cache
// (2026-11-30): one per bug it found (each failed before its fix; the
// comment says what was wrong and how it was fixed), and tests of edge
// cases not covered elsewhere.
//
// The file is in package cache (not cache_test) because two reproducers
// need to force an interleaving through internals (the object table's lock,
// the id counter); it therefore has its own small origin (package
// cachetest imports cache, which an internal test may not import).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"
)

const revPage = 4096

// revOrigin serves generated objects: byte i of (uri, version) is a hash of
// the key and i, so two objects never share contents. Size is the caller's:
// every range below it is served. hook, if set, runs first in every ReadAt.
type revOrigin struct {
	calls atomic.Int64
	mu    sync.Mutex
	hook  func(ctx context.Context, obj Object, p []byte, off int64) (int, error, bool)
	// data overrides generated contents for a URI (its Version is ignored).
	data map[string][]byte
}

func revBytes(obj Object, off int64, n int) []byte {
	seed := xxhash.Sum64String(obj.URI + "\xff" + obj.Version)
	b := make([]byte, n)
	for i := range b {
		x := uint64(off+int64(i)) ^ seed
		b[i] = byte(mix64(x/8) >> (8 * (x % 8)))
	}
	return b
}

func (o *revOrigin) setData(uri string, d []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.data == nil {
		o.data = make(map[string][]byte)
	}
	o.data[uri] = d
}

func (o *revOrigin) ReadAt(ctx context.Context, obj Object, p []byte, off int64) (int, error) {
	o.calls.Add(1)
	o.mu.Lock()
	hook, d := o.hook, o.data[obj.URI]
	o.mu.Unlock()
	if hook != nil {
		if n, err, done := hook(ctx, obj, p, off); done {
			return n, err
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if d != nil {
		return copy(p, d[off:]), nil
	}
	n := int(min(int64(len(p)), obj.Size-off))
	copy(p, revBytes(obj, off, n))
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func revDiskCfg(org Origin, dir string, pages int) Config {
	return Config{Origin: org, Dir: dir, PageSize: revPage, Policy: "lru", Shards: 1, Logger: slog.New(slog.DiscardHandler),
		CapacityBytes: int64(pages)*(revPage+headerSize) + 3*4096}
}

func revNew(t *testing.T, cfg Config) *Cache {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func revGet(t *testing.T, c *Cache, obj Object, off, n int64) ([]byte, ReadResult) {
	t.Helper()
	dst := make([]byte, n)
	res, err := c.Get(context.Background(), obj, off, n, dst)
	if err != nil {
		t.Fatalf("Get(%q, %d, %d): %v", obj.URI, off, n, err)
	}
	return dst[:res.Bytes], res
}

// ---------------------------------------------------------------------------
// Regressions
// ---------------------------------------------------------------------------

// Was: Invalidate racing Close touches the closed slab store. Invalidate
// checks c.closed once at its start; Close does not wait for it (it waits
// only for pins and flights), and dropObject's clearEvictedHeaders
// (shard.go) writes the headers of stale slots without checking sh.closed
// and without a pin. After Close, diskStore.slabs is nil, so locate panics
// with an index out of range (and before that nil-ing, the pwrite would go
// to a closed, possibly reused, file descriptor: zeroing 512 bytes of some
// other file). The same path is reached from Get (fetchRun -> refused ->
// dropObject, after its flights are completed, and read -> dropObject of
// a version pushed out by lookup).
//
// The interleaving is forced by holding the object table's lock, so that
// Invalidate stops inside objects.remove after its closed check while
// Close runs to completion. Expected: Invalidate returns (0, nil) or
// ErrClosed, never panics and never writes to the store after Close.
// Fixed: invalidations in progress are counted (enterDrop), Close waits
// for them before it closes the store, and those that start after Close
// return ErrClosed.
func TestInvalidateRacingCloseWritesNothingAfterClose(t *testing.T) {
	org := &revOrigin{}
	// The data write of the first page fails: its slot is released with a
	// header in an unknown state, on the shard's stale list.
	var armed, failed atomic.Bool
	cfg := revDiskCfg(org, t.TempDir(), 16)
	cfg.hooks = &hooks{pwrite: func(fd int, p []byte, off int64) (int, error) {
		if armed.Load() && len(p) == revPage && failed.CompareAndSwap(false, true) {
			return 0, unix.EIO
		}
		return unix.Pwrite(fd, p, off)
	}}
	c := revNew(t, cfg)
	armed.Store(true)
	x := Object{URI: "s3://b/x", Version: "v", Size: revPage}
	revGet(t, c, x, 0, revPage)
	if c.StaleHeaderSlots() == 0 {
		t.Fatal("setup: no stale header slot after a failed write")
	}

	c.objects.mu.Lock()
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		c.Invalidate(x.URI) // blocks in objects.remove, past its closed check
	}()
	time.Sleep(50 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	time.Sleep(50 * time.Millisecond)
	c.objects.mu.Unlock()
	if p := <-panicked; p != nil {
		t.Fatalf("Invalidate racing Close panicked: %v", p)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// Was: New panics (nil pointer dereference) instead of returning an error
// when a slab file cannot be opened or prepared for a reason other than a
// full disk: openDiskStore (store.go) has a named result s and a deferred
// "if err != nil { s.close() }", but its error returns are
// "return nil, \"\", err", which set s to nil before the deferred call runs;
// diskStore.close then dereferences nil. Any such error reaches it: a slab
// path that is a directory or not openable (ErrBadDir from openSlab), a
// fallocate error other than ENOSPC/EDQUOT/EOPNOTSUPP (EIO, EINVAL on some
// FUSE file systems), a failed superblock write, a failed mmap.
//
// Expected: New returns the error (ErrBadDir for the directory), and the
// directory lock is released so a corrected retry can open it. Fixed:
// openDiskStore closes the store through a variable of its own.
func TestNewReturnsSlabOpenErrors(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string, cfg *Config)
		want  error
	}{
		{"slab path is a directory", func(t *testing.T, dir string, _ *Config) {
			if err := os.Mkdir(filepath.Join(dir, slabName(0)), 0o755); err != nil {
				t.Fatal(err)
			}
		}, ErrBadDir},
		{"fallocate fails with EIO", func(_ *testing.T, _ string, cfg *Config) {
			cfg.hooks = &hooks{fallocate: func(int, int64, int64) error { return unix.EIO }}
		}, unix.EIO},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := revDiskCfg(&revOrigin{}, dir, 16)
			tc.setup(t, dir, &cfg)
			var c *Cache
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("New panicked: %v", p)
					}
				}()
				c, err = New(cfg)
			}()
			if err == nil {
				c.Close()
				t.Fatal("New succeeded")
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("New: %v, want %v", err, tc.want)
			}
		})
	}
}

// Was: a slab of the right layout that fails to map at start (mmap's
// ENOMEM, or vm.max_map_count reached) was deleted: openSlab removed its
// file on any error, so the failed start lost every page cached there and
// the start after it came up cold. Fixed: openSlab removes only a file it
// had begun to re-lay.
func TestSlabThatFailsToMapKeepsItsPages(t *testing.T) {
	dir := t.TempDir()
	org := &revOrigin{}
	obj := Object{URI: "s3://b/warm", Version: "v", Size: 4 * revPage}
	c := revNew(t, revDiskCfg(org, dir, 16))
	want, _ := revGet(t, c, obj, 0, obj.Size)
	c.Close()

	cfg := revDiskCfg(org, dir, 16)
	cfg.hooks = &hooks{mmap: func(int, int64, int, int, int) ([]byte, error) { return nil, unix.ENOMEM }}
	if c, err := New(cfg); err == nil {
		c.Close()
		t.Fatal("New succeeded with every mmap failing")
	} else if !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("New: %v, want ENOMEM", err)
	}

	calls := org.calls.Load()
	c2 := revNew(t, revDiskCfg(org, dir, 16))
	got, res := revGet(t, c2, obj, 0, obj.Size)
	if !bytes.Equal(got, want) {
		t.Fatal("after the failed start: wrong bytes")
	}
	if res.HitBytes != obj.Size || org.calls.Load() != calls {
		t.Fatalf("after the failed start: %d of %d bytes hit, %d origin calls; want all hits (the failed start deleted the slab)",
			res.HitBytes, obj.Size, org.calls.Load()-calls)
	}
}

// Was: Invalidate does not clear the on-disk headers of evicted pages of
// an object that the object table already collected (objectTable.sweep
// drops objects with no resident pages, without clearing anything). Then
// Invalidate's objects.remove finds no version of the URI, dropObject is
// never called, and neither is clearEvictedHeaders (read.go dropObject;
// cache.go Invalidate). The evicted page's header survives, and after a
// restart the old bytes are re-indexed and served: with an origin without
// versions (Version ""), the cache cannot tell them from the new contents.
// The package doc promises "once they return no page of it comes back
// after a restart or a crash".
//
// Expected: after Invalidate and a restart the read returns the origin's
// new bytes. Fixed: Invalidate clears the evicted pages' headers also when
// no version of the URI is in the table.
func TestInvalidateClearsHeadersOfForgottenObject(t *testing.T) {
	dir := t.TempDir()
	org := &revOrigin{}
	old := bytes.Repeat([]byte{0xAA}, revPage)
	org.setData("s3://b/x", old)
	x := Object{URI: "s3://b/x", Version: "", Size: revPage}
	c := revNew(t, revDiskCfg(org, dir, 16))
	slots := c.Stats().CapacityPages
	y := Object{URI: "s3://b/y", Version: "v", Size: (slots - 1) * revPage}
	z := Object{URI: "s3://b/z", Version: "v", Size: slots * revPage}
	revGet(t, c, x, 0, revPage)
	revGet(t, c, y, 0, y.Size)
	// Evict x while a reader pins it: its slot goes pending, not reused,
	// and keeps its header (as TestInvalidatedEvictedPageStaysGoneAfterRestart).
	if _, err := c.View(context.Background(), x, 0, revPage, func([]byte) error {
		revGet(t, c, z, 0, z.Size)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Intern enough objects for the table to sweep; their pages are not
	// cacheable (key too long for a header), so no slot is reused.
	long := string(bytes.Repeat([]byte{'k'}, maxKeyBytes))
	for i := 0; i <= minSweep; i++ {
		revGet(t, c, Object{URI: fmt.Sprintf("s3://b/%s/%d", long, i), Version: "v", Size: 1}, 0, 1)
	}
	c.objects.mu.Lock()
	_, present := c.objects.byURI[x.URI]
	c.objects.mu.Unlock()
	if present {
		t.Fatal("setup: x was not collected by the object table's sweep")
	}
	// x changes at the origin (same size, no version); the caller
	// invalidates it.
	fresh := bytes.Repeat([]byte{0xBB}, revPage)
	org.setData(x.URI, fresh)
	if _, err := c.Invalidate(x.URI); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c2 := revNew(t, revDiskCfg(org, dir, 16))
	got, res := revGet(t, c2, x, 0, revPage)
	if !bytes.Equal(got, fresh) {
		t.Fatalf("after Invalidate and a restart: %+v, first byte %#x; want %#x from the origin (the invalidated page came back)", res, got[0], fresh[0])
	}
}

// Was: singleflight breaks down when the origin fails with its own
// timeout. A follower retries a page itself when its leader's error is a
// context error and the follower's context is still live (read.go
// readWindow, "Our leader gave up; we did not"), assuming the error came
// from the leader's context. But an origin that bounds each request with
// its own deadline (context.WithTimeout inside ReadAt, an SDK's per-try
// timeout) returns an error wrapping context.DeadlineExceeded while every
// reader's context is fine. Then each follower retries in turn: N readers
// of one page make N origin requests, one after another, and the last
// reader waits N origin timeouts.
//
// Expected: the leader's origin error is shared by its waiters (one origin
// request for the page). Fixed: the flight records whether the leader's
// own context was done when its fetch failed (flight.gaveUp), and waiters
// retry only then.
func TestOriginTimeoutSharedByWaiters(t *testing.T) {
	const readers = 6
	const timeout = 150 * time.Millisecond
	org := &revOrigin{}
	org.hook = func(ctx context.Context, _ Object, _ []byte, _ int64) (int, error, bool) {
		ctx, cancel := context.WithTimeout(ctx, timeout) // the origin's own bound
		defer cancel()
		<-ctx.Done() // a hung origin
		return 0, fmt.Errorf("origin: GetObject: %w", ctx.Err()), true
	}
	c := revNew(t, Config{Origin: org, MemoryBytes: 16 * revPage, PageSize: revPage})
	obj := Object{URI: "s3://b/slow", Version: "v", Size: revPage}
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, readers)
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := c.Get(context.Background(), obj, 0, revPage, make([]byte, revPage))
			errs <- err
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	took := time.Since(t0)
	close(errs)
	for err := range errs {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a reader got %v, want the origin's deadline error", err)
		}
	}
	if n := org.calls.Load(); n > 2 {
		t.Fatalf("%d concurrent readers of one page made %d origin requests in %v (each follower retried the origin's own timeout); want 1", readers, n, took.Round(time.Millisecond))
	}
}

// Was: after 2^32 interned objects, object ids wrap and a live object's id
// is handed to a new one (objects.go newObject: next++ skipping only 0).
// The index guards against that (plan and storePage check slot.obj), but
// flights do not: plan joins sh.flights[pageKey] without checking which
// object the flight fetches (read.go plan), so a reader of the new object
// gets the bytes the old object's leader fetched: wrong bytes. The
// objectTable comment claims "even a reused id cannot serve wrong bytes".
// Ids are consumed by every intern, including re-interning after a sweep,
// so a long-running node does reach 2^32 (about 5 days at 10,000 new
// objects a second).
//
// The test stands in for 2^32-1 interns by setting the id counter. Expected:
// the second object's read returns its own bytes. Fixed: a flight names its
// object, and a reader that finds another object's flight waits for it and
// plans the page again (dropping the other's page, or leading a flight).
func TestReusedObjectIdDoesNotShareFlight(t *testing.T) {
	inA, releaseA := make(chan struct{}), make(chan struct{})
	var once sync.Once
	org := &revOrigin{}
	org.hook = func(_ context.Context, obj Object, _ []byte, _ int64) (int, error, bool) {
		if obj.URI == "s3://b/a" {
			once.Do(func() { close(inA) })
			<-releaseA
		}
		return 0, nil, false
	}
	c := revNew(t, Config{Origin: org, MemoryBytes: 16 * revPage, PageSize: revPage, Shards: 1})
	a := Object{URI: "s3://b/a", Version: "v", Size: revPage}
	b := Object{URI: "s3://b/b", Version: "v", Size: revPage}
	aDone := make(chan error, 1)
	go func() {
		_, err := c.Get(context.Background(), a, 0, revPage, make([]byte, revPage))
		aDone <- err
	}()
	<-inA // a's page 0 is in flight
	c.objects.mu.Lock()
	aID := c.objects.byURI[a.URI][0].id
	// 2^32 - 1 interns later the counter is just before a's id again (0
	// is skipped).
	c.objects.next = aID - 1
	if aID == 1 {
		c.objects.next = math.MaxUint32
	}
	c.objects.mu.Unlock()

	bDst := make([]byte, revPage)
	bDone := make(chan error, 1)
	go func() {
		_, err := c.Get(context.Background(), b, 0, revPage, bDst)
		bDone <- err
	}()
	// Wait until b's read has either joined a flight or gone to the origin.
	sh := &c.shards[0]
	for deadline := time.Now().Add(5 * time.Second); ; {
		sh.mu.Lock()
		joined := false
		for _, fl := range sh.flights {
			joined = joined || fl.waiters > 0
		}
		sh.mu.Unlock()
		if joined || org.calls.Load() > 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(releaseA)
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bDst, revBytes(b, 0, revPage)) {
		same := bytes.Equal(bDst, revBytes(a, 0, revPage))
		t.Fatalf("object b read wrong bytes (they are a's bytes: %v): a reused object id joined another object's flight", same)
	}
}

// Was: the warm-restart scan merges two different objects into one when
// their URI and version differ only in where a NUL byte falls: the key it
// groups headers by is uri + "\x00" + version + size (reindex.go
// scanHeaders), so ("s3://b/k\x00v", "") and ("s3://b/k", "v\x00") collide.
// Their pages are re-indexed under one name (the first header seen), and a
// read of that object after the restart returns the other object's bytes.
// Object.validate accepts any bytes in URI and Version. (The same
// ambiguity exists in objectHash, used only for miss-classification
// fingerprints.)
//
// Expected: each object's own bytes after a restart. Fixed: the scan key
// and objectHash start with the URI's length.
func TestReindexKeepsObjectsApartAroundNUL(t *testing.T) {
	dir := t.TempDir()
	org := &revOrigin{}
	a := Object{URI: "s3://b/k\x00v", Version: "", Size: 2 * revPage}
	b := Object{URI: "s3://b/k", Version: "v\x00", Size: 2 * revPage}
	c := revNew(t, revDiskCfg(org, dir, 16))
	revGet(t, c, a, 0, revPage)       // a's page 0
	revGet(t, c, b, revPage, revPage) // b's page 1
	c.Close()
	c2 := revNew(t, revDiskCfg(org, dir, 16))
	for _, obj := range []Object{a, b} {
		got, res := revGet(t, c2, obj, 0, obj.Size)
		if !bytes.Equal(got, revBytes(obj, 0, int(obj.Size))) {
			t.Fatalf("after a restart, %q version %q: wrong bytes (%+v): another object's page was re-indexed under its name", obj.URI, obj.Version, res)
		}
	}
}

// Was (counters): a read of an object too large for page keys (more than
// 2^32 pages, read straight through) counts a page twice when an origin
// request boundary falls inside it: readThrough (read.go) counts every
// delivered chunk as a page, and its requests start at the read's offset,
// not at a page boundary. ReadResult.Misses and Stats.Misses then count
// more cold pages than the read touched (and Stats.Uncacheable counts
// chunks, not pages).
//
// Expected: a read of [100, 100+8 pages) touches 9 pages: 9 cold misses.
// Fixed: readThrough's requests end at page boundaries.
func TestReadThroughCountsEachPageOnce(t *testing.T) {
	org := &revOrigin{}
	c := revNew(t, Config{Origin: org, MemoryBytes: 16 * revPage, PageSize: revPage, MaxFetchBytes: 4 * revPage})
	huge := Object{URI: "s3://b/huge", Version: "v", Size: math.MaxInt64}
	const off, n = 100, 8 * revPage
	got, res := revGet(t, c, huge, off, n)
	if !bytes.Equal(got, revBytes(huge, off, n)) {
		t.Fatal("wrong bytes")
	}
	first, last := pageSpan(off, off+n, revPage)
	want := last - first + 1
	if res.MissPages() != want || res.Misses[MissCold].Pages != want {
		t.Fatalf("read of [%d, %d) touching %d pages: %d missed pages (%v), want %d", off, off+n, want, res.MissPages(), res.Misses, want)
	}
	if st := c.Stats(); st.Misses[MissCold].Pages != want {
		t.Fatalf("Stats: %d cold pages, want %d", st.Misses[MissCold].Pages, want)
	}
}

// Was (robustness): a panic in a View callback or in the Origin is not
// contained. readWindow (read.go) releases pins, buffer references and
// flights only on its normal paths, with no defer: a callback that panics
// (net/http recovers a handler's panic, so the node keeps running) leaves
// its page pinned for ever (a slot lost to the capacity) and Close waits
// for that pin for ever; an Origin that panics in a read's only run (it
// runs on the reader's goroutine) leaves the page's flight registered for
// ever, so every later reader of the page blocks until its context ends
// (for ever without a deadline), and Close hangs too. (With several runs
// the origin runs on fetchAll's goroutines and a panic kills the process.)
//
// Expected: the pins and flights are released as the panic unwinds, later
// readers fetch the page, Close returns. Fixed: readWindow releases what it
// holds when a callback panics (and the panic goes on); an origin's panic
// is recovered, logged and returned as ErrOriginPanic (callOrigin), which
// completes the flights.
func TestPanicInCallbackOrOriginReleasesCache(t *testing.T) {
	t.Run("View callback", func(t *testing.T) {
		org := &revOrigin{}
		c, err := New(Config{Origin: org, MemoryBytes: 16 * revPage, PageSize: revPage})
		if err != nil {
			t.Fatal(err)
		}
		obj := Object{URI: "s3://b/p", Version: "v", Size: revPage}
		revGet(t, c, obj, 0, revPage) // cached: View pins it
		var got any
		func() {
			defer func() { got = recover() }()
			c.View(context.Background(), obj, 0, revPage, func([]byte) error { panic("handler bug") })
		}()
		if got != "handler bug" {
			t.Fatalf("View's caller recovered %v, want the callback's panic", got)
		}
		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		select {
		case <-closed:
		case <-time.After(2 * time.Second):
			t.Fatal("Close hangs after a View callback panicked: the page it pinned is never unpinned")
		}
	})
	t.Run("Origin", func(t *testing.T) {
		var panicOnce atomic.Bool
		org := &revOrigin{}
		org.hook = func(context.Context, Object, []byte, int64) (int, error, bool) {
			if panicOnce.CompareAndSwap(false, true) {
				panic("origin bug")
			}
			return 0, nil, false
		}
		c, err := New(Config{Origin: org, MemoryBytes: 16 * revPage, PageSize: revPage, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { go c.Close() }() // it may hang: do not wait for it
		obj := Object{URI: "s3://b/p", Version: "v", Size: revPage}
		if _, err := c.Get(context.Background(), obj, 0, revPage, make([]byte, revPage)); !errors.Is(err, ErrOriginPanic) {
			t.Fatalf("the read whose origin panicked: %v, want ErrOriginPanic", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, err := c.Get(ctx, obj, 0, revPage, make([]byte, revPage)); err != nil {
			t.Fatalf("the read after an Origin panic: %v (it waited on the dead reader's flight)", err)
		}
	})
}

// Was: the fix for panicking View callbacks (readWindow's deferred
// release) recovered and re-panicked, and a callback that ends its
// goroutine with runtime.Goexit (t.Fatal inside a test's callback) became
// a panic with a nil value (*runtime.PanicNilError). Fixed: the deferred
// release does not recover; a panic or Goexit unwinds as it was.
func TestViewCallbackGoexitStaysAGoexit(t *testing.T) {
	org := &revOrigin{}
	c := revNew(t, Config{Origin: org, MemoryBytes: 16 * revPage, PageSize: revPage})
	obj := Object{URI: "s3://b/g", Version: "v", Size: revPage}
	revGet(t, c, obj, 0, revPage) // cached: View pins it
	var panicked any
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { panicked = recover() }()
		c.View(context.Background(), obj, 0, revPage, func([]byte) error {
			runtime.Goexit() // as t.FailNow does
			return nil
		})
	}()
	wg.Wait()
	if panicked != nil {
		t.Fatalf("a View callback that called runtime.Goexit made View panic: %v (%T)", panicked, panicked)
	}
	// And the pin is released, as for a panicking callback.
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("Close hangs after a View callback called Goexit")
	}
}

// Was: when Close began after Invalidate had entered, Close marked the
// shards closed and waited for the invalidation, but dropByPage and
// dropByIndex stopped at the first closed shard: Invalidate returned
// (0, nil) and the page's header stayed valid, so a restart served the
// old bytes. Fixed: drops finish in closed shards (Close keeps the store
// open until they do).
func TestInvalidateRacingCloseClearsWhatItDrops(t *testing.T) {
	dir := t.TempDir()
	org := &revOrigin{}
	x := Object{URI: "s3://b/x", Version: "", Size: revPage}
	org.setData(x.URI, bytes.Repeat([]byte{0xAA}, revPage))
	c := revNew(t, revDiskCfg(org, dir, 16))
	revGet(t, c, x, 0, revPage) // resident, header valid on disk

	// Stop Invalidate inside objects.remove, past enterDrop.
	c.objects.mu.Lock()
	type result struct {
		n   int
		err error
	}
	inv := make(chan result, 1)
	go func() {
		n, err := c.Invalidate(x.URI)
		inv <- result{n, err}
	}()
	for c.drops.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	// Wait until Close has closed every shard (it then waits for drops).
	for deadline := time.Now().Add(5 * time.Second); ; {
		sh := &c.shards[len(c.shards)-1]
		sh.mu.Lock()
		done := sh.closed
		sh.mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			c.objects.mu.Unlock()
			t.Fatal("setup: Close did not close the shards")
		}
		time.Sleep(time.Millisecond)
	}
	c.objects.mu.Unlock()
	r := <-inv
	if err := <-closed; err != nil {
		t.Fatal(err)
	}

	// The caller invalidated x because it changed at the origin.
	fresh := bytes.Repeat([]byte{0xBB}, revPage)
	org.setData(x.URI, fresh)
	c2 := revNew(t, revDiskCfg(org, dir, 16))
	got, res := revGet(t, c2, x, 0, revPage)
	if r.err == nil && !bytes.Equal(got, fresh) {
		t.Fatalf("Invalidate racing Close returned (%d, nil), yet after a restart the invalidated page is served (%+v, first byte %#x, want %#x); want ErrClosed, or the page gone",
			r.n, res, got[0], fresh[0])
	}
	if r.err != nil && !errors.Is(r.err, ErrClosed) {
		t.Fatalf("Invalidate: %v, want nil or ErrClosed", r.err)
	}
}

// Was: readThrough sized its requests by its pooled buffer (a power of
// two pages), not by MaxFetchBytes: with MaxFetchBytes of 3 pages each
// request was 4 pages. Fixed: requests are at most MaxFetchBytes, and end
// at page boundaries.
func TestReadThroughRequestsAtMostMaxFetchBytes(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	org := &revOrigin{}
	org.hook = func(_ context.Context, _ Object, p []byte, _ int64) (int, error, bool) {
		mu.Lock()
		sizes = append(sizes, len(p))
		mu.Unlock()
		return 0, nil, false
	}
	const maxFetch = 3 * revPage
	c := revNew(t, Config{Origin: org, MemoryBytes: 16 * revPage, PageSize: revPage, MaxFetchBytes: maxFetch})
	huge := Object{URI: "s3://b/huge", Version: "v", Size: math.MaxInt64}
	got, _ := revGet(t, c, huge, 0, 12*revPage)
	if !bytes.Equal(got, revBytes(huge, 0, 12*revPage)) {
		t.Fatal("wrong bytes")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, n := range sizes {
		if n > maxFetch {
			t.Fatalf("readThrough made origin requests of %v bytes; MaxFetchBytes is %d", sizes, maxFetch)
		}
	}
}

// ---------------------------------------------------------------------------
// Edge cases (not covered elsewhere)
// ---------------------------------------------------------------------------

// Close while reads are in flight (misses against a slow origin, hits
// pinned in a slow View callback, followers waiting on flights), on disk
// with a RAM tier: Close waits for them; each read returns its correct
// bytes or ErrClosed; nothing panics; reads after Close return ErrClosed.
func TestCloseWithReadsInFlight(t *testing.T) {
	for round := range 3 {
		org := &revOrigin{}
		org.hook = func(ctx context.Context, _ Object, _ []byte, _ int64) (int, error, bool) {
			select {
			case <-time.After(time.Millisecond):
			case <-ctx.Done():
			}
			return 0, nil, false
		}
		cfg := revDiskCfg(org, t.TempDir(), 32)
		cfg.Shards, cfg.MemoryBytes = 0, 8*revPage
		c := revNew(t, cfg)
		objs := []Object{
			{URI: "s3://b/a", Version: "1", Size: 10*revPage + 7},
			{URI: "s3://b/b", Version: "1", Size: 3 * revPage},
		}
		for _, o := range objs {
			revGet(t, c, o, 0, o.Size)
		}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		var served, closedErrs atomic.Int64
		for g := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					o := objs[(g+i)%2]
					off := int64((g*7919 + i*4099) % int(o.Size))
					n := min(int64(3*revPage+11), o.Size-off)
					var err error
					var got []byte
					switch (g + i) % 3 {
					case 0:
						dst := make([]byte, n)
						var res ReadResult
						res, err = c.Get(context.Background(), o, off, n, dst)
						got = dst[:res.Bytes]
					default:
						_, err = c.View(context.Background(), o, off, n, func(p []byte) error {
							got = append(got, p...)
							time.Sleep(100 * time.Microsecond) // hold the pin
							return nil
						})
					}
					switch {
					case errors.Is(err, ErrClosed):
						closedErrs.Add(1)
						return
					case err != nil:
						t.Errorf("read: %v", err)
						return
					case !bytes.Equal(got, revBytes(o, off, int(n))):
						t.Errorf("%q [%d, %d): wrong bytes", o.URI, off, off+n)
						return
					}
					served.Add(1)
					if i%5 == 0 { // a new object: misses and flights
						o := Object{URI: fmt.Sprintf("s3://b/new-%d-%d-%d", round, g, i), Version: "1", Size: 2 * revPage}
						if _, err := c.Prefetch(context.Background(), o, 0, o.Size); err != nil && !errors.Is(err, ErrClosed) {
							t.Errorf("prefetch: %v", err)
						}
					}
				}
			}()
		}
		time.Sleep(30 * time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- c.Close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not return")
		}
		close(stop)
		wg.Wait()
		if served.Load() == 0 || closedErrs.Load() == 0 {
			t.Logf("round %d: %d reads served, %d ended with ErrClosed", round, served.Load(), closedErrs.Load())
		}
		if _, err := c.Get(context.Background(), objs[0], 0, 1, make([]byte, 1)); !errors.Is(err, ErrClosed) {
			t.Fatalf("Get after Close: %v, want ErrClosed", err)
		}
		if _, err := c.Invalidate(objs[0].URI); !errors.Is(err, ErrClosed) {
			t.Fatalf("Invalidate after Close: %v, want ErrClosed", err)
		}
		_ = c.Stats() // must not touch the unmapped slabs
	}
}

// Ranges at exact page and object boundaries, on disk with a RAM tier,
// served cold, warm (from the slab and from RAM copies) and after a warm
// restart (first-read verification), for objects whose last page is full,
// short, a single byte, or absent (size 0), against a brute-force
// reference. (FuzzGet covers RAM-only caches.)
func TestBoundaryRangesDisk(t *testing.T) {
	dir := t.TempDir()
	org := &revOrigin{}
	cfg := revDiskCfg(org, dir, 64)
	cfg.MemoryBytes, cfg.MaxFetchBytes = 4*revPage, 2*revPage
	const ps = revPage
	var objs []Object
	for i, size := range []int64{0, 1, ps - 1, ps, ps + 1, 3 * ps, 3*ps + 1} {
		objs = append(objs, Object{URI: fmt.Sprintf("s3://b/edge-%d", i), Version: "v", Size: size})
	}
	check := func(c *Cache, phase string) {
		for _, o := range objs {
			offs := []int64{0, 1, ps - 1, ps, ps + 1, 2*ps - 1, 2 * ps, o.Size - ps, o.Size - 1, o.Size, o.Size + 1}
			for _, off := range offs {
				for _, n := range []int64{1, ps - 1, ps, ps + 1, 2 * ps, math.MaxInt64 - max(off, 0)} {
					if off < 0 {
						continue
					}
					want, wantErr := []byte(nil), error(nil)
					if off > o.Size {
						wantErr = ErrOutOfRange
					} else {
						want = revBytes(o, off, int(min(off+min(n, o.Size), o.Size)-off))
					}
					dst := make([]byte, 4*ps)
					res, err := c.Get(context.Background(), o, off, n, dst)
					if !errors.Is(err, wantErr) {
						t.Fatalf("%s: size %d Get(%d, %d): %v, want %v", phase, o.Size, off, n, err, wantErr)
					}
					if err == nil && (res.Bytes != int64(len(want)) || !bytes.Equal(dst[:res.Bytes], want) ||
						res.HitBytes+res.MissBytes != res.Bytes) {
						t.Fatalf("%s: size %d Get(%d, %d): %+v, want %d correct bytes", phase, o.Size, off, n, res, len(want))
					}
				}
			}
		}
		if err := c.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	}
	c := revNew(t, cfg)
	check(c, "cold")
	check(c, "warm")
	check(c, "warm again (RAM copies)")
	if c.Stats().Promotions == 0 {
		t.Fatal("no page was promoted to the RAM tier")
	}
	c.Close()
	calls := org.calls.Load()
	c = revNew(t, cfg)
	check(c, "after restart")
	if n := org.calls.Load() - calls; n != 0 {
		t.Fatalf("after a restart with every page cached: %d origin calls", n)
	}
}

// An object that changes size under the same version string (an origin
// without versions: Version "") is another object: the old size's pages
// are never served for the new size, before or after a restart, and the
// origin serving the new size drops the old one's pages.
func TestSizeChangeSameVersion(t *testing.T) {
	dir := t.TempDir()
	org := &revOrigin{}
	cfg := revDiskCfg(org, dir, 16)
	c := revNew(t, cfg)
	v1 := bytes.Repeat([]byte{1}, 2*revPage+10)
	org.setData("s3://b/f", v1)
	o1 := Object{URI: "s3://b/f", Size: int64(len(v1))}
	got, _ := revGet(t, c, o1, 0, o1.Size)
	if !bytes.Equal(got, v1) {
		t.Fatal("v1: wrong bytes")
	}
	v2 := bytes.Repeat([]byte{2}, revPage+5)
	org.setData("s3://b/f", v2)
	o2 := Object{URI: "s3://b/f", Size: int64(len(v2))}
	got, res := revGet(t, c, o2, 0, o2.Size)
	if !bytes.Equal(got, v2) || res.HitPages != 0 || res.Misses[MissInvalidated].Pages != 2 {
		t.Fatalf("v2 after v1: %+v, want 2 invalidated misses and v2's bytes", res)
	}
	if st := c.Stats(); st.ResidentPages != 2 || st.InvalidatedPages != 3 {
		t.Fatalf("after the size change: %d resident, %d invalidated; want v2's 2 resident, v1's 3 dropped", st.ResidentPages, st.InvalidatedPages)
	}
	c.Close()
	c = revNew(t, cfg)
	got, res = revGet(t, c, o2, 0, o2.Size)
	if !bytes.Equal(got, v2) || res.HitPages != 2 {
		t.Fatalf("v2 after a restart: %+v", res)
	}
	if c.Stats().ReindexedPages != 2 {
		t.Fatalf("re-indexed %d pages, want v2's 2", c.Stats().ReindexedPages)
	}
}

// Origin answers at the edge of the contract: a count above len(p) with
// the buffer filled is accepted (the bytes are the buffer's), a full count
// with io.EOF is a success, a full count with another error and a short
// count with a nil error fail and cache nothing, and an origin that
// writes junk into p and fails leaves no trace. Cached bytes are checked
// by a second, hit-only read.
func TestOriginEdgeAnswers(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		answer  func(p []byte, good []byte) (int, error)
		wantErr error
	}{
		{"long count", func(p, good []byte) (int, error) { copy(p, good); return len(p) + 100, nil }, nil},
		{"full count with EOF", func(p, good []byte) (int, error) { copy(p, good); return len(p), io.EOF }, nil},
		{"full count with error", func(p, good []byte) (int, error) { copy(p, good); return len(p), boom }, boom},
		{"short count nil error", func(p, good []byte) (int, error) { copy(p, good); return len(p) - 1, nil }, ErrShortRead},
		{"zero count EOF", func(p, _ []byte) (int, error) { return 0, io.EOF }, ErrShortRead},
		{"junk then error", func(p, _ []byte) (int, error) {
			for i := range p {
				p[i] = 0xEE
			}
			return len(p), boom
		}, boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var bad atomic.Bool
			bad.Store(true)
			org := &revOrigin{}
			org.hook = func(_ context.Context, obj Object, p []byte, off int64) (int, error, bool) {
				if !bad.Load() {
					return 0, nil, false
				}
				n, err := tc.answer(p, revBytes(obj, off, len(p)))
				return n, err, true
			}
			c := revNew(t, Config{Origin: org, MemoryBytes: 16 * revPage, PageSize: revPage})
			obj := Object{URI: "s3://b/o", Version: "v", Size: 3*revPage - 9}
			dst := make([]byte, obj.Size)
			_, err := c.Get(context.Background(), obj, 0, obj.Size, dst)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Get: %v, want %v", err, tc.wantErr)
			}
			if err == nil && !bytes.Equal(dst, revBytes(obj, 0, int(obj.Size))) {
				t.Fatal("wrong bytes")
			}
			bad.Store(false)
			got, res := revGet(t, c, obj, 0, obj.Size)
			if !bytes.Equal(got, revBytes(obj, 0, int(obj.Size))) {
				t.Fatalf("second read: wrong bytes (%+v)", res)
			}
			if wantHits := map[bool]int64{true: 3, false: 0}[tc.wantErr == nil]; res.HitPages != wantHits {
				t.Fatalf("second read: %d hit pages, want %d", res.HitPages, wantHits)
			}
		})
	}
}

// A reader whose context is cancelled while it waits for another reader's
// flight returns at once with its context's error; the leader's read and
// the page's caching are unaffected, and the abandoned buffer reference
// does not corrupt later reads that reuse pooled buffers.
func TestFollowerCancelledWhileWaiting(t *testing.T) {
	inOrigin, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	org := &revOrigin{}
	org.hook = func(_ context.Context, obj Object, _ []byte, _ int64) (int, error, bool) {
		if obj.URI == "s3://b/slow" {
			once.Do(func() { close(inOrigin); <-release })
		}
		return 0, nil, false
	}
	c := revNew(t, Config{Origin: org, MemoryBytes: 4 * revPage, PageSize: revPage, Shards: 1})
	slow := Object{URI: "s3://b/slow", Version: "v", Size: 2 * revPage}
	leader := make(chan error, 1)
	dst := make([]byte, slow.Size)
	go func() {
		_, err := c.Get(context.Background(), slow, 0, slow.Size, dst)
		leader <- err
	}()
	<-inOrigin
	ctx, cancel := context.WithCancel(context.Background())
	follower := make(chan error, 1)
	go func() {
		_, err := c.Get(ctx, slow, 0, slow.Size, make([]byte, slow.Size))
		follower <- err
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-follower; !errors.Is(err, context.Canceled) {
		t.Fatalf("follower: %v, want context.Canceled", err)
	}
	close(release)
	if err := <-leader; err != nil || !bytes.Equal(dst, revBytes(slow, 0, int(slow.Size))) {
		t.Fatalf("leader: %v (or wrong bytes)", err)
	}
	// Churn through the pooled buffers: every read must be right.
	for i := range 50 {
		o := Object{URI: fmt.Sprintf("s3://b/churn-%d", i), Version: "v", Size: 2 * revPage}
		got, _ := revGet(t, c, o, 0, o.Size)
		if !bytes.Equal(got, revBytes(o, 0, int(o.Size))) {
			t.Fatalf("churn read %d: wrong bytes", i)
		}
	}
	if err := c.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
