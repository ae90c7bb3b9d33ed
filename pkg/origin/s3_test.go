package origin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/origin"
)

// fakeS3 is a scripted S3 endpoint (path style) for failure-mode tests
// that a real server cannot be made to produce on demand.
type fakeS3 struct {
	data []byte
	etag string
	// respond, if set, runs before the normal handler; returning true
	// means it answered. n counts requests, from 1.
	respond func(w http.ResponseWriter, r *http.Request, n int) bool

	requests atomic.Int32
	mu       sync.Mutex // guards ifMatch
	ifMatch  []string   // If-Match of each GET
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(f.requests.Add(1))
	if r.Method == http.MethodGet {
		f.mu.Lock()
		f.ifMatch = append(f.ifMatch, r.Header.Get("If-Match"))
		f.mu.Unlock()
	}
	if f.respond != nil && f.respond(w, r, n) {
		return
	}
	if r.URL.Path != "/bkt/key" {
		s3Error(w, http.StatusNotFound, "NoSuchKey")
		return
	}
	if im := r.Header.Get("If-Match"); im != "" && im != f.etag {
		s3Error(w, http.StatusPreconditionFailed, "PreconditionFailed")
		return
	}
	w.Header().Set("ETag", f.etag)
	w.Header().Set("Last-Modified", "Mon, 02 Jan 2006 15:04:05 GMT")
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
		return
	}
	start, end := int64(0), int64(len(f.data))-1
	if rg := r.Header.Get("Range"); rg != "" {
		a, b, _ := strings.Cut(strings.TrimPrefix(rg, "bytes="), "-")
		start, _ = strconv.ParseInt(a, 10, 64)
		end, _ = strconv.ParseInt(b, 10, 64)
		if start >= int64(len(f.data)) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(f.data)))
			s3Error(w, http.StatusRequestedRangeNotSatisfiable, "InvalidRange")
			return
		}
		end = min(end, int64(len(f.data))-1)
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, len(f.data)))
		w.Header().Set("Content-Length", strconv.FormatInt(end-start+1, 10))
		w.WriteHeader(http.StatusPartialContent)
	}
	w.Write(f.data[start : end+1])
}

