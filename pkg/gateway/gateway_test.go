package gateway

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/readpath"
)

// testData returns n deterministic pseudo-random bytes.
func testData(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// fakeBackend is a StoreBackend over a MemStore with fault injection.
type fakeBackend struct {
	StoreBackend
	statErr   error
	readErr   error // returned by Read before any byte
	failAfter int64 // > 0: emit this many bytes, then fail with readErr or errBroken
	reads     atomic.Int64
	lastReq   atomic.Pointer[readpath.Request]
	buckets   map[string]bool // for List: which buckets exist (nil = all)
}

var errBroken = errors.New("backend broke mid-read")

func (f *fakeBackend) Stat(ctx context.Context, uri string) (origin.Info, error) {
	if f.statErr != nil {
		return origin.Info{}, f.statErr
	}
	return f.StoreBackend.Stat(ctx, uri)
}

func (f *fakeBackend) Read(ctx context.Context, req readpath.Request, emit func([]byte) error) (readpath.Summary, error) {
	f.reads.Add(1)
	f.lastReq.Store(&req)
	if f.failAfter > 0 {
		left := f.failAfter
		sum, err := f.StoreBackend.Read(ctx, req, func(p []byte) error {
			if int64(len(p)) > left {
				p = p[:left]
			}
			left -= int64(len(p))
			if err := emit(p); err != nil {
				return err
			}
			if left == 0 {
				return errBroken
			}
			return nil
		})
		if err == nil {
			err = errBroken
		}
		return sum, err
	}
	if f.readErr != nil {
		return readpath.Summary{}, f.readErr
	}
	return f.StoreBackend.Read(ctx, req, emit)
}

func (f *fakeBackend) List(ctx context.Context, prefix string, fn func(origin.Info) error) error {
	if f.buckets != nil {
		u, err := origin.ParseURI(prefix)
		if err == nil && !f.buckets[u.Bucket] {
			return fmt.Errorf("%w: %s", origin.ErrBucketNotFound, u.Bucket)
		}
	}
	return f.StoreBackend.List(ctx, prefix, fn)
}

type fixture struct {
	store *origintest.MemStore
	be    *fakeBackend
	gw    *Gateway
	data  []byte // s3://bkt/obj
	info  origin.Info
	empty origin.Info // s3://bkt/empty
}

func newFixture(t testing.TB, mutate func(*Config)) *fixture {
	t.Helper()
	m := origintest.NewMemStore()
	f := &fixture{store: m, data: testData(1000, 1)}
	f.info = m.Put("s3://bkt/obj", f.data)
	f.empty = m.Put("s3://bkt/empty", nil)
	m.Put("s3://bkt/dir/a b+c.txt", []byte("spaces"))
	f.be = &fakeBackend{StoreBackend: StoreBackend{Store: m, ChunkSize: 64}, buckets: map[string]bool{"bkt": true}}
	cfg := Config{Backend: f.be}
	if mutate != nil {
		mutate(&cfg)
	}
	gw, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.gw = gw
	return f
}

func (f *fixture) do(method, target string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	f.gw.ServeHTTP(w, r)
	return w
}

func parseError(t testing.TB, body []byte) errorDoc {
	t.Helper()
	var e errorDoc
	if err := xml.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body is not S3 XML: %v\n%s", err, body)
	}
	return e
}

