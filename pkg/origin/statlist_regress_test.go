package origin_test

import (
	"context"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

// TestStatCacheListDoesNotRollBackNewerStat: a StatCache.List whose
// listing read an object before it was overwritten does not replace an
// entry a later Stat refreshed to the new version. Was: List's putIf
// checked only for Invalidate, so the listing's older answer replaced the
// newer one for a whole new TTL, and Stat went back to the old version
// (and a node then served the old version's cached pages). Fixed: a
// listing stores only over entries older than itself.
func TestStatCacheListDoesNotRollBackNewerStat(t *testing.T) {
	g := origintest.StartVersityGW(t)
	ctx := context.Background()
	v1, v2 := randomBytes(101, 70_000), randomBytes(102, 70_000)
	g.Put(t, "rb/a.bin", randomBytes(100, 10))
	etag1 := origin.NormalizeETag(g.Put(t, "rb/b.bin", v1))
	sc, err := origin.NewStatCache(g.Store(t), origin.StatCacheConfig{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	uriB := g.URI("rb/b.bin")
	var etag2 string
	err = sc.List(ctx, g.URI("rb/"), func(info origin.Info) error {
		if info.URI != g.URI("rb/a.bin") {
			return nil
		}
		// The listing page (with b at v1) is already read. b is
		// overwritten, and a Stat sees the new version.
		etag2 = origin.NormalizeETag(g.Put(t, "rb/b.bin", v2))
		st, err := sc.Stat(ctx, uriB)
		if err != nil {
			return err
		}
		if st.Version != etag2 {
			t.Fatalf("Stat after overwrite = %s, want %s", st.Version, etag2)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if etag1 == etag2 {
		t.Fatal("test setup: both versions have one ETag")
	}
	st, err := sc.Stat(ctx, uriB)
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != etag2 {
		t.Fatalf("Stat after the listing = %s (the old version, from the listing), want %s, which Stat had already answered", st.Version, etag2)
	}
}
