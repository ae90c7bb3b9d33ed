package gateway

import (
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/readpath"
)

// TestWeakOriginETag: origin.NormalizeETag keeps a weak
// ETag (W/"...") as the store sent it. Was: quoteETag wrapped it in another
// pair of quotes: the client gets the malformed ETag "W/"abc"" and its
// If-None-Match with the ETag it was given never matches.
func TestWeakOriginETag(t *testing.T) {
	data := []byte("0123456789")
	be := backendFunc{
		stat: func(string) (origin.Info, error) {
			return origin.Info{Size: int64(len(data)), Version: `W/"abc"`, ModTime: time.Unix(1700000000, 0)}, nil
		},
		read: func(req readpath.Request, emit func([]byte) error) (readpath.Summary, error) {
			return readpath.Summary{}, emit(data[req.Offset:req.End()])
		},
	}
	gw, err := New(Config{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	gw.ServeHTTP(w, httptest.NewRequest("GET", "/bkt/k", nil))
	if got := w.Header().Get("ETag"); got != `W/"abc"` {
		t.Errorf("ETag header %q, want the origin's W/\"abc\"", got)
	}
	r := httptest.NewRequest("GET", "/bkt/k", nil)
	r.Header.Set("If-None-Match", w.Header().Get("ETag"))
	w2 := httptest.NewRecorder()
	gw.ServeHTTP(w2, r)
	if w2.Code != 304 {
		t.Errorf("If-None-Match with the ETag just served: status %d, want 304", w2.Code)
	}
	r = httptest.NewRequest("GET", "/bkt/k", nil)
	r.Header.Set("If-None-Match", `W/"abc"`)
	w3 := httptest.NewRecorder()
	gw.ServeHTTP(w3, r)
	if w3.Code != 304 {
		t.Errorf("If-None-Match: W/\"abc\": status %d, want 304", w3.Code)
	}
}

// TestRetryDropsOldVersionHeaders: the object changes between Stat and
// the first byte; the gateway starts over, but headers it set from the old
// version's Stat survive into the new version's response (a user metadata
// header the new version does not have, e.g. rclone's mtime).
func TestRetryDropsOldVersionHeaders(t *testing.T) {
	newData := []byte("new bytes")
	var stats atomic.Int32
	be := backendFunc{
		stat: func(string) (origin.Info, error) {
			if stats.Add(1) == 1 {
				return origin.Info{Size: 20, Version: `"v1"`, ModTime: time.Unix(1700000000, 0),
					Metadata: map[string]string{"mtime": "1690000000.5"}}, nil
			}
			return origin.Info{Size: int64(len(newData)), Version: `"v2"`, ModTime: time.Unix(1700000100, 0)}, nil
		},
		read: func(req readpath.Request, emit func([]byte) error) (readpath.Summary, error) {
			if req.ExpectedVersion != `"v2"` {
				return readpath.Summary{}, fmt.Errorf("test: %w", origin.ErrVersionChanged)
			}
			return readpath.Summary{}, emit(newData[req.Offset:req.End()])
		},
	}
	gw, err := New(Config{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	gw.ServeHTTP(w, httptest.NewRequest("GET", "/bkt/k", nil))
	if w.Code != 200 || w.Body.String() != string(newData) || w.Header().Get("ETag") != `"v2"` {
		t.Fatalf("status %d body %q ETag %q", w.Code, w.Body, w.Header().Get("ETag"))
	}
	if got := w.Header().Get("X-Amz-Meta-Mtime"); got != "" {
		t.Errorf("response of version v2 carries x-amz-meta-mtime %q of version v1", got)
	}
}

// TestReadRangeErrorContentRange: a Read that fails before the first
// byte with a range error becomes 416, but keeps the Content-Range of the
// 206 it was going to send ("bytes 10-19/1000"), where RFC 9110 wants
// "bytes */1000" on a 416.
func TestReadRangeErrorContentRange(t *testing.T) {
	be := backendFunc{
		stat: func(string) (origin.Info, error) { return origin.Info{Size: 1000, Version: `"v"`}, nil },
		read: func(req readpath.Request, emit func([]byte) error) (readpath.Summary, error) {
			return readpath.Summary{}, fmt.Errorf("test: %w", cache.ErrOutOfRange)
		},
	}
	gw, err := New(Config{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/bkt/k", nil)
	r.Header.Set("Range", "bytes=10-19")
	w := httptest.NewRecorder()
	gw.ServeHTTP(w, r)
	if w.Code != 416 {
		t.Fatalf("status %d", w.Code)
	}
	if cr := w.Header().Get("Content-Range"); cr != "" && cr != "bytes */1000" {
		t.Errorf("416 with Content-Range %q, want bytes */1000 (or none)", cr)
	}
}

// TestErrorsCarryNoObjectMetadata: an S3 error answered after the Stat
// (412 for a failed precondition, 416 for a range past the end, GET and
// HEAD) carries none of the object's headers: its user metadata
// (x-amz-meta-*) is not sent, and the Content-Type is the error document's
// (or none, for a HEAD), not the object's. Was: x-amz-meta-* of the object
// went out on every such error, and a HEAD's error carried the object's
// Content-Type (found by a review).
func TestErrorsCarryNoObjectMetadata(t *testing.T) {
	data := []byte("0123456789")
	be := backendFunc{
		stat: func(string) (origin.Info, error) {
			return origin.Info{Size: int64(len(data)), Version: `"v1"`, ModTime: time.Unix(1700000000, 0),
				ContentType: "text/csv", Metadata: map[string]string{"mtime": "1690000000.5"}}, nil
		},
		read: func(req readpath.Request, emit func([]byte) error) (readpath.Summary, error) {
			return readpath.Summary{}, emit(data[req.Offset:req.End()])
		},
	}
	gw, err := New(Config{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, header, value string
		status                int
	}{
		{"GET", "If-Match", `"other"`, 412},
		{"HEAD", "If-Match", `"other"`, 412},
		{"GET", "Range", "bytes=100-", 416},
		{"HEAD", "Range", "bytes=100-", 416},
	} {
		r := httptest.NewRequest(tc.method, "/bkt/k", nil)
		r.Header.Set(tc.header, tc.value)
		w := httptest.NewRecorder()
		gw.ServeHTTP(w, r)
		if w.Code != tc.status {
			t.Fatalf("%s with %s: %s: status %d, want %d", tc.method, tc.header, tc.value, w.Code, tc.status)
		}
		if v := w.Header().Get("x-amz-meta-mtime"); v != "" {
			t.Errorf("%s with %s: %s: %d carries x-amz-meta-mtime: %s", tc.method, tc.header, tc.value, w.Code, v)
		}
		if ct := w.Header().Get("Content-Type"); ct == "text/csv" {
			t.Errorf("%s with %s: %s: %d carries the object's Content-Type %q", tc.method, tc.header, tc.value, w.Code, ct)
		}
	}
}