func TestGetObject(t *testing.T) {
	f := newFixture(t, nil)
	mod := f.info.ModTime.UTC().Format(http.TimeFormat)
	later := f.info.ModTime.Add(time.Hour).UTC().Format(http.TimeFormat)
	earlier := f.info.ModTime.Add(-time.Hour).UTC().Format(http.TimeFormat)
	const etag = `"m1"`
	tests := []struct {
		name         string
		method       string
		target       string
		hdr          []string
		status       int
		body         []byte // nil: not checked unless code set
		contentRange string
		code         string // S3 error code
	}{
		{name: "whole", target: "/bkt/obj", status: 200, body: f.data},
		{name: "head", method: "HEAD", target: "/bkt/obj", status: 200, body: []byte{}},
		{name: "range", target: "/bkt/obj", hdr: []string{"Range", "bytes=10-19"}, status: 206, body: f.data[10:20], contentRange: "bytes 10-19/1000"},
		{name: "range open", target: "/bkt/obj", hdr: []string{"Range", "bytes=990-"}, status: 206, body: f.data[990:], contentRange: "bytes 990-999/1000"},
		{name: "range past end clamps", target: "/bkt/obj", hdr: []string{"Range", "bytes=990-5000"}, status: 206, body: f.data[990:], contentRange: "bytes 990-999/1000"},
		{name: "suffix", target: "/bkt/obj", hdr: []string{"Range", "bytes=-7"}, status: 206, body: f.data[993:], contentRange: "bytes 993-999/1000"},
		{name: "suffix longer than object", target: "/bkt/obj", hdr: []string{"Range", "bytes=-5000"}, status: 206, body: f.data, contentRange: "bytes 0-999/1000"},
		{name: "head range", method: "HEAD", target: "/bkt/obj", hdr: []string{"Range", "bytes=0-9"}, status: 206, body: []byte{}, contentRange: "bytes 0-9/1000"},
		{name: "multi-range ignored", target: "/bkt/obj", hdr: []string{"Range", "bytes=0-1,5-6"}, status: 200, body: f.data},
		{name: "range past end", target: "/bkt/obj", hdr: []string{"Range", "bytes=1000-"}, status: 416, code: "InvalidRange", contentRange: "bytes */1000"},
		{name: "range -0", target: "/bkt/obj", hdr: []string{"Range", "bytes=-0"}, status: 416, code: "InvalidRange", contentRange: "bytes */1000"},
		{name: "malformed range", target: "/bkt/obj", hdr: []string{"Range", "bytes=9-5"}, status: 400, code: "InvalidArgument"},
		{name: "malformed unit", target: "/bkt/obj", hdr: []string{"Range", "items=0-5"}, status: 400, code: "InvalidArgument"},
		{name: "head malformed range", method: "HEAD", target: "/bkt/obj", hdr: []string{"Range", "bytes=x"}, status: 400, body: []byte{}},
		{name: "empty object", target: "/bkt/empty", status: 200, body: []byte{}},
		{name: "empty object range", target: "/bkt/empty", hdr: []string{"Range", "bytes=0-"}, status: 416, code: "InvalidRange", contentRange: "bytes */0"},
		{name: "missing key", target: "/bkt/nope", status: 404, code: "NoSuchKey"},
		{name: "directory key", target: "/bkt/dir/", status: 404, code: "NoSuchKey"},
		{name: "missing bucket", target: "/nobucket/obj", status: 404, code: "NoSuchBucket"},
		{name: "head missing", method: "HEAD", target: "/bkt/nope", status: 404, body: []byte{}},
		{name: "key with spaces", target: "/bkt/dir/a%20b+c.txt", status: 200, body: []byte("spaces")},
		{name: "put", method: "PUT", target: "/bkt/obj", status: 405, code: "MethodNotAllowed"},
		{name: "delete", method: "DELETE", target: "/bkt/obj", status: 405, code: "MethodNotAllowed"},
		{name: "post", method: "POST", target: "/bkt/obj?uploads", status: 405, code: "MethodNotAllowed"},
		{name: "delete bucket", method: "DELETE", target: "/bkt", status: 405, code: "MethodNotAllowed"},
		{name: "acl", target: "/bkt/obj?acl", status: 501, code: "NotImplemented"},
		{name: "versionId", target: "/bkt/obj?versionId=abc", status: 501, code: "NotImplemented"},
		{name: "sdk x-id ignored", target: "/bkt/obj?x-id=GetObject", status: 200, body: f.data},
		{name: "partNumber 1", target: "/bkt/obj?partNumber=1", status: 206, body: f.data, contentRange: "bytes 0-999/1000"},
		{name: "partNumber 1 of empty", target: "/bkt/empty?partNumber=1", status: 200, body: []byte{}},
		{name: "partNumber 2", target: "/bkt/obj?partNumber=2", status: 416, code: "InvalidPartNumber"},
		{name: "partNumber junk", target: "/bkt/obj?partNumber=x", status: 400, code: "InvalidArgument"},
		// Conditional requests.
		{name: "if-match", target: "/bkt/obj", hdr: []string{"If-Match", etag}, status: 200, body: f.data},
		{name: "if-match unquoted", target: "/bkt/obj", hdr: []string{"If-Match", "m1"}, status: 200, body: f.data},
		{name: "if-match list", target: "/bkt/obj", hdr: []string{"If-Match", `"x", "m1"`}, status: 200, body: f.data},
		{name: "if-match star", target: "/bkt/obj", hdr: []string{"If-Match", "*"}, status: 200, body: f.data},
		{name: "if-match weak", target: "/bkt/obj", hdr: []string{"If-Match", `W/"m1"`}, status: 412, code: "PreconditionFailed"},
		{name: "if-match fails", target: "/bkt/obj", hdr: []string{"If-Match", `"other"`}, status: 412, code: "PreconditionFailed"},
		{name: "head if-match fails", method: "HEAD", target: "/bkt/obj", hdr: []string{"If-Match", `"other"`}, status: 412, body: []byte{}},
		{name: "if-none-match hit", target: "/bkt/obj", hdr: []string{"If-None-Match", etag}, status: 304, body: []byte{}},
		{name: "if-none-match weak hit", target: "/bkt/obj", hdr: []string{"If-None-Match", `W/"m1"`}, status: 304, body: []byte{}},
		{name: "if-none-match miss", target: "/bkt/obj", hdr: []string{"If-None-Match", `"other"`}, status: 200, body: f.data},
		{name: "if-modified-since same", target: "/bkt/obj", hdr: []string{"If-Modified-Since", mod}, status: 304, body: []byte{}},
		{name: "if-modified-since later", target: "/bkt/obj", hdr: []string{"If-Modified-Since", later}, status: 304, body: []byte{}},
		{name: "if-modified-since earlier", target: "/bkt/obj", hdr: []string{"If-Modified-Since", earlier}, status: 200, body: f.data},
		{name: "if-modified-since junk", target: "/bkt/obj", hdr: []string{"If-Modified-Since", "yesterday"}, status: 200, body: f.data},
		{name: "if-unmodified-since earlier", target: "/bkt/obj", hdr: []string{"If-Unmodified-Since", earlier}, status: 412, code: "PreconditionFailed"},
		{name: "if-unmodified-since same", target: "/bkt/obj", hdr: []string{"If-Unmodified-Since", mod}, status: 200, body: f.data},
		// S3: If-Match true and If-Unmodified-Since false → 200.
		{name: "if-match beats if-unmodified-since", target: "/bkt/obj", hdr: []string{"If-Match", etag, "If-Unmodified-Since", earlier}, status: 200, body: f.data},
		// S3: If-None-Match false and If-Modified-Since true → 304.
		{name: "if-none-match beats if-modified-since", target: "/bkt/obj", hdr: []string{"If-None-Match", etag, "If-Modified-Since", earlier}, status: 304, body: []byte{}},
		{name: "if-none-match miss ignores if-modified-since", target: "/bkt/obj", hdr: []string{"If-None-Match", `"x"`, "If-Modified-Since", later}, status: 200, body: f.data},
		{name: "if-range etag match", target: "/bkt/obj", hdr: []string{"Range", "bytes=0-9", "If-Range", etag}, status: 206, body: f.data[:10], contentRange: "bytes 0-9/1000"},
		{name: "if-range etag mismatch", target: "/bkt/obj", hdr: []string{"Range", "bytes=0-9", "If-Range", `"old"`}, status: 200, body: f.data},
		{name: "if-range date match", target: "/bkt/obj", hdr: []string{"Range", "bytes=0-9", "If-Range", mod}, status: 206, body: f.data[:10], contentRange: "bytes 0-9/1000"},
		{name: "if-range date mismatch", target: "/bkt/obj", hdr: []string{"Range", "bytes=0-9", "If-Range", earlier}, status: 200, body: f.data},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = "GET"
			}
			w := f.do(method, tt.target, tt.hdr...)
			res := w.Result()
			body := w.Body.Bytes()
			if res.StatusCode != tt.status {
				t.Fatalf("%s %s: status %d, want %d; body %s", method, tt.target, res.StatusCode, tt.status, body)
			}
			if res.Header.Get("x-amz-request-id") == "" {
				t.Errorf("no x-amz-request-id header")
			}
			if tt.body != nil && !bytes.Equal(body, tt.body) {
				t.Errorf("body: got %d bytes, want %d (equal prefix: %v)", len(body), len(tt.body), bytes.HasPrefix(tt.body, body))
			}
			if got := res.Header.Get("Content-Range"); got != tt.contentRange {
				t.Errorf("Content-Range %q, want %q", got, tt.contentRange)
			}
			switch {
			case tt.status == 200 || tt.status == 206:
				wantLen := len(tt.body)
				if method == "HEAD" {
					wantLen = len(f.data)
					if tt.status == 206 {
						wantLen = 10
					}
				}
				for k, want := range map[string]string{
					"Content-Length": fmt.Sprint(wantLen),
					"Accept-Ranges":  "bytes",
					"Content-Type":   "application/octet-stream",
				} {
					if got := res.Header.Get(k); got != want {
						t.Errorf("%s = %q, want %q", k, got, want)
					}
				}
				if got := res.Header.Get("ETag"); got == "" || got[0] != '"' {
					t.Errorf("ETag %q, want a quoted entity tag", got)
				}
				if _, err := http.ParseTime(res.Header.Get("Last-Modified")); err != nil {
					t.Errorf("Last-Modified %q: %v", res.Header.Get("Last-Modified"), err)
				}
			case tt.status == 304:
				if res.Header.Get("ETag") != etag {
					t.Errorf("304 ETag %q, want %q", res.Header.Get("ETag"), etag)
				}
			}
			if tt.code != "" {
				e := parseError(t, body)
				if e.Code != tt.code {
					t.Errorf("error code %q, want %q (message %q)", e.Code, tt.code, e.Message)
				}
				if e.RequestID != res.Header.Get("x-amz-request-id") {
					t.Errorf("RequestId %q does not match the header %q", e.RequestID, res.Header.Get("x-amz-request-id"))
				}
				if e.Resource == "" || e.Message == "" {
					t.Errorf("error without Resource or Message: %+v", e)
				}
				if ct := res.Header.Get("Content-Type"); ct != "application/xml" {
					t.Errorf("error Content-Type %q", ct)
				}
				if res.Header.Get("ETag") != "" {
					t.Errorf("error response carries the object's ETag")
				}
			}
			if tt.status == 405 && res.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("405 Allow = %q", res.Header.Get("Allow"))
			}
		})
	}
}

