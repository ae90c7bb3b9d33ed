package parquetx_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/parquetx"
)

func TestFooterCacheBounds(t *testing.T) {
	data, _ := writeParquet(t, fileVariants[3])
	f := mustFooter(t, data)
	w := f.Weight()

	byCount, _ := parquetx.NewFooterCache(parquetx.FooterCacheConfig{MaxEntries: 3, MaxBytes: 1 << 30})
	byBytes, _ := parquetx.NewFooterCache(parquetx.FooterCacheConfig{MaxEntries: 100, MaxBytes: 5 * w})
	for i := 0; i < 10; i++ {
		k := parquetx.FooterKey{URI: fmt.Sprintf("s3://b/%d", i), Version: "v"}
		byCount.Add(k, f)
		byBytes.Add(k, f)
	}
	if s := byCount.Stats(); s.Entries != 3 || s.Evictions != 7 || s.Bytes != 3*w {
		t.Errorf("count-bounded stats = %+v, want 3 entries, 7 evictions, %d bytes", s, 3*w)
	}
	if s := byBytes.Stats(); s.Entries != 5 || s.Bytes != 5*w {
		t.Errorf("byte-bounded stats = %+v, want 5 entries of weight %d", s, w)
	}
	// LRU order: the most recent survive.
	if _, ok := byCount.Get(parquetx.FooterKey{URI: "s3://b/9", Version: "v"}); !ok {
		t.Error("most recent entry evicted")
	}
	if _, ok := byCount.Get(parquetx.FooterKey{URI: "s3://b/0", Version: "v"}); ok {
		t.Error("oldest entry kept")
	}
	// Replacing a key does not grow the byte count.
	k := parquetx.FooterKey{URI: "s3://b/9", Version: "v"}
	before := byCount.Stats().Bytes
	byCount.Add(k, f)
	if after := byCount.Stats().Bytes; after != before {
		t.Errorf("re-adding a key changed bytes %d → %d", before, after)
	}
	byCount.Remove(k)
	if s := byCount.Stats(); s.Entries != 2 || s.Bytes != 2*w {
		t.Errorf("after Remove: %+v", s)
	}
	// Versions are distinct keys.
	if _, ok := byCount.Get(parquetx.FooterKey{URI: "s3://b/8", Version: "other"}); ok {
		t.Error("a different version hit")
	}
	// Too heavy to cache at all.
	tiny, _ := parquetx.NewFooterCache(parquetx.FooterCacheConfig{MaxBytes: w - 1})
	tiny.Add(k, f)
	if tiny.Stats().Entries != 0 {
		t.Error("cached a footer heavier than MaxBytes")
	}
	if _, err := parquetx.NewFooterCache(parquetx.FooterCacheConfig{MaxEntries: -1}); err == nil {
		t.Error("negative MaxEntries accepted")
	}
}

func TestFooterCacheLoad(t *testing.T) {
	mem := origintest.NewMemStore()
	data, _ := writeParquet(t, fileVariants[0])
	v1 := mem.Put("s3://b/t.parquet", data)
	c, _ := parquetx.NewFooterCache(parquetx.FooterCacheConfig{})
	ctx := context.Background()

	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := c.Load(ctx, mem, v1)
			if err != nil || f.NumRows != 3500 {
				t.Errorf("Load = (%v, %v)", f, err)
			}
		}()
	}
	wg.Wait()
	_, reads, _, _ := mem.Counts()
	if reads > 2 {
		t.Errorf("16 concurrent loads made %d reads, want 1 (one flight, one tail read)", reads)
	}
	// A new version is a new key and a fresh read.
	v2 := mem.Put("s3://b/t.parquet", data[:len(data)-1])
	if _, err := c.Load(ctx, mem, v2); !errors.Is(err, parquetx.ErrNotParquet) {
		t.Errorf("Load of a truncated new version = %v, want ErrNotParquet", err)
	}
	// Errors are not cached.
	calls := atomic.Int32{}
	k := parquetx.FooterKey{URI: "x", Version: "1"}
	for i := 0; i < 2; i++ {
		_, err := c.GetOrLoad(ctx, k, func(context.Context) (*parquetx.Footer, error) {
			calls.Add(1)
			return nil, errors.New("boom")
		})
		if err == nil {
			t.Fatal("GetOrLoad hid the error")
		}
	}
	if calls.Load() != 2 {
		t.Errorf("loader called %d times, want 2 (errors are not cached)", calls.Load())
	}
	// Caller cancellation returns promptly even while a load is stuck.
	block := make(chan struct{})
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err := c.GetOrLoad(cctx, parquetx.FooterKey{URI: "slow", Version: "1"}, func(context.Context) (*parquetx.Footer, error) {
		<-block
		return nil, errors.New("late")
	})
	close(block)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("GetOrLoad with an expired context = %v", err)
	}
}

// TestFooterWeightMatchesHeap checks Weight against the heap that parsed
// footers really keep alive, within a factor of 2.
func TestFooterWeightMatchesHeap(t *testing.T) {
	files := [][]byte{widePadded(t, 300)}
	for _, o := range fileVariants {
		data, _ := writeParquet(t, o)
		files = append(files, data)
	}
	for i, data := range files {
		const n = 50
		keep := make([]*parquetx.Footer, 0, n)
		runtime.GC()
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		for j := 0; j < n; j++ {
			keep = append(keep, mustFooter(t, data))
		}
		runtime.GC()
		runtime.ReadMemStats(&b)
		measured := (int64(b.HeapAlloc) - int64(a.HeapAlloc)) / n
		w := keep[0].Weight()
		runtime.KeepAlive(keep)
		if w < measured/2 || w > measured*2 {
			t.Errorf("file %d: Weight %d, measured %d bytes per footer", i, w, measured)
		}
	}
}
