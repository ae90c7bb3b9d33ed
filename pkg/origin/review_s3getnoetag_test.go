// Regression tests for bugs a review found (2026-12-01): each test's
// comment describes the bug as it was before the fix.
package origin_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/locuscache/locus/pkg/origin"
)

// TestS3PinnedReadWithoutETag: ReadAt checks the response's ETag so that
// a store ignoring If-Match cannot hand it another version's bytes, but a
// response without an ETag passed the check. A load balancer's or proxy's
// own 200 page (no ETag, If-Match ignored) was then read as the whole
// object: its HTML came back as the object's bytes under the version
// asked for, and a node cached them there. Likewise a rewritten object
// behind a proxy that drops ETag. Now a read of a version fails with
// ErrNoVersion when the answer does not say which version it holds.
func TestS3PinnedReadWithoutETag(t *testing.T) {
	page := []byte("<html><body><h1>Service temporarily down for maintenance</h1></body></html>")
	v2 := randomBytes(51, 10000)
	for _, tc := range []struct {
		name string
		body []byte
		rng  bool // answer the Range (206) rather than the whole body (200)
	}{
		{"maintenance page", page, false},
		{"rewritten object", v2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeS3{}
			f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
				if r.Method != http.MethodGet {
					return false
				}
				if tc.rng {
					w.Header().Set("Content-Range", "bytes 0-99/"+strconv.Itoa(len(tc.body)))
					w.Header().Set("Content-Length", "100")
					w.WriteHeader(http.StatusPartialContent)
					w.Write(tc.body[:100])
					return true
				}
				w.Header().Set("Content-Type", "text/html")
				w.Header().Set("Content-Length", strconv.Itoa(len(tc.body)))
				w.Write(tc.body)
				return true
			}
			s, _ := newFake(t, f, nil)
			ctx := context.Background()
			info, err := s.Stat(ctx, "s3://bkt/key")
			if err != nil {
				t.Fatal(err)
			}
			p := make([]byte, 100)
			n, err := s.ReadAt(ctx, info.URI, info.Version, p, 0)
			if (err == nil || err == io.EOF) && !bytes.Equal(p[:n], f.data[:n]) {
				t.Fatalf("ReadAt(version %s) = (%d, %v) with bytes that are not that version's: %q", info.Version, n, err, p[:min(n, 40)])
			}
			if !errors.Is(err, origin.ErrNoVersion) {
				t.Errorf("ReadAt(version %s) of an answer without ETag: %v, want ErrNoVersion", info.Version, err)
			}
		})
	}
}
