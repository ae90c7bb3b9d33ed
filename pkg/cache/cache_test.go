package cache_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/cache/cachetest"
)

const testPage = 4096

func newRAM(t testing.TB, org cache.Origin, pages int, mod ...func(*cache.Config)) *cache.Cache {
	t.Helper()
	cfg := cache.Config{Origin: org, MemoryBytes: int64(pages) * testPage, PageSize: testPage, Policy: "lru"}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := cache.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func newDisk(t testing.TB, org cache.Origin, dir string, pages int, mod ...func(*cache.Config)) *cache.Cache {
	t.Helper()
	cfg := cache.Config{Origin: org, Dir: dir, PageSize: testPage, Policy: "lru",
		CapacityBytes: int64(pages)*(testPage+512) + 2*4096 + 4096}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := cache.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func mustGet(t testing.TB, c *cache.Cache, obj cache.Object, off, n int64) ([]byte, cache.ReadResult) {
	t.Helper()
	dst := make([]byte, n)
	res, err := c.Get(context.Background(), obj, off, n, dst)
	if err != nil {
		t.Fatalf("Get(%q, %d, %d): %v", obj.URI, off, n, err)
	}
	return dst[:res.Bytes], res
}

func checkBytes(t testing.TB, obj cache.Object, off int64, got []byte) {
	t.Helper()
	want := cachetest.Generated(obj.URI, obj.Version, off, len(got))
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%q@%q bytes [%d, %d): first difference at offset %d", obj.URI, obj.Version, off, off+int64(len(got)), off+int64(i))
	}
}

func checkInv(t testing.TB, c *cache.Cache) {
	t.Helper()
	if err := c.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestGetMissThenHit(t *testing.T) {
	for _, mode := range []string{"ram", "disk"} {
		t.Run(mode, func(t *testing.T) {
			org := cachetest.NewOrigin()
			obj := org.PutGenerated("s3://b/k", "v1", 10*testPage+123)
			var c *cache.Cache
			if mode == "ram" {
				c = newRAM(t, org, 64)
			} else {
				c = newDisk(t, org, t.TempDir(), 64)
			}
			got, res := mustGet(t, c, obj, 100, 5*testPage)
			checkBytes(t, obj, 100, got)
			if res.HitBytes != 0 || res.MissBytes != 5*testPage || res.Misses[cache.MissCold].Pages != 6 {
				t.Fatalf("first read: got %+v, want 6 cold pages, all bytes missed", res)
			}
			if n := org.Calls(); n != 1 {
				t.Fatalf("first read made %d origin calls, want 1 (one run)", n)
			}
			got, res = mustGet(t, c, obj, 100, 5*testPage)
			checkBytes(t, obj, 100, got)
			if res.HitBytes != 5*testPage || res.MissBytes != 0 || res.HitPages != 6 {
				t.Fatalf("second read: got %+v, want all hits", res)
			}
			if n := org.Calls(); n != 1 {
				t.Fatalf("second read called the origin: %d calls", n)
			}
			// The short last page.
			got, res = mustGet(t, c, obj, 10*testPage, 1000)
			if len(got) != 123 || res.Bytes != 123 {
				t.Fatalf("read past the end returned %d bytes, want 123", len(got))
			}
			checkBytes(t, obj, 10*testPage, got)
			st := c.Stats()
			if st.Mode != mode || st.ResidentPages != 7 || st.HitPages != 6 || st.Misses[cache.MissCold].Pages != 7 {
				t.Fatalf("stats: %+v", st)
			}
			checkInv(t, c)
		})
	}
}

func TestView(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/v", "1", 7*testPage)
	c := newDisk(t, org, t.TempDir(), 16)
	for round := 0; round < 2; round++ {
		var buf bytes.Buffer
		res, err := c.View(context.Background(), obj, 10, 6*testPage, func(p []byte) error {
			buf.Write(p)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Bytes != 6*testPage || buf.Len() != 6*testPage {
			t.Fatalf("round %d: View delivered %d bytes, result %d, want %d", round, buf.Len(), res.Bytes, 6*testPage)
		}
		checkBytes(t, obj, 10, buf.Bytes())
	}
	stop := errors.New("stop")
	calls := 0
	_, err := c.View(context.Background(), obj, 0, 7*testPage, func(p []byte) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("View with a failing callback: err %v after %d calls, want stop after 1", err, calls)
	}
	checkInv(t, c)
}

func TestBadInput(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/x", "1", 3*testPage)
	c := newRAM(t, org, 16)
	ctx := context.Background()
	buf := make([]byte, 4*testPage)
	tests := []struct {
		name      string
		obj       cache.Object
		off, n    int64
		dst       []byte
		want      error
		wantBytes int64
	}{
		{"negative offset", obj, -1, 10, buf, cache.ErrInvalidRange, 0},
		{"negative length", obj, 0, -5, buf, cache.ErrInvalidRange, 0},
		{"zero length", obj, 0, 0, buf, cache.ErrInvalidRange, 0},
		{"overflow", obj, 10, 1<<63 - 5, buf, cache.ErrInvalidRange, 0},
		{"max length from 0", obj, 0, 1<<63 - 1, buf, nil, 3 * testPage},
		{"past the end", obj, 3*testPage + 1, 10, buf, cache.ErrOutOfRange, 0},
		{"at the end", obj, 3 * testPage, 10, buf, nil, 0},
		{"runs past the end", obj, 3*testPage - 5, 100, buf, nil, 5},
		{"short buffer", obj, 0, 2 * testPage, buf[:10], cache.ErrShortBuffer, 0},
		{"empty URI", cache.Object{Size: 5}, 0, 1, buf, cache.ErrInvalidObject, 0},
		{"negative size", cache.Object{URI: "x", Size: -1}, 0, 1, buf, cache.ErrInvalidObject, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.Get(ctx, tt.obj, tt.off, tt.n, tt.dst)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got error %v, want %v", err, tt.want)
			}
			if res.Bytes != tt.wantBytes {
				t.Fatalf("got %d bytes, want %d", res.Bytes, tt.wantBytes)
			}
			if err == nil && res.Bytes > 0 {
				checkBytes(t, tt.obj, tt.off, tt.dst[:res.Bytes])
			}
		})
	}
	checkInv(t, c)
}

func TestOriginErrors(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/e", "v1", 4*testPage)
	c := newRAM(t, org, 16)
	ctx := context.Background()
	buf := make([]byte, 4*testPage)

	// A changed version: the error surfaces, nothing is cached.
	org.PutGenerated("s3://b/e", "v2", 4*testPage)
	_, err := c.Get(ctx, obj, 0, 4*testPage, buf)
	if !errors.Is(err, cache.ErrVersionChanged) {
		t.Fatalf("got %v, want ErrVersionChanged", err)
	}
	if st := c.Stats(); st.ResidentPages != 0 || st.OriginErrors != 1 {
		t.Fatalf("after a refused read: %d pages cached, %d origin errors; want 0, 1", st.ResidentPages, st.OriginErrors)
	}

	// A short origin.
	short := cache.OriginFunc(func(ctx context.Context, o cache.Object, p []byte, off int64) (int, error) {
		return len(p) / 2, io.EOF
	})
	c2 := newRAM(t, short, 16)
	_, err = c2.Get(ctx, obj, 0, 4*testPage, buf)
	if !errors.Is(err, cache.ErrShortRead) {
		t.Fatalf("got %v, want ErrShortRead", err)
	}
	if st := c2.Stats(); st.ResidentPages != 0 {
		t.Fatalf("a short read cached %d pages", st.ResidentPages)
	}

	// A failing origin: the error, and a later success caches.
	var fail sync.Mutex
	failing := true
	org2 := cachetest.NewOrigin()
	obj2 := org2.PutGenerated("s3://b/f", "v", 2*testPage)
	boom := errors.New("boom")
	org2.Fail = func(cache.Object, int64, int) error {
		fail.Lock()
		defer fail.Unlock()
		if failing {
			return boom
		}
		return nil
	}
	c3 := newRAM(t, org2, 16)
	if _, err := c3.Get(ctx, obj2, 0, 2*testPage, buf); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	fail.Lock()
	failing = false
	fail.Unlock()
	got, _ := mustGet(t, c3, obj2, 0, 2*testPage)
	checkBytes(t, obj2, 0, got)
	if _, res := mustGet(t, c3, obj2, 0, 2*testPage); res.HitPages != 2 {
		t.Fatalf("after recovery: %+v, want 2 hit pages", res)
	}
	checkInv(t, c3)
}

func TestClosed(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/c", "v", testPage)
	c := newRAM(t, org, 4)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := c.Get(context.Background(), obj, 0, 1, make([]byte, 1)); !errors.Is(err, cache.ErrClosed) {
		t.Fatalf("Get after Close: %v, want ErrClosed", err)
	}
	if _, err := c.Invalidate(obj.URI); !errors.Is(err, cache.ErrClosed) {
		t.Fatalf("Invalidate after Close: %v, want ErrClosed", err)
	}
}

var _ = fmt.Sprintf

// A key too long for a page header is served from the origin and never
// cached on disk, and counted; a RAM-only cache has no headers and caches it.
func TestLongKey(t *testing.T) {
	org := cachetest.NewOrigin()
	long := "s3://bucket/" + string(bytes.Repeat([]byte("k"), 600))
	obj := org.PutGenerated(long, "v", 3*testPage)
	c := newDisk(t, org, t.TempDir(), 16)
	for i := 0; i < 2; i++ {
		got, res := mustGet(t, c, obj, 0, obj.Size)
		checkBytes(t, obj, 0, got)
		if res.HitPages != 0 {
			t.Fatalf("disk: a %d-byte key was cached", len(long))
		}
	}
	if st := c.Stats(); st.Uncacheable != 6 || st.ResidentPages != 0 {
		t.Fatalf("disk: %d uncacheable, %d resident; want 6, 0", st.Uncacheable, st.ResidentPages)
	}
	checkInv(t, c)
	r := newRAM(t, org, 16)
	mustGet(t, r, obj, 0, obj.Size)
	got, res := mustGet(t, r, obj, 0, obj.Size)
	checkBytes(t, obj, 0, got)
	if res.HitPages != 3 {
		t.Fatalf("ram: second read %+v, want 3 hits", res)
	}
}
