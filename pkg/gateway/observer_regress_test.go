package gateway

// Regression tests for what a review of f6607b9 (RequestObserver, 501 at
// Debug) found; each failed before its fix.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/locuscache/locus/internal/logtest"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/readpath"
)

// TestUnsupportedSchemeStillWarns: f6607b9 moved every 501 to Debug
// so that clients probing ?tagging or ?acl do not bury an operator's
// warnings. But the gateway also answers 501 when the node has no origin
// store for a bucket's URI scheme (errorFor on origin.ErrUnsupportedScheme:
// "This cache node has no origin store for the bucket's URI scheme"), e.g.
// --gateway-bucket local=file:///data/ on a node started without a file
// root. That is the operator's misconfiguration, not a client's call of an
// API the gateway does not serve: every GET of the bucket fails, and after
// f6607b9 nothing reached the log at the default level (Info), where
// before it was a Warn. Neither gateway.New nor the daemon checks a
// mapping's scheme against the Backend's stores, so the log is the only
// signal. Expected: only the NotImplemented answers for unsupported APIs
// (the subresource checks in ServeHTTP, the versionId check) log at Debug; a 501
// from a Backend error stays at Warn.
//
// Fixed: fail logs a 501 at Debug only when the gateway decided it itself
// (no cause); a 501 from a Backend error stays at Warn.
func TestUnsupportedSchemeStillWarns(t *testing.T) {
	s3only, err := origin.NewRouter(map[string]origin.Store{"s3": origintest.NewMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	rec := &logtest.Recorder{}
	g, err := New(Config{
		Backend: StoreBackend{Store: s3only},
		Buckets: map[string]string{"local": "file:///data/"},
		Logger:  slog.New(rec),
	})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	g.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/local/part-0.parquet", nil))
	if w.Code != http.StatusNotImplemented {
		t.Fatalf("GET of a bucket mapped to a scheme the store lacks = %d, want 501 (test setup)", w.Code)
	}
	recs := rec.Records()
	if len(recs) != 1 {
		t.Fatalf("%d log records, want 1", len(recs))
	}
	if got := recs[0].Level; got != slog.LevelWarn {
		t.Errorf("a 501 caused by the node's missing origin store for file:// logged at %v, want WARN: "+
			"it is a server misconfiguration that fails every request of the bucket", got)
	}
}

// panickingBackend is an observingBackend whose Read panics (with an
// ordinary value, as a nil dereference or an index out of range would)
// after emitting after bytes.
type panickingBackend struct {
	*observingBackend
	after int
}

func (b *panickingBackend) Read(ctx context.Context, req readpath.Request, emit func([]byte) error) (readpath.Summary, error) {
	if b.after > 0 {
		if err := emit(make([]byte, b.after)); err != nil {
			return readpath.Summary{}, err
		}
	}
	panic("backend bug")
}

// TestBackendPanicIsNotReportedAsSuccess: when the Backend's Read
// panics (a bug in the read path: net/http recovers it, logs it and closes
// the connection, so the client gets a truncated body or no answer), the
// deferred done reported it as a success (status 200, err nil, so the node
// records locus_reads_total{code="OK"}) when headers were out, and as the
// client going away (status 0, context.Canceled) when they were not. The
// RequestObserver contract (config.go) says err is "the error that ended
// the request", and status 0 means "the client went away first": neither
// holds. A crashing read path then shows on dashboards as healthy reads or
// as impatient clients, which is exactly when an operator needs the error
// rate. Expected: done gets a non-nil error that is not context.Canceled
// (the node would record Internal or Unknown).
//
// Fixed: observe's deferred function recovers a panic other than
// http.ErrAbortHandler, reports it to done as an error, and panics again
// with the same value so net/http still logs and aborts.
func TestBackendPanicIsNotReportedAsSuccess(t *testing.T) {
	mem := origintest.NewMemStore()
	mem.Put("s3://b/k", testData(1000, 1))
	for _, after := range []int{0, 10} {
		fb := &fakeBackend{StoreBackend: StoreBackend{Store: mem}}
		b := &panickingBackend{observingBackend: &observingBackend{fakeBackend: fb}, after: after}
		g, err := New(Config{Backend: b})
		if err != nil {
			t.Fatal(err)
		}
		var recovered any
		func() {
			defer func() { recovered = recover() }()
			g.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/b/k", nil))
		}()
		if recovered != "backend bug" {
			t.Fatalf("after %d bytes: recovered %v, want the Backend's panic passed on", after, recovered)
		}
		if len(b.obs) != 1 {
			t.Fatalf("after %d bytes: %d observations, want 1", after, len(b.obs))
		}
		o := b.obs[0]
		if o.err == nil || errors.Is(o.err, context.Canceled) {
			t.Errorf("Read panicked after %d bytes: done(status %d, err %v): reported as %s, want an error that is not context.Canceled",
				after, o.status, o.err, map[bool]string{true: "a success", false: "the client going away"}[o.err == nil])
		}
	}
}

// TestNoETagIsNotRetryable: an origin object without an ETag (which the
// cache cannot version) was answered 500 InternalError, which S3 clients
// retry (the aws CLI four times) although retrying cannot help. It is a
// 501 NotImplemented naming the missing ETag, logged at Warn (the
// operator's to fix).
func TestNoETagIsNotRetryable(t *testing.T) {
	e := errorFor(fmt.Errorf("stat s3://b/k: %w", origin.ErrNoVersion), "b", "k")
	if e.Status != http.StatusNotImplemented || !strings.Contains(e.Message, "without an ETag") {
		t.Errorf("errorFor(ErrNoVersion) = %d %s %q; want 501 naming the missing ETag", e.Status, e.Code, e.Message)
	}
}
