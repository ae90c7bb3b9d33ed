// Regression tests for bugs a review found (2026-12-01): each test's
// comment describes the bug as it was before the fix.
package origin_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/locuscache/locus/pkg/origin"
)

// TestS3HeadWithoutContentLength: a HEAD answer without Content-Length
// (HTTP lets a server leave it out of a HEAD; some proxies do) gave
// Stat = (Size 0, the object's ETag, nil), so a reader of that Info saw
// an empty object: origin.ReaderAt returned io.EOF at offset 0, and a node
// cached and served 0 bytes of a 10,000-byte object under its real
// version. Now Stat fails rather than guess a size.
func TestS3HeadWithoutContentLength(t *testing.T) {
	f := &fakeS3{}
	f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.Method != http.MethodHead {
			return false
		}
		w.Header().Set("ETag", f.etag)
		return true // no Content-Length
	}
	s, _ := newFake(t, f, nil)
	ctx := context.Background()
	info, err := s.Stat(ctx, "s3://bkt/key")
	if err == nil && info.Size != int64(len(f.data)) {
		n, rerr := origin.NewReaderAt(ctx, s, info).ReadAt(make([]byte, 100), 0)
		t.Fatalf("Stat = (size %d, version %s, nil) for an object of %d bytes (its ReaderAt reads (%d, %v)); want the size or an error",
			info.Size, info.Version, len(f.data), n, rerr)
	}
}
