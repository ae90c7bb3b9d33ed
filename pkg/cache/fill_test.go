package cache_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/cache/cachetest"
)

// Fifty readers ask for the same pages at once: each page is fetched from
// the origin exactly once.
func TestConcurrentMissesFetchOnce(t *testing.T) {
	for _, mode := range []string{"ram", "disk"} {
		t.Run(mode, func(t *testing.T) {
			org := cachetest.NewOrigin()
			org.Delay = 20 * time.Millisecond
			obj := org.PutGenerated("s3://b/hot", "v", 16*testPage)
			var c *cache.Cache
			if mode == "ram" {
				c = newRAM(t, org, 64, func(cfg *cache.Config) { cfg.MaxFetchBytes = testPage })
			} else {
				c = newDisk(t, org, t.TempDir(), 64, func(cfg *cache.Config) { cfg.MaxFetchBytes = testPage })
			}
			var wg sync.WaitGroup
			var start sync.WaitGroup
			start.Add(1)
			errs := make(chan error, 50)
			for r := 0; r < 50; r++ {
				wg.Add(1)
				go func(r int) {
					defer wg.Done()
					start.Wait()
					// Different but overlapping ranges.
					off := int64(r%4) * testPage
					n := int64(12 * testPage)
					dst := make([]byte, n)
					res, err := c.Get(context.Background(), obj, off, n, dst)
					if err != nil {
						errs <- err
						return
					}
					if res.Bytes != n {
						errs <- errors.New("short read")
						return
					}
					want := cachetest.Generated(obj.URI, obj.Version, off, int(n))
					if string(want) != string(dst) {
						errs <- errors.New("wrong bytes")
					}
				}(r)
			}
			start.Done()
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			perPage := map[int64]int{}
			for _, rq := range org.Requests() {
				for p := rq.Off / testPage; p < (rq.Off+int64(rq.Len)+testPage-1)/testPage; p++ {
					perPage[p]++
				}
			}
			if len(perPage) != 15 {
				t.Fatalf("origin saw %d distinct pages, want 15", len(perPage))
			}
			for p, n := range perPage {
				if n != 1 {
					t.Errorf("page %d fetched %d times, want once", p, n)
				}
			}
			checkInv(t, c)
		})
	}
}

// A range whose missing pages form runs makes one origin request per run
// (split at MaxFetchBytes), with the runs fetched in parallel.
func TestOneRequestPerRun(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/runs", "v", 40*testPage)
	c := newRAM(t, org, 128, func(cfg *cache.Config) {
		cfg.MaxFetchBytes = 4 * testPage
		cfg.FetchParallelism = 3
	})
	// Cache pages 3, 4 and 10.
	mustGet(t, c, obj, 3*testPage, 2*testPage)
	mustGet(t, c, obj, 10*testPage, 1)
	org.Reset()
	got, res := mustGet(t, c, obj, 0, 20*testPage)
	checkBytes(t, obj, 0, got)
	if res.HitPages != 3 || res.MissPages() != 17 {
		t.Fatalf("got %d hit and %d missed pages, want 3 and 17", res.HitPages, res.MissPages())
	}
	// Missing runs: [0,3) [5,10) [11,20); split at 4 pages:
	// [0,3) [5,9) [9,10) [11,15) [15,19) [19,20).
	var got2 [][2]int64
	for _, rq := range org.Requests() {
		got2 = append(got2, [2]int64{rq.Off / testPage, (rq.Off + int64(rq.Len)) / testPage})
	}
	sort.Slice(got2, func(i, j int) bool { return got2[i][0] < got2[j][0] })
	want := [][2]int64{{0, 3}, {5, 9}, {9, 10}, {11, 15}, {15, 19}, {19, 20}}
	if len(got2) != len(want) {
		t.Fatalf("origin requests (pages) %v, want %v", got2, want)
	}
	for i := range want {
		if got2[i] != want[i] {
			t.Fatalf("origin requests (pages) %v, want %v", got2, want)
		}
	}
	checkInv(t, c)
}

