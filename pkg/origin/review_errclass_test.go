// Regression tests for bugs a review found (2026-12-01): each test's
// comment describes the bug as it was before the fix.
package origin_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/origin"
)

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
