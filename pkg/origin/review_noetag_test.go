// Regression tests for bugs a review found (2026-12-01): each test's
// comment describes the bug as it was before the fix.
package origin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

// An object without an ETag must never get a version: S3Store.Stat says
// ErrNoVersion. But a listing of the same object yields Info{Version: ""}
// (no check in List), and StatCache.List caches it, so the next
// StatCache.Stat answers Version "" with a nil error: the node then caches
// bytes under (URI, "") and reads without If-Match, so a rewrite is never
// detected. versitygw's posix backend has no ETag for a file placed in
// its directory by other means than PutObject.
func TestStatCacheListWithoutETag(t *testing.T) {
	g := origintest.StartVersityGW(t)
	store := g.Store(t)
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(g.Root, g.Bucket, "raw.bin"), []byte("hello world"), 0o644); err != nil {
		t.Fatal(err)
	}
	uri := g.URI("raw.bin")
	_, serr := store.Stat(ctx, uri)
	t.Logf("S3Store.Stat = %v", serr)
	if !errors.Is(serr, origin.ErrNoVersion) {
		t.Skipf("this server sends an ETag for files it did not write (Stat err %v)", serr)
	}
	c, err := origin.NewStatCache(store, origin.StatCacheConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, g.URI(""), func(i origin.Info) error {
		t.Logf("listed %s version %q", i.URI, i.Version)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	info, err := c.Stat(ctx, uri)
	if !errors.Is(err, origin.ErrNoVersion) {
		t.Fatalf("StatCache.Stat after List = (version %q, %v), want ErrNoVersion as S3Store.Stat gives", info.Version, err)
	}
}