func s3Error(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>scripted</Message></Error>`, code)
}

func newFake(t *testing.T, f *fakeS3, mutate func(*origin.S3Config)) (*origin.S3Store, *httptest.Server) {
	t.Helper()
	if f.data == nil {
		f.data = randomBytes(7, 10000)
	}
	if f.etag == "" {
		f.etag = `"etag-1"`
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg := origin.S3Config{
		Endpoint: srv.URL, Region: "us-east-1", PathStyle: true,
		AccessKeyID: "k", SecretAccessKey: "s",
		MaxAttempts: 4, BaseBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
		Timeout: 5 * time.Second,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := origin.NewS3Store(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, srv
}

func TestS3RetriesServerErrorsThenSucceeds(t *testing.T) {
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusInternalServerError, http.StatusBadGateway} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			f := &fakeS3{}
			f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
				if n <= 2 {
					s3Error(w, status, "ServiceUnavailable")
					return true
				}
				return false
			}
			var attempts []int
			var mu sync.Mutex
			s, _ := newFake(t, f, func(c *origin.S3Config) {
				c.Observe = func(a origin.Attempt) { mu.Lock(); attempts = append(attempts, a.Status); mu.Unlock() }
			})
			p := make([]byte, 100)
			n, err := s.ReadAt(context.Background(), "s3://bkt/key", `"etag-1"`, p, 50)
			if err != nil || n != 100 || !bytes.Equal(p, f.data[50:150]) {
				t.Fatalf("ReadAt = (%d, %v), want 100 bytes after two retries", n, err)
			}
			if got := f.requests.Load(); got != 3 {
				t.Errorf("server saw %d requests, want 3", got)
			}
			want := fmt.Sprint([]int{status, status, 206})
			if fmt.Sprint(attempts) != want {
				t.Errorf("observed attempts %v, want %s", attempts, want)
			}
		})
	}
}

func TestS3ThrottlingIsRetried(t *testing.T) {
	f := &fakeS3{}
	f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if n == 1 {
			s3Error(w, http.StatusServiceUnavailable, "SlowDown")
			return true
		}
		return false
	}
	s, _ := newFake(t, f, nil)
	if _, err := s.Stat(context.Background(), "s3://bkt/key"); err != nil {
		t.Fatalf("Stat after one SlowDown: %v", err)
	}
	if got := f.requests.Load(); got != 2 {
		t.Errorf("server saw %d requests, want 2", got)
	}
}

func TestS3GivesUpAfterMaxAttempts(t *testing.T) {
	f := &fakeS3{}
	f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		s3Error(w, http.StatusInternalServerError, "InternalError")
		return true
	}
	s, _ := newFake(t, f, func(c *origin.S3Config) { c.MaxAttempts = 3; c.Timeout = 2 * time.Second })
	start := time.Now()
	_, err := s.ReadAt(context.Background(), "s3://bkt/key", `"etag-1"`, make([]byte, 10), 0)
	elapsed := time.Since(start)
	if !errors.Is(err, origin.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "3") || !strings.Contains(err.Error(), "500") {
		t.Errorf("error %q should name the attempts (3) and the status (500)", err)
	}
	if got := f.requests.Load(); got != 3 {
		t.Errorf("server saw %d requests, want exactly MaxAttempts = 3", got)
	}
	if elapsed > 2*time.Second {
		t.Errorf("gave up after %s, beyond the 2s timeout", elapsed)
	}
}

func TestS3SlowServerTimesOut(t *testing.T) {
	release := make(chan struct{})
	f := &fakeS3{}
	f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return true
	}
	s, srv := newFake(t, f, func(c *origin.S3Config) { c.Timeout = 300 * time.Millisecond })
	defer func() { close(release); srv.CloseClientConnections() }()
	for _, op := range []string{"stat", "read", "list"} {
		start := time.Now()
		var err error
		switch op {
		case "stat":
			_, err = s.Stat(context.Background(), "s3://bkt/key")
		case "read":
			_, err = s.ReadAt(context.Background(), "s3://bkt/key", `"etag-1"`, make([]byte, 10), 0)
		case "list":
			err = s.List(context.Background(), "s3://bkt/", func(origin.Info) error { return nil })
		}
		elapsed := time.Since(start)
		if !errors.Is(err, origin.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: err = %v, want ErrTimeout and context.DeadlineExceeded", op, err)
		}
		if elapsed < 250*time.Millisecond || elapsed > 3*time.Second {
			t.Errorf("%s: returned after %s, want about the 300ms timeout", op, elapsed)
		}
	}
}

func TestS3SlowHeadersRetriedPerAttempt(t *testing.T) {
	// The first attempt hangs past ResponseHeaderTimeout; the second
	// answers. The read succeeds within the overall Timeout.
	release := make(chan struct{})
	defer close(release)
	f := &fakeS3{}
	f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if n == 1 {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return true
		}
		return false
	}
	s, _ := newFake(t, f, func(c *origin.S3Config) { c.ResponseHeaderTimeout = 100 * time.Millisecond })
	p := make([]byte, 10)
	if _, err := s.ReadAt(context.Background(), "s3://bkt/key", `"etag-1"`, p, 0); err != nil {
		t.Fatalf("ReadAt = %v, want success on the second attempt", err)
	}
}

func TestS3CallerCancellationIsNotATimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	f := &fakeS3{}
	f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return true
	}
	s, _ := newFake(t, f, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := s.Stat(ctx, "s3://bkt/key")
	if !errors.Is(err, context.Canceled) || errors.Is(err, origin.ErrTimeout) {
		t.Fatalf("err = %v, want context.Canceled and not ErrTimeout", err)
	}
}

func TestS3StatusMapping(t *testing.T) {
	cases := []struct {
		status int
		code   string
		want   error
	}{
		{404, "NoSuchKey", origin.ErrNotFound},
		{404, "NoSuchBucket", origin.ErrBucketNotFound},
		{412, "PreconditionFailed", origin.ErrVersionChanged},
		{403, "AccessDenied", origin.ErrAccessDenied},
		{403, "SignatureDoesNotMatch", origin.ErrAccessDenied},
		{429, "TooManyRequests", origin.ErrUnavailable},
		{503, "SlowDown", origin.ErrUnavailable},
		{400, "InvalidArgument", origin.ErrRejected},
		{400, "AuthorizationHeaderMalformed", origin.ErrRejected},
		{405, "MethodNotAllowed", origin.ErrRejected},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d-%s", tc.status, tc.code), func(t *testing.T) {
			f := &fakeS3{}
			f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
				s3Error(w, tc.status, tc.code)
				return true
			}
			s, _ := newFake(t, f, func(c *origin.S3Config) { c.MaxAttempts = 2 })
			_, err := s.ReadAt(context.Background(), "s3://bkt/key", `"etag-1"`, make([]byte, 10), 0)
			if !errors.Is(err, tc.want) {
				t.Fatalf("GET answered %d %s: err = %v, want %v", tc.status, tc.code, err, tc.want)
			}
		})
	}
}

func TestS3ReadSendsIfMatchAndChecksETag(t *testing.T) {
	f := &fakeS3{}
	s, _ := newFake(t, f, nil)
	p := make([]byte, 10)
	// Unquoted versions are normalised to the quoted form S3 expects.
	if _, err := s.ReadAt(context.Background(), "s3://bkt/key", "etag-1", p, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadAt(context.Background(), "s3://bkt/key", `"etag-0"`, p, 0); !errors.Is(err, origin.ErrVersionChanged) {
		t.Fatalf("stale ETag: err = %v, want ErrVersionChanged", err)
	}
	f.mu.Lock()
	got := fmt.Sprint(f.ifMatch)
	f.mu.Unlock()
	if got != `["etag-1" "etag-0"]` {
		t.Errorf("If-Match headers sent = %s", got)
	}

	// A server that ignores If-Match: the response ETag check still
	// refuses the bytes.
	ignoring := &fakeS3{etag: `"new"`}
	ignoring.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		r.Header.Del("If-Match")
		ignoring.respond = nil
		ignoring.ServeHTTP(w, r)
		return true
	}
	s2, _ := newFake(t, ignoring, nil)
	n, err := s2.ReadAt(context.Background(), "s3://bkt/key", `"old"`, p, 0)
	if !errors.Is(err, origin.ErrVersionChanged) || n != 0 {
		t.Fatalf("server ignoring If-Match: (%d, %v), want (0, ErrVersionChanged)", n, err)
	}
}

func TestS3TruncatedBodyIsResumedNotReturned(t *testing.T) {
	f := &fakeS3{data: randomBytes(9, 5000)}
	f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if n != 1 {
			return false
		}
		// Promise 1000 bytes, send 300, then drop the connection.
		w.Header().Set("ETag", f.etag)
		w.Header().Set("Content-Range", "bytes 0-999/5000")
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusPartialContent)
		w.Write(f.data[:300])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	s, _ := newFake(t, f, nil)
	p := make([]byte, 1000)
	n, err := s.ReadAt(context.Background(), "s3://bkt/key", f.etag, p, 0)
	if err != nil || n != 1000 || !bytes.Equal(p, f.data[:1000]) {
		t.Fatalf("ReadAt = (%d, %v), want the 1000 bytes after resuming", n, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ifMatch) != 2 || f.ifMatch[1] != f.etag {
		t.Errorf("resume requests carried If-Match %v, want 2 requests with %s", f.ifMatch, f.etag)
	}
}

func TestS3TruncatedBodyEveryTimeFails(t *testing.T) {
	f := &fakeS3{data: randomBytes(9, 5000)}
	f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		w.Header().Set("ETag", f.etag)
		w.Header().Set("Content-Range", "bytes 0-999/5000")
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusPartialContent)
		panic(http.ErrAbortHandler) // no body at all
	}
	s, _ := newFake(t, f, func(c *origin.S3Config) { c.MaxAttempts = 2 })
	_, err := s.ReadAt(context.Background(), "s3://bkt/key", f.etag, make([]byte, 1000), 0)
	if !errors.Is(err, origin.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable after the body broke off on every attempt", err)
	}
}

func TestS3ServerIgnoringRange(t *testing.T) {
	f := &fakeS3{data: randomBytes(10, 3000)}
	f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.Method != http.MethodGet {
			return false
		}
		w.Header().Set("ETag", f.etag)
		w.Header().Set("Content-Length", "3000")
		w.Write(f.data) // 200 with the whole object
		return true
	}
	s, _ := newFake(t, f, nil)
	p := make([]byte, 500)
	n, err := s.ReadAt(context.Background(), "s3://bkt/key", f.etag, p, 2800)
	if n != 200 || err != io.EOF || !bytes.Equal(p[:n], f.data[2800:]) {
		t.Fatalf("ReadAt(2800) = (%d, %v), want (200, EOF) with the right bytes", n, err)
	}
}

func TestS3NoETagIsAnError(t *testing.T) {
	f := &fakeS3{}
	f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		w.Header().Set("Content-Length", "10")
		return true
	}
	s, _ := newFake(t, f, nil)
	if _, err := s.Stat(context.Background(), "s3://bkt/key"); !errors.Is(err, origin.ErrNoVersion) {
		t.Fatalf("Stat without ETag: %v, want ErrNoVersion", err)
	}
}

func TestS3BadURIs(t *testing.T) {
	s, _ := newFake(t, &fakeS3{}, nil)
	ctx := context.Background()
	for _, uri := range []string{"s3://bkt/", "s3://bkt", "file:///x", "s3://b/k", "nonsense"} {
		if _, err := s.Stat(ctx, uri); err == nil {
			t.Errorf("Stat(%q) succeeded", uri)
		}
	}
	if _, err := s.ReadAt(ctx, "s3://bkt/key", "", make([]byte, 1), -1); !errors.Is(err, origin.ErrRange) {
		t.Errorf("negative offset: %v, want ErrRange", err)
	}
}

func TestS3ConfigValidate(t *testing.T) {
	bad := []origin.S3Config{
		{MaxAttempts: -1},
		{Timeout: -time.Second},
		{BaseBackoff: time.Second, MaxBackoff: time.Millisecond},
		{AccessKeyID: "a"},
		{SecretAccessKey: "s"},
		{Endpoint: "127.0.0.1:9000"},
	}
	for _, cfg := range bad {
		if _, err := origin.NewS3Store(context.Background(), cfg); err == nil {
			t.Errorf("NewS3Store(%+v) succeeded, want a validation error", cfg)
		}
	}
}

func TestParseContentRangeViaShortObject(t *testing.T) {
	// An object shorter than the buffer: Content-Range bounds the read
	// and the result is (n, io.EOF).
	f := &fakeS3{data: []byte("hello")}
	s, _ := newFake(t, f, nil)
	p := make([]byte, 100)
	n, err := s.ReadAt(context.Background(), "s3://bkt/key", f.etag, p, 1)
	if n != 4 || err != io.EOF || string(p[:4]) != "ello" {
		t.Fatalf("ReadAt = (%d, %v, %q), want (4, EOF, ello)", n, err, p[:n])
	}
	n, err = s.ReadAt(context.Background(), "s3://bkt/key", f.etag, p, 5)
	if n != 0 || err != io.EOF {
		t.Fatalf("ReadAt at the end = (%d, %v), want (0, EOF)", n, err)
	}
}

func TestS3StoreCappingRangesIsReadInPieces(t *testing.T) {
	f := &fakeS3{data: randomBytes(11, 5000)}
	f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.Method != http.MethodGet {
			return false
		}
		// Serve at most 1000 bytes of any range, as some stores do.
		a, _, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("Range"), "bytes="), "-")
		start, _ := strconv.Atoi(a)
		end := min(start+999, len(f.data)-1)
		w.Header().Set("ETag", f.etag)
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, len(f.data)))
		w.Header().Set("Content-Length", strconv.Itoa(end-start+1))
		w.WriteHeader(http.StatusPartialContent)
		w.Write(f.data[start : end+1])
		return true
	}
	s, _ := newFake(t, f, func(c *origin.S3Config) { c.MaxAttempts = 1 })
	p := make([]byte, 3500)
	n, err := s.ReadAt(context.Background(), "s3://bkt/key", f.etag, p, 100)
	if n != 3500 || err != nil || !bytes.Equal(p, f.data[100:3600]) {
		t.Fatalf("ReadAt = (%d, %v), want all 3500 bytes in 4 requests", n, err)
	}
	if got := f.requests.Load(); got != 4 {
		t.Errorf("%d requests, want 4", got)
	}
	p = make([]byte, 3000)
	n, err = s.ReadAt(context.Background(), "s3://bkt/key", f.etag, p, 4000)
	if n != 1000 || err != io.EOF {
		t.Fatalf("ReadAt at the tail = (%d, %v), want (1000, EOF)", n, err)
	}
}
