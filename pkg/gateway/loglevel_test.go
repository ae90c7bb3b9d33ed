package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

// levelRecorder is a slog.Handler that keeps the level and status of each
// record.
type levelRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *levelRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r)
	return nil
}
func (h *levelRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *levelRecorder) WithGroup(string) slog.Handler      { return h }

// TestUnsupportedCallsLogAtDebug: a client's call of an API the gateway
// does not serve (501 NotImplemented: ?tagging, ?acl, versionId) is the
// client's business, logged at Debug like other client errors, not at Warn
// where an operator looks for server trouble; a backend failure (503)
// still logs at Warn.
func TestUnsupportedCallsLogAtDebug(t *testing.T) {
	mem := origintest.NewMemStore()
	mem.Put("s3://b/k", []byte("data"))
	rec := &levelRecorder{}
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
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.recs) != 5 {
		t.Fatalf("%d log records, want 5 (one per failed request)", len(rec.recs))
	}
	for i, r := range rec.recs {
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
