package origin_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

type fakeClock struct {
	mu  sync.Mutex // guards now
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestStatCacheTTLAndRevalidation(t *testing.T) {
	mem := origintest.NewMemStore()
	clock := &fakeClock{now: time.Unix(1000, 0)}
	c, err := origin.NewStatCache(mem, origin.StatCacheConfig{TTL: 10 * time.Second, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v1 := mem.Put("mem://a", []byte("one"))

	stat := func() origin.Info {
		t.Helper()
		info, err := c.Stat(ctx, "mem://a")
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	steps := []struct {
		name        string
		do          func()
		wantVersion string
		wantCalls   int64 // cumulative store Stat calls
	}{
		{"first stat misses", func() {}, v1.Version, 1},
		{"within TTL hits", func() { clock.Advance(9 * time.Second) }, v1.Version, 1},
		{"rewrite is invisible within TTL", func() { mem.Put("mem://a", []byte("two")) }, v1.Version, 1},
		{"expiry revalidates", func() { clock.Advance(2 * time.Second) }, "m2", 2},
		{"fresh again", func() { clock.Advance(time.Second) }, "m2", 2},
		{"expired, unchanged", func() { clock.Advance(11 * time.Second) }, "m2", 3},
	}
	for _, st := range steps {
		st.do()
		got := stat()
		calls, _, _, _ := mem.Counts()
		if got.Version != st.wantVersion || calls != st.wantCalls {
			t.Fatalf("%s: version %s after %d store calls, want %s after %d", st.name, got.Version, calls, st.wantVersion, st.wantCalls)
		}
	}
	s := c.Stats()
	if s.Hits != 3 || s.Misses != 1 || s.Revalidations != 2 || s.Changed != 1 || s.Entries != 1 {
		t.Errorf("stats = %+v", s)
	}
}

func TestStatCacheReadVersionChangedInvalidates(t *testing.T) {
	mem := origintest.NewMemStore()
	clock := &fakeClock{now: time.Unix(0, 0)}
	c, _ := origin.NewStatCache(mem, origin.StatCacheConfig{TTL: time.Hour, Now: clock.Now})
	ctx := context.Background()
	mem.Put("mem://a", []byte("one"))
	old, _ := c.Stat(ctx, "mem://a")
	mem.Put("mem://a", []byte("two!"))
	if _, err := c.ReadAt(ctx, "mem://a", old.Version, make([]byte, 3), 0); !errors.Is(err, origin.ErrVersionChanged) {
		t.Fatalf("ReadAt = %v, want ErrVersionChanged", err)
	}
	cur, _ := c.Stat(ctx, "mem://a") // no clock advance: must not be the cached old entry
	if cur.Version == old.Version || cur.Size != 4 {
		t.Fatalf("after ErrVersionChanged Stat still says %+v", cur)
	}
}

func TestStatCacheErrorsNotCachedAndListFills(t *testing.T) {
	mem := origintest.NewMemStore()
	c, _ := origin.NewStatCache(mem, origin.StatCacheConfig{})
	ctx := context.Background()
	if _, err := c.Stat(ctx, "mem://x"); !errors.Is(err, origin.ErrNotFound) {
		t.Fatal(err)
	}
	mem.Put("mem://x", []byte("x"))
	if _, err := c.Stat(ctx, "mem://x"); err != nil {
		t.Fatalf("not-found was cached: %v", err)
	}
	mem.Put("mem://dir/1", []byte("1"))
	mem.Put("mem://dir/2", []byte("2"))
	if err := c.List(ctx, "mem://dir/", func(origin.Info) error { return nil }); err != nil {
		t.Fatal(err)
	}
	before, _, _, _ := mem.Counts()
	for _, u := range []string{"mem://dir/1", "mem://dir/2"} {
		if _, err := c.Stat(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if after, _, _, _ := mem.Counts(); after != before {
		t.Errorf("Stat after List called the store %d times, want 0", after-before)
	}
}

// TestStatCacheListAfterInvalidate: a listing that began before an object
// changed and was invalidated does not cache the old answer it still
// delivers (the store read it before the change); the next Stat asks the
// store and sees the new version. Before, List cached every entry under
// the generation current when it arrived, so the old answer stayed for a
// TTL.
func TestStatCacheListAfterInvalidate(t *testing.T) {
	mem := origintest.NewMemStore()
	c, _ := origin.NewStatCache(mem, origin.StatCacheConfig{TTL: time.Hour})
	ctx := context.Background()
	mem.Put("mem://dir/1", []byte("1"))
	mem.Put("mem://dir/2", []byte("2"))
	var listed origin.Info
	err := c.List(ctx, "mem://dir/", func(info origin.Info) error {
		if info.URI == "mem://dir/1" {
			// The store has read both entries (MemStore lists a
			// snapshot); dir/2 changes now, and the caller invalidates it.
			mem.Put("mem://dir/2", []byte("2, rewritten"))
			c.Invalidate("mem://dir/2")
		} else {
			listed = info
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Stat(ctx, "mem://dir/2")
	if err != nil {
		t.Fatal(err)
	}
	if info.Version == listed.Version || info.Size != int64(len("2, rewritten")) {
		t.Fatalf("Stat after the listing: version %q size %d, want the rewritten object (the listing delivered version %q)", info.Version, info.Size, listed.Version)
	}
}

func TestStatCacheBounded(t *testing.T) {
	mem := origintest.NewMemStore()
	c, _ := origin.NewStatCache(mem, origin.StatCacheConfig{MaxEntries: 10})
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		u := fmt.Sprintf("mem://%d", i)
		mem.Put(u, []byte("x"))
		if _, err := c.Stat(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Stats().Entries; n != 10 {
		t.Fatalf("entries = %d, want the bound 10", n)
	}
}

func TestStatCacheCoalescesConcurrentMisses(t *testing.T) {
	mem := origintest.NewMemStore()
	mem.Put("mem://a", []byte("x"))
	release := make(chan struct{})
	mem.Hook = func(op, uri string) error {
		if op == "stat" {
			<-release
		}
		return nil
	}
	c, _ := origin.NewStatCache(mem, origin.StatCacheConfig{})
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Stat(context.Background(), "mem://a"); err != nil {
				t.Error(err)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // let them pile up on the flight
	close(release)
	wg.Wait()
	if calls, _, _, _ := mem.Counts(); calls > 2 {
		t.Errorf("20 concurrent misses made %d store calls, want 1 (2 if one arrived after the flight)", calls)
	}
}

func TestStatCacheCallerCancel(t *testing.T) {
	mem := origintest.NewMemStore()
	mem.Put("mem://a", []byte("x"))
	release := make(chan struct{})
	mem.Hook = func(op, uri string) error { <-release; return nil }
	c, _ := origin.NewStatCache(mem, origin.StatCacheConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Stat(ctx, "mem://a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stat = %v, want the caller's deadline", err)
	}
	close(release)
}

func TestStatCacheConfigValidate(t *testing.T) {
	mem := origintest.NewMemStore()
	if _, err := origin.NewStatCache(mem, origin.StatCacheConfig{TTL: -1}); err == nil {
		t.Error("negative TTL accepted")
	}
	if _, err := origin.NewStatCache(mem, origin.StatCacheConfig{MaxEntries: -1}); err == nil {
		t.Error("negative MaxEntries accepted")
	}
	if _, err := origin.NewStatCache(nil, origin.StatCacheConfig{}); err == nil {
		t.Error("nil store accepted")
	}
}

// slowStat answers Stat with what the store says when called, but only
// when released: a HEAD that read the old version and arrives late.
type slowStat struct {
	origin.Store
	release chan struct{}
	started chan struct{}
}

func (s *slowStat) Stat(ctx context.Context, uri string) (origin.Info, error) {
	info, err := s.Store.Stat(ctx, uri)
	if s.started != nil {
		s.started <- struct{}{}
		<-s.release
	}
	return info, err
}

// A Stat after Invalidate neither joins a store call that began before the
// invalidation nor finds that call's old answer cached afterwards.
func TestStatCacheInvalidateDuringFlight(t *testing.T) {
	mem := origintest.NewMemStore()
	mem.Put("mem://a", []byte("old"))
	slow := &slowStat{Store: mem, release: make(chan struct{}), started: make(chan struct{})}
	c, _ := origin.NewStatCache(slow, origin.StatCacheConfig{TTL: time.Hour})
	ctx := context.Background()
	old := make(chan origin.Info, 1)
	go func() {
		info, err := c.Stat(ctx, "mem://a")
		if err != nil {
			t.Error(err)
		}
		old <- info
	}()
	<-slow.started // the flight has read the old version
	mem.Put("mem://a", []byte("new!"))
	c.Invalidate("mem://a") // as a read refused by the origin does
	slow.started = nil      // later store calls answer at once
	tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	info, err := c.Stat(tctx, "mem://a") // joining the old flight would wait for it
	if err != nil || info.Size != 4 {
		t.Fatalf("Stat after Invalidate: %+v, %v; want the new object (4 bytes), not the old flight's answer", info, err)
	}
	close(slow.release)
	if o := <-old; o.Size != 3 {
		t.Fatalf("the first Stat: %+v, want the old object it read", o)
	}
	if info, _ := c.Stat(ctx, "mem://a"); info.Size != 4 {
		t.Fatalf("cached after the old flight ended: %+v, want the new object", info)
	}
}