// One read keeps at most FetchParallelism origin requests in flight, and
// uses that many when the range has enough missing runs.
func TestFetchParallelismBound(t *testing.T) {
	for _, par := range []int{1, 3} {
		t.Run(fmt.Sprintf("parallelism=%d", par), func(t *testing.T) {
			org := cachetest.NewOrigin()
			obj := org.PutGenerated("s3://b/par", "v", 24*testPage)
			var inFlight, peak atomic.Int32
			slow := cache.OriginFunc(func(ctx context.Context, o cache.Object, p []byte, off int64) (int, error) {
				n := inFlight.Add(1)
				defer inFlight.Add(-1)
				for m := peak.Load(); n > m && !peak.CompareAndSwap(m, n); m = peak.Load() {
				}
				time.Sleep(20 * time.Millisecond)
				return org.ReadAt(ctx, o, p, off)
			})
			c := newRAM(t, slow, 64, func(cfg *cache.Config) {
				cfg.MaxFetchBytes = 2 * testPage
				cfg.FetchParallelism = par
			})
			got, _ := mustGet(t, c, obj, 0, obj.Size)
			checkBytes(t, obj, 0, got)
			if p := int(peak.Load()); p != par {
				t.Fatalf("peak origin requests in flight %d, want %d (12 runs of 2 pages)", p, par)
			}
		})
	}
}

