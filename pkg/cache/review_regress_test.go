package cache_test

// Regression tests from a review of the page cache on 2026-12-01 (races
// between Close, the tiers and restarts): each failed before its fix.

import (
	"testing"

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
