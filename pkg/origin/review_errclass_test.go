// Regression tests for bugs a review found (2026-12-01): each test's
// comment describes the bug as it was before the fix.
package origin_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/origin"
)

// Every attempt hangs past ResponseHeaderTimeout (100ms) and MaxAttempts
// (2) runs out long before the call's Timeout (5s). The store "kept failing
// for every allowed attempt": ErrUnavailable by errors.go's contract. The
// per-attempt header timeout is a net error with Timeout() == true, which
// mapErr tests before retry exhaustion, so the call reports ErrTimeout
// (and context.DeadlineExceeded) although no deadline of the caller or of
// S3Config.Timeout expired.
func TestS3HeaderTimeoutsExhaustedAreUnavailable(t *testing.T) {
	release := make(chan struct{})
	f := &fakeS3{}
	f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return true
	}
	s, srv := newFake(t, f, func(c *origin.S3Config) {
		c.MaxAttempts = 2
		c.ResponseHeaderTimeout = 100 * time.Millisecond
		c.Timeout = 5 * time.Second
	})
	defer func() { close(release); srv.CloseClientConnections() }()
	start := time.Now()
	_, err := s.Stat(context.Background(), "s3://bkt/key")
	elapsed := time.Since(start)
	if elapsed > 3*time.Second {
		t.Fatalf("took %s", elapsed)
	}
	if !errors.Is(err, origin.ErrUnavailable) || errors.Is(err, origin.ErrTimeout) {
		t.Fatalf("after %s (Timeout 5s), err = %v; want ErrUnavailable, not ErrTimeout", elapsed, err)
	}
}

// S3Config says the SDK's retry quota makes the store "fail fast" when most
// requests fail. Once the quota is spent, the SDK returns
// errors.Join(lastErr, quotaErr), not a MaxAttemptsError; for a broken
// connection (no HTTP status, not a timeout) mapErr then wraps no sentinel
// at all, so the caller cannot tell a down store (ErrUnavailable) from a
// bug.
func TestS3RetryQuotaExhaustedIsUnavailable(t *testing.T) {
	srv := newClosedEndpoint(t)
	s, err := origin.NewS3Store(context.Background(), origin.S3Config{
		Endpoint: srv, Region: "us-east-1", PathStyle: true,
		AccessKeyID: "k", SecretAccessKey: "s",
		MaxAttempts: 3, BaseBackoff: time.Microsecond, MaxBackoff: time.Microsecond,
		Timeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 60; i++ {
		_, err := s.Stat(context.Background(), "s3://bkt/key")
		if !errors.Is(err, origin.ErrUnavailable) {
			t.Fatalf("call %d against a closed port: err = %v; want ErrUnavailable", i+1, err)
		}
	}
}

func newClosedEndpoint(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}
