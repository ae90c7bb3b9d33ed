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
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/origin"
)

// stallingBody answers the GETs that stall says with the headers of the
// range asked for and its first 100 bytes, then sends nothing more until
// the client goes away (a connection that stalls mid-body).
func stallingBody(f *fakeS3, stall func(n int) bool) func(w http.ResponseWriter, r *http.Request, n int) bool {
	return func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.Method != http.MethodGet || !stall(n) {
			return false
		}
		a, b, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("Range"), "bytes="), "-")
		start, _ := strconv.Atoi(a)
		end, _ := strconv.Atoi(b)
		w.Header().Set("ETag", f.etag)
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, len(f.data)))
		w.Header().Set("Content-Length", strconv.Itoa(end-start+1))
		w.WriteHeader(http.StatusPartialContent)
		w.Write(f.data[start : start+100])
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
		return true
	}
}

// TestS3StalledBodyIsResumed: a response body that stops arriving (the
// connection stays open, no bytes come) was waited on until the whole
// call's Timeout, and the read failed with ErrTimeout, although a new
// request would have been answered at once: ResponseHeaderTimeout bounds
// only the wait for headers, and ReadAt resumed only bodies that broke
// off. Now a body that sends nothing for ResponseHeaderTimeout is
// abandoned and resumed like a broken one.
func TestS3StalledBodyIsResumed(t *testing.T) {
	f := &fakeS3{}
	f.respond = stallingBody(f, func(n int) bool { return n == 1 })
	s, _ := newFake(t, f, func(c *origin.S3Config) {
		c.ResponseHeaderTimeout = 200 * time.Millisecond
		c.Timeout = 5 * time.Second
	})
	start := time.Now()
	p := make([]byte, 1000)
	n, err := s.ReadAt(context.Background(), "s3://bkt/key", f.etag, p, 0)
	elapsed := time.Since(start)
	if err != nil || n != 1000 || !bytes.Equal(p, f.data[:1000]) {
		t.Fatalf("ReadAt with the first body stalling = (%d, %v) after %s, want the 1000 bytes from a resumed request", n, err, elapsed)
	}
	if elapsed > 2*time.Second {
		t.Errorf("ReadAt took %s, want about ResponseHeaderTimeout (200ms) more than a plain read", elapsed)
	}
}

// TestS3BodyStallingEveryTimeTimesOut: a store whose bodies stall on every
// attempt is a hanging store: ErrTimeout (and context.DeadlineExceeded)
// after MaxAttempts stalls, as when every attempt waits past
// ResponseHeaderTimeout for headers, not after the whole Timeout.
func TestS3BodyStallingEveryTimeTimesOut(t *testing.T) {
	f := &fakeS3{}
	f.respond = stallingBody(f, func(int) bool { return true })
	s, _ := newFake(t, f, func(c *origin.S3Config) {
		c.ResponseHeaderTimeout = 200 * time.Millisecond
		c.Timeout = 10 * time.Second
		c.MaxAttempts = 3
	})
	start := time.Now()
	_, err := s.ReadAt(context.Background(), "s3://bkt/key", f.etag, make([]byte, 1000), 0)
	elapsed := time.Since(start)
	if !errors.Is(err, origin.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ReadAt = %v, want ErrTimeout and context.DeadlineExceeded", err)
	}
	if elapsed > 5*time.Second {
		t.Errorf("ReadAt gave up after %s, want about 3 stalls of 200ms", elapsed)
	}
	if got := f.requests.Load(); got != 3 {
		t.Errorf("%d requests, want MaxAttempts = 3", got)
	}
}
