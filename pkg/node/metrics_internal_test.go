package node

import (
	"testing"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/cache/cachetest"
	"github.com/locuscache/locus/pkg/cache/mrc"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/parquetx"
)

// The sizing estimates of a cache of a few pages, where two factors round
// to the same size, still export one series per factor and model: a
// duplicate would fail the whole scrape.
func TestMetricsSizingTinyCache(t *testing.T) {
	for _, pages := range []int64{1, 2, 3} {
		org := cachetest.NewOrigin()
		sz, err := mrc.New(mrc.Config{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := cache.New(cache.Config{Origin: org, MemoryBytes: pages << 20, Sizer: sz, PolicySizing: true})
		if err != nil {
			t.Fatal(err)
		}
		obj := org.PutGenerated("s3://b/k", "v", 4<<20)
		if _, err := c.Get(t.Context(), obj, 0, 4<<20, make([]byte, 4<<20)); err != nil {
			t.Fatal(err)
		}
		m := newMetrics()
		m.register(metricSources{
			cache:    c.Stats,
			stats:    func() origin.StatCacheStats { return origin.StatCacheStats{} },
			footers:  func() parquetx.FooterCacheStats { return parquetx.FooterCacheStats{} },
			inflight: func() int64 { return 0 },
			draining: func() bool { return false },
			ready:    func() bool { return true },
			members:  func() int { return 1 },
		})
		fams, err := m.reg.Gather()
		if err != nil {
			t.Fatalf("%d pages: scrape failed: %v", pages, err)
		}
		n, sampled := 0, -1.0
		for _, f := range fams {
			switch f.GetName() {
			case "locus_cache_estimated_hit_ratio":
				n = len(f.GetMetric())
			case "locus_cache_sizing_sampled_reads_total":
				sampled = f.GetMetric()[0].GetCounter().GetValue()
			}
		}
		if n != 8 || sampled != 4 {
			t.Errorf("%d pages: %d estimate series, %v sampled reads; want 8 (4 factors x 2 models) and the 4 page reads", pages, n, sampled)
		}
		c.Close()
	}
}