// A huge range is streamed window by window.
func TestHugeRangeBoundedWindow(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/huge", "v", 1000*testPage+7)
	c := newRAM(t, org, 64, func(cfg *cache.Config) { cfg.MaxFetchBytes = 8 * testPage; cfg.FetchParallelism = 2 })
	var off int64
	res, err := c.View(context.Background(), obj, 0, 1<<62, func(p []byte) error {
		checkBytes(t, obj, off, p)
		off += int64(len(p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes != obj.Size || off != obj.Size {
		t.Fatalf("streamed %d bytes (result %d), want %d", off, res.Bytes, obj.Size)
	}
	if st := c.Stats(); st.ResidentPages > 64 {
		t.Fatalf("cache holds %d pages, capacity 64", st.ResidentPages)
	}
	checkInv(t, c)
}

// A new version is never served old bytes; its misses are "invalidated".
func TestNewVersionInvalidates(t *testing.T) {
	for _, mode := range []string{"ram", "disk"} {
		t.Run(mode, func(t *testing.T) {
			org := cachetest.NewOrigin()
			v1 := org.PutGenerated("s3://b/obj", "v1", 4*testPage)
			var c *cache.Cache
			if mode == "ram" {
				c = newRAM(t, org, 16)
			} else {
				c = newDisk(t, org, t.TempDir(), 16)
			}
			mustGet(t, c, v1, 0, 4*testPage)
			v2 := org.PutGenerated("s3://b/obj", "v2", 4*testPage)
			got, res := mustGet(t, c, v2, 0, 4*testPage)
			checkBytes(t, v2, 0, got)
			if res.Misses[cache.MissInvalidated].Pages != 4 || res.HitPages != 0 {
				t.Fatalf("read of v2: %+v, want 4 invalidated misses", res)
			}
			st := c.Stats()
			if st.ResidentPages != 4 || st.InvalidatedPages != 4 || st.Objects != 1 {
				t.Fatalf("stats: %d pages, %d invalidated, %d objects; want 4, 4, 1", st.ResidentPages, st.InvalidatedPages, st.Objects)
			}
			// A reader with a stale Stat asks for v1: the origin refuses it,
			// and v2's pages stay.
			_, err := c.Get(context.Background(), v1, 0, 10, make([]byte, 10))
			if !errors.Is(err, cache.ErrVersionChanged) {
				t.Fatalf("read of v1 after v2: %v, want ErrVersionChanged", err)
			}
			if _, res := mustGet(t, c, v2, 0, 4*testPage); res.HitPages != 4 {
				t.Fatalf("v2 after a stale v1 read: %+v, want 4 hits", res)
			}
			// Invalidate drops everything; the next read is an invalidated miss.
			n, err := c.Invalidate(v2.URI)
			if err != nil || n != 4 {
				t.Fatalf("Invalidate: %d, %v; want 4 pages", n, err)
			}
			_, res = mustGet(t, c, v2, 0, testPage)
			if res.Misses[cache.MissInvalidated].Pages != 1 {
				t.Fatalf("read after Invalidate: %+v, want an invalidated miss", res)
			}
			checkInv(t, c)
		})
	}
}

// Pages pushed out by others come back as capacity misses; never-seen
// pages are cold.
func TestCapacityMisses(t *testing.T) {
	org := cachetest.NewOrigin()
	a := org.PutGenerated("s3://b/a", "v", 16*testPage)
	b := org.PutGenerated("s3://b/b", "v", 64*testPage)
	c := newRAM(t, org, 16, func(cfg *cache.Config) { cfg.Shards = 1 })
	mustGet(t, c, a, 0, 16*testPage)
	mustGet(t, c, b, 0, 64*testPage) // LRU: pushes all of a out
	_, res := mustGet(t, c, a, 0, 16*testPage)
	if res.Misses[cache.MissCapacity].Pages != 16 {
		t.Fatalf("re-read after eviction: %+v, want 16 capacity misses", res)
	}
	st := c.Stats()
	if st.Evictions < 16+48 || st.ResidentPages != 16 {
		t.Fatalf("stats: %d evictions, %d resident; want >= 64 and 16", st.Evictions, st.ResidentPages)
	}
	if st.Misses[cache.MissCold].Pages != 80 {
		t.Fatalf("cold misses %d, want 80", st.Misses[cache.MissCold].Pages)
	}
	checkInv(t, c)
}

// A page the cache could not keep because readers pinned every slot is a
// capacity miss when read again, not a cold one: it was seen.
func TestPinnedSlotsMissAsCapacity(t *testing.T) {
	org := cachetest.NewOrigin()
	a := org.PutGenerated("s3://b/a", "v", 2*testPage)
	b := org.PutGenerated("s3://b/b", "v", testPage)
	c := newRAM(t, org, 2, func(cfg *cache.Config) { cfg.Shards = 1 })
	if n := c.Stats().CapacityPages; n != 2 {
		t.Fatalf("setup: %d slots, want 2", n)
	}
	mustGet(t, c, a, 0, 2*testPage)
	// Both slots pinned (View pins one page per call) while b is
	// fetched: b is served and not kept.
	view := func(page int64, fn func()) {
		t.Helper()
		if _, err := c.View(context.Background(), a, page*testPage, testPage, func([]byte) error { fn(); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	view(0, func() {
		view(1, func() {
			if _, res := mustGet(t, c, b, 0, testPage); res.Misses[cache.MissCold].Pages != 1 {
				t.Errorf("b read first: misses by cause %v, want one cold miss", res.Misses)
			}
		})
	})
	if _, res := mustGet(t, c, b, 0, testPage); res.Misses[cache.MissCapacity].Pages != 1 {
		t.Fatalf("b read again: misses by cause %v, want one capacity miss", res.Misses)
	}
	checkInv(t, c)
}

// The pages readers hold stay valid while writers churn the cache.
func TestChurnWithPins(t *testing.T) {
	org := cachetest.NewOrigin()
	var objs []cache.Object
	for i := 0; i < 8; i++ {
		objs = append(objs, org.PutGenerated("s3://b/churn"+string(rune('a'+i)), "v", 20*testPage+int64(i)))
	}
	c := newDisk(t, org, t.TempDir(), 24, func(cfg *cache.Config) {
		cfg.Policy = "locus"
		cfg.MemoryBytes = 6 * testPage // a RAM tier too
	})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := 0; i < 300; i++ {
				obj := objs[rng.IntN(len(objs))]
				off := rng.Int64N(obj.Size)
				n := 1 + rng.Int64N(4*testPage)
				cur := off
				_, err := c.View(context.Background(), obj, off, n, func(p []byte) error {
					want := cachetest.Generated(obj.URI, obj.Version, cur, len(p))
					if string(p) != string(want) {
						return errors.New("wrong bytes under churn")
					}
					cur += int64(len(p))
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				if g == 0 && i%50 == 0 {
					c.Invalidate(objs[rng.IntN(len(objs))].URI)
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkInv(t, c)
}

// A reader cancelled while it leads a flight does not fail the others; the
// follower plans the page again, but the Sizer counts each reader's page
// once.
func TestLeaderCancelled(t *testing.T) {
	org := cachetest.NewOrigin()
	org.Delay = 50 * time.Millisecond
	obj := org.PutGenerated("s3://b/cancel", "v", testPage)
	sz := &countingSizer{}
	c := newRAM(t, org, 8, func(cfg *cache.Config) { cfg.Sizer = sz })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Get(ctx, obj, 0, testPage, make([]byte, testPage))
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	follower := make(chan error, 1)
	go func() {
		dst := make([]byte, testPage)
		_, err := c.Get(context.Background(), obj, 0, testPage, dst)
		if err == nil {
			checkBytes(t, obj, 0, dst)
		}
		follower <- err
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v, want context.Canceled", err)
	}
	if err := <-follower; err != nil {
		t.Fatalf("follower failed with its leader: %v", err)
	}
	if sz.n != 2 {
		t.Errorf("the Sizer saw %d page reads, want 2 (one per reader)", sz.n)
	}
	checkInv(t, c)
}

// The RAM tier keeps copies of pages read twice; reads are served from it;
// dropping a disk page drops its copy.
func TestRAMTier(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/ram", "v", 8*testPage)
	c := newDisk(t, org, t.TempDir(), 32, func(cfg *cache.Config) { cfg.MemoryBytes = 4 * testPage })
	for i := 0; i < 3; i++ {
		got, _ := mustGet(t, c, obj, 0, obj.Size)
		checkBytes(t, obj, 0, got)
	}
	st := c.Stats()
	if st.RAMCapacityPages != 4 || st.RAMPages != 4 || st.Promotions < 4 {
		t.Fatalf("RAM tier: %d/%d pages, %d promotions; want 4/4, >= 4", st.RAMPages, st.RAMCapacityPages, st.Promotions)
	}
	before := st.RAMHits
	got, res := mustGet(t, c, obj, 0, obj.Size)
	checkBytes(t, obj, 0, got)
	if st := c.Stats(); st.RAMHits-before < 1 || res.HitPages != 8 {
		t.Fatalf("fourth read: %d RAM hits, %+v", st.RAMHits-before, res)
	}
	checkInv(t, c)
	if n, _ := c.Invalidate(obj.URI); n != 8 {
		t.Fatalf("Invalidate dropped %d pages, want 8", n)
	}
	if st := c.Stats(); st.RAMPages != 0 {
		t.Fatalf("%d RAM copies survive their pages", st.RAMPages)
	}
	checkInv(t, c)
}

// exactSizer is an exact LRU stack-distance estimator: the reference a
// SHARDS estimator approximates.
type exactSizer struct {
	stack []uint64
	dists map[int]int // stack distance -> count (-1: first access)
	n     int
}

func (s *exactSizer) Access(k uint64) {
	s.n++
	for i := len(s.stack) - 1; i >= 0; i-- {
		if s.stack[i] == k {
			s.dists[len(s.stack)-1-i]++
			s.stack = append(s.stack[:i], s.stack[i+1:]...)
			s.stack = append(s.stack, k)
			return
		}
	}
	s.dists[-1]++
	s.stack = append(s.stack, k)
}

func (s *exactSizer) HitRatio(pages int) float64 {
	hits := 0
	for d, n := range s.dists {
		if d >= 0 && d < pages {
			hits += n
		}
	}
	return float64(hits) / float64(max(s.n, 1))
}

// Stats.Sizing asks the Sizer at 0.25x, 0.5x, 2x and 4x the capacity.
func TestSizer(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/size", "v", 32*testPage)
	sz := &exactSizer{dists: map[int]int{}}
	c := newRAM(t, org, 16, func(cfg *cache.Config) { cfg.Sizer = sz; cfg.Shards = 1 })
	for i := 0; i < 3; i++ {
		mustGet(t, c, obj, 0, 24*testPage) // a loop of 24 pages
	}
	st := c.Stats()
	if len(st.Sizing) != 4 || st.Sizing[0].CapacityPages != 4 || st.Sizing[3].CapacityPages != 64 {
		t.Fatalf("sizing points %+v, want capacities 4, 8, 32, 64", st.Sizing)
	}
	// A 24-page loop: no hits below 24 pages, 2 of 3 passes hit above.
	if st.Sizing[1].HitRatio != 0 || st.Sizing[2].HitRatio < 0.66 || st.Sizing[2].HitRatio > 0.67 {
		t.Fatalf("sizing %+v, want 0 at 8 pages and 2/3 at 32", st.Sizing)
	}
}

// Stats.PolicySizing simulates the cache's own policy at 0.25x, 0.5x, 2x
// and 4x the capacity: for LRU on a 24-page loop, no hit below 24 pages
// and 2 of 3 passes above, as the exact LRU curve says; the default policy
// keeps part of the loop at a quarter and half the cache, where LRU keeps
// nothing.
func TestPolicySizing(t *testing.T) {
	for _, tc := range []struct {
		policy    string
		small     func(float64) bool // the ratio at 4 and 8 pages
		smallWant string
	}{
		{"lru", func(r float64) bool { return r == 0 }, "0"},
		{"locus", func(r float64) bool { return r > 0.05 }, "above 0.05"},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			org := cachetest.NewOrigin()
			obj := org.PutGenerated("s3://b/size", "v", 32*testPage)
			c := newRAM(t, org, 16, func(cfg *cache.Config) {
				cfg.PolicySizing, cfg.Policy, cfg.Shards = true, tc.policy, 1
			})
			if ps := c.Stats().PolicySizing; ps != nil {
				t.Fatalf("before any read: %+v, want none", ps)
			}
			// Page by page, so that the cache sees the loop's order (a read
			// of many pages touches them all before it stores any).
			for i := 0; i < 3; i++ {
				for p := int64(0); p < 24; p++ {
					mustGet(t, c, obj, p*testPage, testPage)
				}
			}
			st := c.Stats()
			ps := st.PolicySizing
			if len(ps) != 4 || ps[0].CapacityPages != 4 || ps[1].CapacityPages != 8 || ps[2].CapacityPages != 32 || ps[3].CapacityPages != 64 ||
				ps[0].Factor != 0.25 || ps[3].Factor != 4 {
				t.Fatalf("sizing points %+v, want x0.25, x0.5, x2, x4: 4, 8, 32, 64 pages", ps)
			}
			for _, p := range ps[:2] {
				if !tc.small(p.HitRatio) {
					t.Errorf("at %d pages: got %.3f, want %s", p.CapacityPages, p.HitRatio, tc.smallWant)
				}
			}
			for _, p := range ps[2:] {
				if p.HitRatio < 0.6 || p.HitRatio > 0.7 {
					t.Errorf("at %d pages: got %.3f, want 2/3 (the loop fits)", p.CapacityPages, p.HitRatio)
				}
			}
			if st.Sizing != nil {
				t.Errorf("Sizing %+v without a Sizer, want nil", st.Sizing)
			}
			if st.PolicySizingReads != 72 { // a 16-page cache replays every read
				t.Errorf("PolicySizingReads %d, want the 72 page reads", st.PolicySizingReads)
			}
		})
	}
}

// The estimates are anchored at the hit ratio the cache measures. Reads of
// the whole 24-page loop touch every page before storing any, so a
// 16-page LRU cache hits a third of its reads where the miniature of its
// size (one access at a time) hits none: every point moves up by that
// third, and 2x and 4x (2/3 raw) are clamped at 1.
func TestPolicySizingAnchored(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/size", "v", 32*testPage)
	c := newRAM(t, org, 16, func(cfg *cache.Config) { cfg.PolicySizing, cfg.Shards = true, 1 })
	for i := 0; i < 3; i++ {
		mustGet(t, c, obj, 0, 24*testPage)
	}
	st := c.Stats()
	var misses int64
	for _, m := range st.Misses {
		misses += m.Pages
	}
	measured := float64(st.HitPages) / float64(st.HitPages+misses)
	if measured < 0.2 {
		t.Fatalf("measured hit ratio %.3f: the reads did not hit as this test expects", measured)
	}
	ps := st.PolicySizing
	if math.Abs(ps[0].HitRatio-measured) > 1e-9 || math.Abs(ps[1].HitRatio-measured) > 1e-9 || ps[2].HitRatio != 1 || ps[3].HitRatio != 1 {
		t.Errorf("sizing %+v: want %.3f at 4 and 8 pages (0 raw, shifted by the measured ratio) and 1 at 32 and 64 (clamped)", ps, measured)
	}
}

// After a warm restart the miniatures start from the pages the cache
// re-indexed, not cold: a first pass over the 16 cached pages hits every
// page in the cache, and in the 2x miniature, but none in the 4-page LRU
// one. Cold miniatures would miss everywhere, and anchoring would lift
// every size to the measured 1.0.
func TestPolicySizingWarmRestart(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/warm", "v", 16*testPage)
	dir := t.TempDir()
	c := newDisk(t, org, dir, 16, func(cfg *cache.Config) { cfg.Shards = 1 })
	for p := int64(0); p < 16; p++ {
		mustGet(t, c, obj, p*testPage, testPage)
	}
	c.Close()
	c = newDisk(t, org, dir, 16, func(cfg *cache.Config) { cfg.Shards, cfg.PolicySizing = 1, true })
	if st := c.Stats(); st.ReindexedPages != 16 || st.PolicySizing != nil {
		t.Fatalf("after restart: %d pages re-indexed, sizing %+v; want 16 and none yet", st.ReindexedPages, st.PolicySizing)
	}
	for p := int64(0); p < 16; p++ {
		mustGet(t, c, obj, p*testPage, testPage)
	}
	st := c.Stats()
	ps := st.PolicySizing
	if st.HitPages != 16 || st.PolicySizingReads != 16 || len(ps) != 4 || ps[0].HitRatio != 0 || ps[2].HitRatio != 1 {
		t.Errorf("%d hits, sizing %+v: want 16 hits, 0 at 0.25x and 1 at 2x", st.HitPages, ps)
	}
}

// A reader whose window waits for a cancelled leader's page and fetches
// the next pages itself plans the window again from that page; the pages
// it fetched are cached by then, but they are still its misses, not hits:
// its result and Stats say it read them from the origin. Was: the window
// planned again found them cached and counted them as hits (in the
// result and in Stats), so origin bytes showed as local hits.
func TestRetriedWindowCountsItsOwnFetchesAsMisses(t *testing.T) {
	org := cachetest.NewOrigin()
	org.Delay = 100 * time.Millisecond
	obj := org.PutGenerated("s3://b/retry", "v", 4*testPage)
	c := newRAM(t, org, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leader := make(chan error, 1)
	go func() {
		_, err := c.Get(ctx, obj, 0, testPage, make([]byte, testPage))
		leader <- err
	}()
	waitCalls := func(n int) {
		for deadline := time.Now().Add(5 * time.Second); org.Calls() < n; {
			if time.Now().After(deadline) {
				t.Fatalf("the origin saw %d calls, want %d", org.Calls(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitCalls(1) // the leader's flight for page 0 is registered
	type result struct {
		res cache.ReadResult
		err error
		dst []byte
	}
	follower := make(chan result, 1)
	go func() {
		dst := make([]byte, obj.Size)
		res, err := c.Get(context.Background(), obj, 0, obj.Size, dst)
		follower <- result{res, err, dst}
	}()
	waitCalls(2) // the follower fetches pages 1-3 and will wait for page 0
	cancel()
	if err := <-leader; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v, want context.Canceled", err)
	}
	r := <-follower
	if r.err != nil {
		t.Fatal(r.err)
	}
	checkBytes(t, obj, 0, r.dst)
	if r.res.HitPages != 0 || r.res.Misses[cache.MissCold].Pages != 4 || r.res.MissBytes != obj.Size {
		t.Errorf("follower's result: %d hit pages, %d cold misses, %d miss bytes; want 0, 4 and %d (it fetched every page itself)",
			r.res.HitPages, r.res.Misses[cache.MissCold].Pages, r.res.MissBytes, obj.Size)
	}
	st := c.Stats()
	// The leader's miss stays counted, as a failed read's own fetches do
	// (it asked the origin): 1 + 4.
	if st.HitPages != 0 || st.Misses[cache.MissCold].Pages != 5 {
		t.Errorf("Stats: %d hits and %d cold misses, want 0 and 5 (the leader's 1, the follower's 4)", st.HitPages, st.Misses[cache.MissCold].Pages)
	}
	checkInv(t, c)
}
