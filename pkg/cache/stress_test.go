package cache_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/cache/cachetest"
)

// faultyOrigin wraps cachetest.Origin with random faults: errors, short
// reads (nil error), io.EOF with short counts, delays, and writes of junk
// into the buffer before failing.
type faultyOrigin struct {
	in    *cachetest.Origin
	seed  atomic.Uint64
	rate  int // 1 in rate calls faults
	calls atomic.Int64
}

func (f *faultyOrigin) ReadAt(ctx context.Context, obj cache.Object, p []byte, off int64) (int, error) {
	n := f.calls.Add(1)
	rng := rand.New(rand.NewPCG(f.seed.Load(), uint64(n)))
	if rng.IntN(4) == 0 {
		select {
		case <-time.After(time.Duration(rng.IntN(300)) * time.Microsecond):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if f.rate > 0 && rng.IntN(f.rate) == 0 {
		switch rng.IntN(4) {
		case 0:
			for i := range p {
				p[i] = 0xEE
			}
			return 0, errors.New("injected origin error")
		case 1: // short read, nil error, junk after
			got, err := f.in.ReadAt(ctx, obj, p, off)
			if err != nil || got == 0 {
				return got, err
			}
			k := rng.IntN(got)
			for i := k; i < len(p); i++ {
				p[i] = 0xEE
			}
			return k, nil
		case 2: // short read with EOF
			got, err := f.in.ReadAt(ctx, obj, p, off)
			if err != nil || got == 0 {
				return got, err
			}
			return got / 2, io.EOF
		case 3: // full read but error after writing correct bytes
			f.in.ReadAt(ctx, obj, p, off)
			return len(p), errors.New("injected late error")
		}
	}
	return f.in.ReadAt(ctx, obj, p, off)
}

var stressIters = flag.Int("stress-iters", 400, "TestStressAgainstReference: operations per goroutine")

// TestStressAgainstReference runs six goroutines of random reads (Get, View
// re-checking its bytes while it holds them, Prefetch), invalidations,
// version changes, stale readers and cancellations against an origin that
// fails, reads short, or writes junk one call in ten, in RAM and disk modes
// (with a RAM tier, slow writes, failing writes), with LRU and the default
// policy. Every byte served is checked against the generated reference;
// the cache's invariants, its capacity and, after a restart with every
// read verified, every page's bytes are checked at the end.
func TestStressAgainstReference(t *testing.T) {
	iters, seeds := *stressIters, 3
	for _, mode := range []string{"ram", "disk", "disk+ram", "disk-slow", "disk-wfail"} {
		for _, pol := range []string{"lru", "locus"} {
			for seed := 1; seed <= seeds; seed++ {
				t.Run(fmt.Sprintf("%s/%s/%d", mode, pol, seed), func(t *testing.T) {
					stress(t, mode, pol, uint64(seed), iters)
				})
			}
		}
	}
}

func stress(t *testing.T, mode, pol string, seed uint64, iters int) {
	org := cachetest.NewOrigin()
	fo := &faultyOrigin{in: org, rate: 10}
	fo.seed.Store(seed)
	const nobj = 6
	var verMu sync.Mutex
	vers := make([]int, nobj)
	sizes := []int64{1, testPage - 1, testPage, 3*testPage + 7, 9 * testPage, 20*testPage + 100}
	objOf := func(i, v int) cache.Object {
		return cache.Object{URI: fmt.Sprintf("s3://b/o%d", i), Version: fmt.Sprintf("v%d", v), Size: sizes[i] + int64(v%3)}
	}
	for i := range vers {
		o := objOf(i, 0)
		org.PutGenerated(o.URI, o.Version, o.Size)
	}
	mod := func(cfg *cache.Config) {
		cfg.Policy = pol
		cfg.Seed = seed
		cfg.MaxFetchBytes = 3 * testPage
		cfg.FetchParallelism = 3
		if mode == "disk+ram" {
			cfg.MemoryBytes = 6 * testPage
		}
	}
	var c *cache.Cache
	dir := t.TempDir()
	var wcount atomic.Int64
	faults := func(cfg *cache.Config) {
		switch mode {
		case "disk-slow":
			*cfg = cache.WithFaults(*cfg, cache.Faults{AfterData: func() { time.Sleep(200 * time.Microsecond) }})
		case "disk-wfail":
			*cfg = cache.WithFaults(*cfg, cache.Faults{Pwrite: func(fd int, p []byte, off int64) (int, error) {
				n := wcount.Add(1)
				if n > 200 && n%97 == int64(seed) && len(p) > 1 {
					syscall.Pwrite(fd, p[:len(p)/2], off) // a torn write
					return 0, syscall.EIO
				}
				return syscall.Pwrite(fd, p, off)
			}})
		}
	}
	const capPages = 40
	if mode == "ram" {
		c = newRAM(t, fo, capPages, mod, func(cfg *cache.Config) { cfg.Shards = 2 })
	} else {
		c = newDisk(t, fo, dir, capPages, mod, func(cfg *cache.Config) { cfg.Shards = 2 }, faults)
	}
	var wg sync.WaitGroup
	var bad atomic.Int64
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for it := 0; it < iters && bad.Load() == 0; it++ {
				i := rng.IntN(nobj)
				verMu.Lock()
				v := vers[i]
				if rng.IntN(8) == 0 && v > 0 {
					v-- // a stale reader
				}
				verMu.Unlock()
				obj := objOf(i, v)
				switch op := rng.IntN(20); {
				case op == 0 && g == 0: // new version
					verMu.Lock()
					vers[i]++
					o := objOf(i, vers[i])
					org.PutGenerated(o.URI, o.Version, o.Size)
					verMu.Unlock()
					continue
				case op == 1:
					c.Invalidate(obj.URI)
					continue
				}
				off := rng.Int64N(obj.Size)
				n := 1 + rng.Int64N(6*testPage)
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(6) == 0 {
					d := time.Duration(rng.IntN(200)) * time.Microsecond
					go func() {
						time.Sleep(d)
						cancel()
					}()
				}
				var err error
				var res cache.ReadResult
				switch rng.IntN(3) {
				case 0:
					dst := make([]byte, n)
					res, err = c.Get(ctx, obj, off, n, dst)
					if err == nil {
						want := cachetest.Generated(obj.URI, obj.Version, off, int(res.Bytes))
						if string(dst[:res.Bytes]) != string(want) {
							t.Errorf("Get %s@%s [%d,+%d): wrong bytes (%+v)", obj.URI, obj.Version, off, n, res)
							bad.Add(1)
						}
						if res.Bytes != min(n, obj.Size-off) {
							t.Errorf("Get bytes %d want %d", res.Bytes, min(n, obj.Size-off))
							bad.Add(1)
						}
					}
				case 1:
					cur := off
					res, err = c.View(ctx, obj, off, n, func(p []byte) error {
						want := cachetest.Generated(obj.URI, obj.Version, cur, len(p))
						if string(p) != string(want) {
							t.Errorf("View %s@%s at %d: wrong bytes", obj.URI, obj.Version, cur)
							bad.Add(1)
						}
						cur += int64(len(p))
						if cur%3 == 0 {
							time.Sleep(300 * time.Microsecond)
							// re-check: the memory must not change under us
							want2 := cachetest.Generated(obj.URI, obj.Version, cur-int64(len(p)), len(p))
							if string(p) != string(want2) {
								t.Errorf("View: bytes changed while held")
								bad.Add(1)
							}
						}
						return nil
					})
				case 2:
					res, err = c.Prefetch(ctx, obj, off, n)
				}
				cancel()
				if err == nil && res.HitBytes+res.MissBytes != res.Bytes {
					t.Errorf("result does not add up: %+v", res)
					bad.Add(1)
				}
			}
		}(g)
	}
	wg.Wait()
	if err := c.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.ResidentPages > st.CapacityPages {
		t.Fatalf("resident %d > capacity %d", st.ResidentPages, st.CapacityPages)
	}
	// Counts taken back (reads that stopped, windows planned again) never
	// take back more than was counted.
	if st.HitPages < 0 || st.HitBytes < 0 || st.PrefetchCachedPages < 0 || st.PrefetchFetchedPages < 0 {
		t.Errorf("negative counters: %+v", st)
	}
	for cause, m := range st.Misses {
		if m.Pages < 0 || m.Bytes < 0 {
			t.Errorf("negative %v misses: %+v", cache.MissCause(cause), m)
		}
	}
	t.Logf("stats: resident %d/%d, hits %d, misses %v, origin errs %d, corrupt %d, degraded %v", st.ResidentPages, st.CapacityPages, st.HitPages, st.Misses, st.OriginErrors, st.CorruptPages, st.Degraded)
	if mode != "ram" {
		// Restart and verify every resident page's bytes.
		c.Close()
		c2 := newDisk(t, fo, dir, capPages, mod, func(cfg *cache.Config) { cfg.Shards = 2; cfg.Verify = cache.VerifyAlways })
		fo.rate = 0
		for i := 0; i < nobj; i++ {
			verMu.Lock()
			obj := objOf(i, vers[i])
			verMu.Unlock()
			got, _ := mustGet(t, c2, obj, 0, obj.Size)
			checkBytes(t, obj, 0, got)
		}
		if st := c2.Stats(); st.CorruptPages != 0 {
			t.Fatalf("corrupt pages after restart: %d", st.CorruptPages)
		}
		checkInv(t, c2)
	}
}