func TestGetObjectPinsVersion(t *testing.T) {
	f := newFixture(t, nil)
	w := f.do("GET", "/bkt/obj", "Range", "bytes=5-9")
	if w.Code != 206 {
		t.Fatalf("status %d", w.Code)
	}
	req := f.be.lastReq.Load()
	want := readpath.Request{URI: "s3://bkt/obj", Offset: 5, Length: 5, ExpectedVersion: "m1"}
	if *req != want {
		t.Fatalf("backend request %+v, want %+v", *req, want)
	}
}

func TestLenientRange(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.LenientRange = true })
	w := f.do("GET", "/bkt/obj", "Range", "bytes=9-5")
	if w.Code != 200 || !bytes.Equal(w.Body.Bytes(), f.data) {
		t.Fatalf("lenient malformed range: status %d, %d bytes; want 200 and the whole object", w.Code, w.Body.Len())
	}
	if w := f.do("GET", "/bkt/obj", "Range", "bytes=2000-"); w.Code != 416 {
		t.Fatalf("lenient unsatisfiable range: status %d, want 416", w.Code)
	}
}

func TestBackendErrors(t *testing.T) {
	tests := []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("x: %w", origin.ErrUnavailable), 503, "ServiceUnavailable"},
		{fmt.Errorf("x: %w", origin.ErrTimeout), 503, "ServiceUnavailable"},
		{context.DeadlineExceeded, 503, "ServiceUnavailable"},
		{fmt.Errorf("x: %w", origin.ErrAccessDenied), 403, "AccessDenied"},
		{fmt.Errorf("x: %w", origin.ErrRejected), 400, "InvalidArgument"},
		{fmt.Errorf("x: %w", origin.ErrOutsideRoot), 403, "AccessDenied"},
		{fmt.Errorf("x: %w", origin.ErrInvalidURI), 400, "InvalidArgument"},
		{fmt.Errorf("x: %w", origin.ErrUnsupportedScheme), 501, "NotImplemented"},
		{fmt.Errorf("x: %w", origin.ErrBucketNotFound), 404, "NoSuchBucket"},
		{errors.New("disk on fire"), 500, "InternalError"},
	}
	for _, tt := range tests {
		for _, where := range []string{"stat", "read"} {
			t.Run(where+"/"+tt.code+"/"+tt.err.Error(), func(t *testing.T) {
				f := newFixture(t, nil)
				if where == "stat" {
					f.be.statErr = tt.err
				} else {
					f.be.readErr = tt.err
				}
				w := f.do("GET", "/bkt/obj")
				if w.Code != tt.status {
					t.Fatalf("status %d, want %d; body %s", w.Code, tt.status, w.Body)
				}
				if e := parseError(t, w.Body.Bytes()); e.Code != tt.code {
					t.Fatalf("code %q, want %q", e.Code, tt.code)
				}
			})
		}
	}
}

