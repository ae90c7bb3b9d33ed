// Regression tests for bugs a review found (2026-12-01): each test's
// comment describes the bug as it was before the fix.
package origin_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// RFC 9110 allows "bytes a-b/*" (complete length unknown). A store that
// caps a range and answers with total "*" makes getRange set atEnd=true, so
// a capped piece is returned as (n < len(p), io.EOF) from the middle of the
// object: the cache then sees a short object.
func TestS3UnknownTotalCappedRangeIsNotEOF(t *testing.T) {
	f := &fakeS3{data: randomBytes(31, 5000)}
	f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.Method != http.MethodGet {
			return false
		}
		a, _, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("Range"), "bytes="), "-")
		start, _ := strconv.Atoi(a)
		if start >= len(f.data) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(f.data)))
			s3Error(w, http.StatusRequestedRangeNotSatisfiable, "InvalidRange")
			return true
		}
		end := min(start+999, len(f.data)-1)
		w.Header().Set("ETag", f.etag)
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/*", start, end))
		w.Header().Set("Content-Length", strconv.Itoa(end-start+1))
		w.WriteHeader(http.StatusPartialContent)
		w.Write(f.data[start : end+1])
		return true
	}
	s, _ := newFake(t, f, nil)
	p := make([]byte, 3000)
	n, err := s.ReadAt(context.Background(), "s3://bkt/key", f.etag, p, 0)
	if n != 3000 || err != nil || !bytes.Equal(p, f.data[:3000]) {
		t.Fatalf("ReadAt(0, 3000) of a 5000-byte object = (%d, %v), want (3000, nil)", n, err)
	}
}

// A 206 without Content-Range (a non-conforming store or proxy) is taken
// for a 200 carrying the whole object: the code skips `off` bytes of a body
// that already starts at `off`, and returns bytes from the wrong offset
// with io.EOF.
func TestS3PartialContentWithoutContentRange(t *testing.T) {
	f := &fakeS3{data: randomBytes(32, 5000)}
	f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.Method != http.MethodGet {
			return false
		}
		a, b, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("Range"), "bytes="), "-")
		start, _ := strconv.Atoi(a)
		end, _ := strconv.Atoi(b)
		end = min(end, len(f.data)-1)
		w.Header().Set("ETag", f.etag)
		w.Header().Set("Content-Length", strconv.Itoa(end-start+1))
		w.WriteHeader(http.StatusPartialContent)
		w.Write(f.data[start : end+1])
		return true
	}
	s, _ := newFake(t, f, nil)
	p := make([]byte, 500)
	n, err := s.ReadAt(context.Background(), "s3://bkt/key", f.etag, p, 100)
	if err == nil || err == io.EOF {
		if !bytes.Equal(p[:n], f.data[100:100+n]) {
			t.Fatalf("ReadAt(100, 500) = (%d, %v) with bytes that are not the object's bytes at 100", n, err)
		}
		if n != 500 {
			t.Fatalf("ReadAt(100, 500) = (%d, %v), want 500 bytes", n, err)
		}
	}
}
