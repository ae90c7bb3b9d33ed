// Regression tests for bugs a review found (2026-12-01): each test's
// comment describes the bug as it was before the fix.
package origin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/locuscache/locus/pkg/origin"
)

// A store that ignores If-Match (which S3Store documents it defends
// against by checking the response ETag) and an object rewritten shorter:
// a read of the OLD version at an offset inside the old size but past the
// new size gets 416; the follow-up HEAD (If-Match also ignored) reports the
// new, shorter size, and ReadAt returns (0, io.EOF) for the old version
// instead of ErrVersionChanged. The HEAD's ETag is never compared with the
// version asked for.
func TestS3ShrunkObjectIgnoringIfMatchIsNotEOF(t *testing.T) {
	f := &fakeS3{data: randomBytes(21, 3000), etag: `"v2"`} // current: 3000 bytes, "v2"
	f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		r.Header.Del("If-Match") // the store ignores If-Match
		return false
	}
	s, _ := newFake(t, f, nil)
	// The caller holds version "v1" of 10000 bytes (from an earlier Stat).
	p := make([]byte, 1000)
	n, err := s.ReadAt(context.Background(), "s3://bkt/key", `"v1"`, p, 5000)
	if !errors.Is(err, origin.ErrVersionChanged) {
		t.Fatalf("ReadAt(old version, off 5000) on an object rewritten to 3000 bytes = (%d, %v), want ErrVersionChanged", n, err)
	}
}

// Same, but the rewrite lands between two pieces of one ReadAt (a store that
// caps ranges): the first piece is of v1, then 416 + HEAD of v2 -> a short
// count with io.EOF under version v1, i.e. a truncated object served as v1.
func TestS3ShrinkBetweenPiecesIsNotEOF(t *testing.T) {
	old := randomBytes(22, 10000)
	var rewritten atomic.Bool
	f := &fakeS3{data: old, etag: `"v1"`}
	f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		r.Header.Del("If-Match")
		if rewritten.Load() {
			// v2: 3000 bytes.
			w.Header().Set("ETag", `"v2"`)
			if r.Method == http.MethodHead {
				w.Header().Set("Content-Length", "3000")
				return true
			}
			w.Header().Set("Content-Range", "bytes */3000")
			s3Error(w, http.StatusRequestedRangeNotSatisfiable, "InvalidRange")
			return true
		}
		if r.Method != http.MethodGet {
			return false
		}
		// v1, capping each range to 1000 bytes; rewrite right after.
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Content-Range", fmt.Sprintf("bytes 4000-4999/%d", len(old)))
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusPartialContent)
		w.Write(old[4000:5000])
		rewritten.Store(true)
		return true
	}
	s, _ := newFake(t, f, nil)
	p := make([]byte, 2000)
	n, err := s.ReadAt(context.Background(), "s3://bkt/key", `"v1"`, p, 4000)
	if !errors.Is(err, origin.ErrVersionChanged) {
		t.Fatalf("ReadAt = (%d, %v), want ErrVersionChanged (object of 10000 bytes at v1; %d < len(p) with EOF claims v1 ends at %d)",
			n, err, n, 4000+n)
	}
	_ = io.EOF
	_ = strconv.Itoa
}

// TestS3WeakETagReadable: a store that sends a weak ETag (W/"...") and
// compares If-Match strongly, as RFC 9110 says, answers 412 to every
// If-Match naming it. Was: ReadAt sent it, so every read of such an object
// failed with ErrVersionChanged; now the response's ETag alone pins the
// version, and a rewrite is still caught.
func TestS3WeakETagReadable(t *testing.T) {
	data := randomBytes(23, 5000)
	f := &fakeS3{data: data, etag: `W/"w1"`}
	var rewritten atomic.Bool
	f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if strings.HasPrefix(r.Header.Get("If-Match"), "W/") {
			s3Error(w, http.StatusPreconditionFailed, "PreconditionFailed")
			return true
		}
		if rewritten.Load() {
			w.Header().Set("ETag", `W/"w2"`)
			w.WriteHeader(http.StatusOK)
			return true
		}
		return false
	}
	s, _ := newFake(t, f, nil)
	info, err := s.Stat(context.Background(), "s3://bkt/key")
	if err != nil || info.Version != `W/"w1"` {
		t.Fatalf("Stat = %+v, %v", info, err)
	}
	p := make([]byte, 1000)
	if n, err := s.ReadAt(context.Background(), "s3://bkt/key", info.Version, p, 100); err != nil || n != 1000 || !bytes.Equal(p, data[100:1100]) {
		t.Fatalf("ReadAt of a weak-ETag object = (%d, %v), want 1000 right bytes", n, err)
	}
	rewritten.Store(true)
	if _, err := s.ReadAt(context.Background(), "s3://bkt/key", info.Version, p, 100); !errors.Is(err, origin.ErrVersionChanged) {
		t.Fatalf("ReadAt of the old weak version after a rewrite: %v, want ErrVersionChanged", err)
	}
}