// TestVersionChangeBeforeFirstByte: the object is overwritten between the
// gateway's Stat and its Read; the gateway starts over and serves the new
// version whole, never a mix.
func TestVersionChangeBeforeFirstByte(t *testing.T) {
	f := newFixture(t, nil)
	newData := testData(1000, 2)
	var once atomic.Bool
	f.store.Hook = func(op, uri string) error {
		if op == "read" && once.CompareAndSwap(false, true) {
			f.store.Put("s3://bkt/obj", newData)
		}
		return nil
	}
	w := f.do("GET", "/bkt/obj")
	if w.Code != 200 || !bytes.Equal(w.Body.Bytes(), newData) {
		t.Fatalf("status %d, new data %v", w.Code, bytes.Equal(w.Body.Bytes(), newData))
	}
	if got := w.Header().Get("ETag"); got != `"m4"` {
		t.Fatalf("ETag %q, want the new version's", got)
	}
	if n := f.be.reads.Load(); n != 2 {
		t.Fatalf("%d backend reads, want 2 (one retry)", n)
	}
}

// TestVersionKeepsChanging: when every attempt loses the race, the client
// gets 503 SlowDown, not bytes.
func TestVersionKeepsChanging(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.MaxVersionRetries = 1 })
	f.store.Hook = func(op, uri string) error {
		if op == "read" {
			f.store.Put("s3://bkt/obj", testData(1000, 3))
		}
		return nil
	}
	w := f.do("GET", "/bkt/obj")
	if w.Code != 503 || parseError(t, w.Body.Bytes()).Code != "SlowDown" {
		t.Fatalf("status %d body %s, want 503 SlowDown", w.Code, w.Body)
	}
	if n := f.be.reads.Load(); n != 2 {
		t.Fatalf("%d backend reads, want 2", n)
	}
}

