package gateway

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/locuscache/locus/internal/logtest"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

// TestUnsupportedCallsLogAtDebug: a client's call of an API the gateway
// does not serve (501 NotImplemented: ?tagging, ?acl, versionId) is the
// client's business, logged at Debug like other client errors, not at Warn
// where an operator looks for server trouble; a backend failure (503)
// still logs at Warn.
func TestUnsupportedCallsLogAtDebug(t *testing.T) {
	mem := origintest.NewMemStore()
	mem.Put("s3://b/k", []byte("data"))
	rec := &logtest.Recorder{}
	fb := &fakeBackend{StoreBackend: StoreBackend{Store: mem}}
	g, err := New(Config{Backend: fb, Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"/b/k?tagging", "/b/k?acl", "/b?versioning", "/b/k?versionId=abc"} {
		w := httptest.NewRecorder()
		g.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
		if w.Code != http.StatusNotImplemented {
			t.Fatalf("GET %s = %d, want 501", target, w.Code)
		}
	}
	fb.statErr = fmt.Errorf("origin down: %w", origin.ErrUnavailable)
	w := httptest.NewRecorder()
	g.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/b/k", nil))
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("GET with the origin down = %d, want 503", w.Code)
	}
	recs := rec.Records()
	if len(recs) != 5 {
		t.Fatalf("%d log records, want 5 (one per failed request)", len(recs))
	}
	for i, r := range recs {
		var status int64
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "status" {
				status = a.Value.Int64()
			}
			return true
		})
		want := slog.LevelDebug
		if status == http.StatusServiceUnavailable {
			want = slog.LevelWarn
		}
		if r.Level != want {
			t.Errorf("record %d (status %d) at %v, want %v", i, status, r.Level, want)
		}
	}
}
