// Regression tests for bugs a review found (2026-12-01): each test's
// comment describes the bug as it was before the fix.
package origin_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/locuscache/locus/pkg/origin"
)

// TestS3RedirectIsRejected: AWS answers 301 PermanentRedirect to a
// request sent to another region's endpoint than the bucket's (a wrong
// --origin-s3-region), and some stores answer 307 TemporaryRedirect. The
// error wrapped no sentinel, so the node answered INTERNAL and the
// gateway 500 "please try again", instead of ErrRejected, whose message
// names the region and endpoint flags (and the bucket's region when
// the store says it, as AWS does in x-amz-bucket-region).
func TestS3RedirectIsRejected(t *testing.T) {
	for _, tc := range []struct {
		status int
		code   string
	}{{http.StatusMovedPermanently, "PermanentRedirect"}, {http.StatusTemporaryRedirect, "TemporaryRedirect"}} {
		f := &fakeS3{}
		f.respond = func(w http.ResponseWriter, r *http.Request, n int) bool {
			w.Header().Set("x-amz-bucket-region", "eu-west-1")
			s3Error(w, tc.status, tc.code)
			return true
		}
		s, _ := newFake(t, f, nil)
		ctx := context.Background()
		if _, err := s.Stat(ctx, "s3://bkt/key"); !errors.Is(err, origin.ErrRejected) || !strings.Contains(err.Error(), "eu-west-1") {
			t.Errorf("Stat answered %d: %v, want ErrRejected naming the bucket's region (eu-west-1)", tc.status, err)
		}
		if _, err := s.ReadAt(ctx, "s3://bkt/key", f.etag, make([]byte, 10), 0); !errors.Is(err, origin.ErrRejected) {
			t.Errorf("ReadAt answered %d: %v, want ErrRejected", tc.status, err)
		}
		if err := s.List(ctx, "s3://bkt/", func(origin.Info) error { return nil }); !errors.Is(err, origin.ErrRejected) {
			t.Errorf("List answered %d: %v, want ErrRejected", tc.status, err)
		}
	}
}