// TestAbortMidBody: a backend failure after the headers breaks the
// connection, so a real HTTP client sees an error, never a short body
// presented as complete.
func TestAbortMidBody(t *testing.T) {
	f := newFixture(t, nil)
	big := testData(200_000, 4)
	f.store.Put("s3://bkt/big", big)
	f.be.failAfter = 100_000 // well past the server's write buffer, so headers are out
	srv := httptest.NewServer(f.gw)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/bkt/big")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.ContentLength != int64(len(big)) {
		t.Fatalf("status %d length %d", res.StatusCode, res.ContentLength)
	}
	got, err := io.ReadAll(res.Body)
	if err == nil {
		t.Fatalf("read %d bytes without error; want a broken body", len(got))
	}
	if len(got) > 100_000 || !bytes.Equal(got, big[:len(got)]) {
		t.Fatalf("got %d bytes before the break; want a correct prefix of at most 100000", len(got))
	}
}

// TestBackendOverlong: a backend that emits more than asked is cut off.
func TestBackendOverlong(t *testing.T) {
	be := backendFunc{
		stat: func(string) (origin.Info, error) { return origin.Info{Size: 10, Version: `"v"`}, nil },
		read: func(req readpath.Request, emit func([]byte) error) (readpath.Summary, error) {
			return readpath.Summary{}, emit(make([]byte, req.Length+1))
		},
	}
	gw, err := New(Config{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	gw.ServeHTTP(w, httptest.NewRequest("GET", "/bkt/k", nil))
	if w.Code != 500 {
		t.Fatalf("status %d, want 500 (nothing sent yet)", w.Code)
	}
}

type backendFunc struct {
	stat func(uri string) (origin.Info, error)
	read func(req readpath.Request, emit func([]byte) error) (readpath.Summary, error)
}

func (b backendFunc) Stat(_ context.Context, uri string) (origin.Info, error) { return b.stat(uri) }
func (b backendFunc) Read(_ context.Context, req readpath.Request, emit func([]byte) error) (readpath.Summary, error) {
	return b.read(req, emit)
}

func TestBucketMapping(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Buckets = map[string]string{"lake": "s3://bkt/dir/", "raw": "s3://bkt/"}
	})
	if w := f.do("GET", "/lake/a%20b+c.txt"); w.Code != 200 || w.Body.String() != "spaces" {
		t.Fatalf("mapped bucket: status %d body %q", w.Code, w.Body)
	}
	if w := f.do("GET", "/raw/obj"); w.Code != 200 || !bytes.Equal(w.Body.Bytes(), f.data) {
		t.Fatalf("mapped bucket: status %d", w.Code)
	}
	for _, target := range []string{"/bkt/obj", "/other/obj", "/other", "/other?list-type=2"} {
		w := f.do("GET", target)
		if w.Code != 404 || parseError(t, w.Body.Bytes()).Code != "NoSuchBucket" {
			t.Fatalf("GET %s: status %d body %s, want 404 NoSuchBucket", target, w.Code, w.Body)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	be := StoreBackend{Store: origintest.NewMemStore()}
	for _, cfg := range []Config{
		{},
		{Backend: be, Buckets: map[string]string{"b": "s3://x"}},
		{Backend: be, Buckets: map[string]string{"b": "bucket/"}},
		{Backend: be, Buckets: map[string]string{"a/b": "s3://x/"}},
		{Backend: be, Buckets: map[string]string{"b": "http://x/"}},
		{Backend: be, Buckets: map[string]string{"b": "S3://bkt/"}},
		{Backend: be, Buckets: map[string]string{"b": "s3://x/"}},           // bucket name too short for S3
		{Backend: be, Buckets: map[string]string{"b": "file://host/data/"}}, // file URIs name local paths
	} {
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v) error %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

// TestConfigValidateGood: the prefixes the docs show are accepted.
func TestConfigValidateGood(t *testing.T) {
	be := StoreBackend{Store: origintest.NewMemStore()}
	for _, p := range []string{"s3://bkt/", "s3://bkt/dir/sub/", "file:///", "file:///data/lake/"} {
		if _, err := New(Config{Backend: be, Buckets: map[string]string{"b": p}}); err != nil {
			t.Errorf("Buckets {b: %q}: %v", p, err)
		}
	}
}

func TestFileBucket(t *testing.T) {
	root := t.TempDir()
	fs, err := origin.NewFileStore(origin.FileConfig{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	data := testData(5000, 9)
	if err := writeFile(root+"/sub dir/x.bin", data); err != nil {
		t.Fatal(err)
	}
	gw, err := New(Config{Backend: StoreBackend{Store: fs}, Buckets: map[string]string{"local": "file://" + root + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	get := func(target string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		gw.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
		return w
	}
	if w := get("/local/sub%20dir/x.bin"); w.Code != 200 || !bytes.Equal(w.Body.Bytes(), data) {
		t.Fatalf("file bucket: status %d body %d bytes", w.Code, w.Body.Len())
	}
	for _, target := range []string{"/local/../etc/passwd", "/local/sub%20dir/../../x", "/local/%2e%2e/x"} {
		w := get(target)
		if w.Code != 403 && w.Code != 400 && w.Code != 404 {
			t.Fatalf("GET %s: status %d, want a refusal", target, w.Code)
		}
		if w.Code == 200 {
			t.Fatalf("GET %s served a file outside the root", target)
		}
	}
	w := get("/local?list-type=2&prefix=sub")
	if w.Code != 200 || !strings.Contains(w.Body.String(), "<Key>sub dir/x.bin</Key>") {
		t.Fatalf("file bucket listing: status %d body %s", w.Code, w.Body)
	}
}

func writeFile(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}

// TestKeyPathsVerbatim: S3 keys are taken literally, "//", "." and ".."
// included; the gateway neither cleans nor redirects them.
func TestKeyPathsVerbatim(t *testing.T) {
	f := newFixture(t, nil)
	for _, key := range []string{"a//b", "a/../c", "./d", "e/./f", "g/", "h%2Fi", "j?k"} {
		f.store.Put("s3://bkt/"+key, []byte("key "+key))
	}
	for target, want := range map[string]string{
		"/bkt/a//b":     "key a//b",
		"/bkt/a/../c":   "key a/../c",
		"/bkt/./d":      "key ./d",
		"/bkt/e/./f":    "key e/./f",
		"/bkt/h%252Fi":  "key h%2Fi",
		"/bkt/j%3Fk":    "key j?k",
		"/bkt/a%2F%2Fb": "key a//b", // an encoded slash is a slash, as in S3
	} {
		r := httptest.NewRequest("GET", "http://x"+target, nil)
		w := httptest.NewRecorder()
		f.gw.ServeHTTP(w, r)
		if w.Code != 200 || w.Body.String() != want {
			t.Errorf("GET %s: %d %q, want 200 %q", target, w.Code, w.Body, want)
		}
	}
}

// TestDirectoryKey: a node refuses a key ending in "/" (a listing prefix)
// with ErrInvalidURI; tools probe such keys and must see 404, not 400.
func TestDirectoryKey(t *testing.T) {
	f := newFixture(t, nil)
	f.be.statErr = fmt.Errorf("%w: a prefix", origin.ErrInvalidURI)
	if w := f.do("GET", "/bkt/dir/"); w.Code != 404 || parseError(t, w.Body.Bytes()).Code != "NoSuchKey" {
		t.Fatalf("GET dir/: %d %s, want 404 NoSuchKey", w.Code, w.Body)
	}
	if w := f.do("HEAD", "/bkt/dir/"); w.Code != 404 {
		t.Fatalf("HEAD dir/: %d, want 404", w.Code)
	}
	if w := f.do("GET", "/bkt/obj"); w.Code != 400 {
		t.Fatalf("GET with an invalid URI: %d, want 400", w.Code)
	}
}

// TestBucketMappingDotDot: a mapped bucket's keys stay under its prefix.
// Some S3-compatible stores (versitygw's posix backend, for one) resolve
// ".." segments in a key, so /lake/../secret with lake=s3://bkt/dir/ would
// read s3://bkt/secret; the gateway refuses such keys and listing prefixes
// (403, as FileStore does for file:// prefixes) before the origin sees them.
func TestBucketMappingDotDot(t *testing.T) {
	m := origintest.NewMemStore()
	m.Put("s3://bkt/secret", []byte("secret"))
	m.Put("s3://bkt/dir/ok..name", []byte("dots"))
	var asked []string
	// A store that resolves dot segments the way a POSIX-backed one does.
	clean := func(uri string) string {
		u, _ := strings.CutPrefix(uri, "s3://")
		return "s3://" + path.Clean(u)
	}
	be := StoreBackend{Store: m}
	gw, err := New(Config{
		Backend: backendFunc{
			stat: func(uri string) (origin.Info, error) {
				asked = append(asked, uri)
				return be.Stat(context.Background(), clean(uri))
			},
			read: func(req readpath.Request, emit func([]byte) error) (readpath.Summary, error) {
				asked = append(asked, req.URI)
				req.URI = clean(req.URI)
				return be.Read(context.Background(), req, emit)
			},
		},
		Lister:  m,
		Buckets: map[string]string{"lake": "s3://bkt/dir/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, target string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		gw.ServeHTTP(w, httptest.NewRequest(method, target, nil))
		return w
	}
	for _, tc := range []struct {
		method, target string
	}{
		{"GET", "/lake/../secret"},
		{"HEAD", "/lake/../secret"},
		{"GET", "/lake/%2e%2e/secret"},
		{"GET", "/lake/%2E%2E/secret"},
		{"GET", "/lake/x/../../secret"},
		{"GET", "/lake/..%2fsecret"},
		{"GET", "/lake?list-type=2&prefix=../"},
		{"GET", "/lake?prefix=x/../../"},
	} {
		asked = nil
		w := do(tc.method, tc.target)
		if w.Code != http.StatusForbidden || w.Body.String() == "secret" {
			t.Errorf("%s %s: status %d body %q, want 403", tc.method, tc.target, w.Code, w.Body)
			continue
		}
		if tc.method == "GET" && parseError(t, w.Body.Bytes()).Code != "AccessDenied" {
			t.Errorf("%s %s: body %s, want AccessDenied", tc.method, tc.target, w.Body)
		}
		if len(asked) != 0 {
			t.Errorf("%s %s: the origin was asked for %q", tc.method, tc.target, asked)
		}
	}
	// Dots inside a segment are ordinary key characters.
	if w := do("GET", "/lake/ok..name"); w.Code != 200 || w.Body.String() != "dots" {
		t.Errorf("GET /lake/ok..name: status %d body %q, want 200 dots", w.Code, w.Body)
	}
}

// staleBackend answers Stat from a snapshot taken before the object was
// rewritten (a node's stat cache within its TTL) and Revalidate from the
// store.
type staleBackend struct {
	StoreBackend
	stale       origin.Info
	revalidated int
	revalErr    error // if set, Revalidate fails with it
}

func (b *staleBackend) Stat(ctx context.Context, uri string) (origin.Info, error) {
	return b.stale, nil
}

func (b *staleBackend) Revalidate(ctx context.Context, uri string) (origin.Info, error) {
	b.revalidated++
	if b.revalErr != nil {
		return origin.Info{}, b.revalErr
	}
	return b.Store.Stat(ctx, uri)
}

// TestRevalidateFailureKeepsCachedAnswer: when the origin cannot answer the
// revalidation an If-None-Match or If-Range of another ETag asks for, the
// gateway serves what its Stat knows (a request it could serve does not
// fail because the origin is down); a precondition it would fail, and an
// object the origin says is gone, follow the origin.
func TestRevalidateFailureKeepsCachedAnswer(t *testing.T) {
	m := origintest.NewMemStore()
	cur := m.Put("s3://bkt/obj", []byte("cached bytes"))
	for _, tc := range []struct {
		name string
		err  error
		hdr  []string
		code int
	}{
		{"If-None-Match other, origin down", origin.ErrUnavailable, []string{"If-None-Match", `"other"`}, 200},
		{"If-Range other, origin down", origin.ErrUnavailable, []string{"If-Range", `"other"`, "Range", "bytes=0-5"}, 200},
		{"If-None-Match other, object gone", origin.ErrNotFound, []string{"If-None-Match", `"other"`}, 404},
		{"If-Match other, origin down", origin.ErrUnavailable, []string{"If-Match", `"other"`}, 503},
	} {
		be := &staleBackend{StoreBackend: StoreBackend{Store: m}, stale: cur, revalErr: tc.err}
		gw, err := New(Config{Backend: be})
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest("GET", "/bkt/obj", nil)
		for i := 0; i+1 < len(tc.hdr); i += 2 {
			r.Header.Set(tc.hdr[i], tc.hdr[i+1])
		}
		w := httptest.NewRecorder()
		gw.ServeHTTP(w, r)
		if w.Code != tc.code || be.revalidated != 1 {
			t.Errorf("%s: status %d after %d revalidations, want %d after 1 (body %q)", tc.name, w.Code, be.revalidated, tc.code, w.Body)
		}
		if tc.code == 200 && w.Body.String() != "cached bytes" {
			t.Errorf("%s: body %q, want the whole object", tc.name, w.Body)
		}
	}
}

// TestConditionalRevalidates: a client that learned the new ETag elsewhere
// (another gateway node, the origin) and sends it in If-Match, If-None-Match
// or If-Range must not get 412, the old bytes, or the whole old object
// because this node's stat cache still holds the old version: the gateway
// asks the Backend to revalidate before it fails a precondition or serves
// a request that names an ETag other than the cached one.
func TestConditionalRevalidates(t *testing.T) {
	m := origintest.NewMemStore()
	old := m.Put("s3://bkt/obj", []byte("old version"))
	cur := m.Put("s3://bkt/obj", []byte("new version!"))
	if old.Version == cur.Version {
		t.Fatal("MemStore gave both versions one ETag")
	}
	be := &staleBackend{StoreBackend: StoreBackend{Store: m}, stale: old}
	gw, err := New(Config{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		stale    origin.Info // what Stat answers
		hdr      []string
		code     int
		body     string
		revalids int
	}{
		{"If-Match new", old, []string{"If-Match", quoteETag(cur.Version)}, 200, "new version!", 1},
		{"If-Match new, ranged", old, []string{"If-Match", quoteETag(cur.Version), "Range", "bytes=4-"}, 206, "version!", 1},
		{"If-Match other", old, []string{"If-Match", `"nope"`}, 412, "", 1},
		{"fresh, If-Match holds", cur, []string{"If-Match", quoteETag(cur.Version)}, 200, "new version!", 0},
		// If-None-Match with the new ETag: the client has the current
		// version, 304, not the old bytes with 200.
		{"If-None-Match new", old, []string{"If-None-Match", quoteETag(cur.Version)}, 304, "", 1},
		{"If-None-Match of the cached ETag", old, []string{"If-None-Match", quoteETag(old.Version)}, 304, "", 0},
		{"If-None-Match other", old, []string{"If-None-Match", `"nope"`}, 200, "new version!", 1},
		{"fresh, If-None-Match old", cur, []string{"If-None-Match", quoteETag(old.Version)}, 200, "new version!", 1},
		{"fresh, If-None-Match holds", cur, []string{"If-None-Match", quoteETag(cur.Version)}, 304, "", 0},
		{"If-None-Match *", old, []string{"If-None-Match", "*"}, 304, "", 0},
		// If-Range with the new ETag: the range of the new version, not the
		// whole old object.
		{"If-Range new", old, []string{"If-Range", quoteETag(cur.Version), "Range", "bytes=4-"}, 206, "version!", 1},
		{"fresh, If-Range holds", cur, []string{"If-Range", quoteETag(cur.Version), "Range", "bytes=4-"}, 206, "version!", 0},
		{"fresh, If-Range other", cur, []string{"If-Range", quoteETag(old.Version), "Range", "bytes=4-"}, 200, "new version!", 1},
		{"fresh, weak If-Range (never matches)", cur, []string{"If-Range", "W/" + quoteETag(old.Version), "Range", "bytes=4-"}, 200, "new version!", 0},
		{"fresh, If-Range without Range", cur, []string{"If-Range", quoteETag(old.Version)}, 200, "new version!", 0},
		{"fresh, no condition", cur, nil, 200, "new version!", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			be.revalidated, be.stale = 0, tc.stale
			r := httptest.NewRequest("GET", "/bkt/obj", nil)
			for i := 0; i+1 < len(tc.hdr); i += 2 {
				r.Header.Set(tc.hdr[i], tc.hdr[i+1])
			}
			w := httptest.NewRecorder()
			gw.ServeHTTP(w, r)
			if w.Code != tc.code {
				t.Fatalf("status %d, want %d (body %q)", w.Code, tc.code, w.Body)
			}
			if tc.body != "" && w.Body.String() != tc.body {
				t.Errorf("body %q, want %q", w.Body, tc.body)
			}
			if be.revalidated != tc.revalids {
				t.Errorf("Revalidate called %d times, want %d", be.revalidated, tc.revalids)
			}
		})
	}
}

// TestSetMetadata: user metadata becomes x-amz-meta-* headers; a name that
// is not a plain token (a space, a colon, a line break: metadata the
// origin keeps may come from anywhere) is left out, not written into the
// response.
func TestSetMetadata(t *testing.T) {
	h := http.Header{}
	setMetadata(h, map[string]string{
		"mtime": "1690000000.5", "Owner_Team.x": "etl", "": "empty",
		"bad name": "x", "bad:name": "x", "bad\r\nx-injected": "x", "é": "x",
	})
	want := http.Header{"X-Amz-Meta-Mtime": {"1690000000.5"}, "X-Amz-Meta-Owner_team.x": {"etl"}}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("headers %v, want %v", h, want)
	}
}
