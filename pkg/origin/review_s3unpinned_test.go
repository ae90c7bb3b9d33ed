// Regression tests for bugs a review found (2026-12-01): each test's
// comment describes the bug as it was before the fix.
package origin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/locuscache/locus/pkg/origin"
)

// ReadAt with an empty version "reads whatever is current", but one call
// must still not return a buffer stitched from two versions. When a store
// caps ranges (or a body breaks off) ReadAt resumes without If-Match and
// without comparing the resumed response's ETag with the first one's, so
// the object rewritten between the pieces yields v1 bytes followed by v2
// bytes with a nil error.
func TestS3UnpinnedReadDoesNotMixVersions(t *testing.T) {
	v1 := randomBytes(41, 4000)
	v2 := randomBytes(42, 4000)
	var req atomic.Int32
	f := &fakeS3{}
	f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.Method != http.MethodGet {
			return false
		}
		data, etag := v1, `"v1"`
		if req.Add(1) > 1 {
			data, etag = v2, `"v2"` // rewritten after the first piece
		}
		a, _, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("Range"), "bytes="), "-")
		start, _ := strconv.Atoi(a)
		end := min(start+999, len(data)-1)
		w.Header().Set("ETag", etag)
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, len(data)))
		w.Header().Set("Content-Length", strconv.Itoa(end-start+1))
		w.WriteHeader(http.StatusPartialContent)
		w.Write(data[start : end+1])
		return true
	}
	s, _ := newFake(t, f, nil)
	p := make([]byte, 2000)
	n, err := s.ReadAt(context.Background(), "s3://bkt/key", "", p, 0)
	if err == nil && !bytes.Equal(p[:n], v1[:n]) && !bytes.Equal(p[:n], v2[:n]) {
		t.Fatalf("ReadAt(version \"\") = (%d, nil) with bytes of v1 then v2; want one version's bytes or ErrVersionChanged", n)
	}
	if err != nil && !errors.Is(err, origin.ErrVersionChanged) {
		t.Fatalf("unexpected err %v", err)
	}
}
