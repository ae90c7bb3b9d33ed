package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/readpath"
)

type observedKey struct{}

// observation is one done call of an observingBackend.
type observation struct {
	status int
	sum    readpath.Summary
	err    error
}

// observingBackend is a fakeBackend that implements RequestObserver and
// checks that every Read of an observed request carries its context.
type observingBackend struct {
	*fakeBackend
	mu        sync.Mutex
	obs       []observation
	unmarked  int // Reads of a GET without the observed context
	observing int // requests started
}

func (b *observingBackend) ObserveRequest(ctx context.Context) (context.Context, func(int, readpath.Summary, error)) {
	b.mu.Lock()
	b.observing++
	b.mu.Unlock()
	return context.WithValue(ctx, observedKey{}, true), func(status int, sum readpath.Summary, err error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.obs = append(b.obs, observation{status, sum, err})
	}
}

func (b *observingBackend) Read(ctx context.Context, req readpath.Request, emit func([]byte) error) (readpath.Summary, error) {
	if ctx.Value(observedKey{}) == nil {
		b.mu.Lock()
		b.unmarked++
		b.mu.Unlock()
	}
	return b.fakeBackend.Read(ctx, req, emit)
}

// TestRequestObserverOncePerGET: a RequestObserver hears of every GET of
// an object exactly once, with the status sent, whatever happened: bytes,
// a 404 that made no Read, a 304, retries after version changes (three
// Reads, one observation), a response aborted mid-body (the handler
// panics with http.ErrAbortHandler). A HEAD is not observed.
func TestRequestObserverOncePerGET(t *testing.T) {
	mem := origintest.NewMemStore()
	data := testData(10000, 5)
	info := mem.Put("s3://b/k", data)
	cases := []struct {
		name      string
		method    string
		path      string
		hdr       []string
		setup     func(f *fakeBackend)
		status    int
		reads     int64
		errIs     error // nil: no error
		sumBytes  int64
		observed  bool
		wantPanic bool
	}{
		{name: "GET", method: "GET", path: "/b/k", status: 200, reads: 1, sumBytes: 10000, observed: true},
		{name: "GET missing", method: "GET", path: "/b/nope", status: 404, errIs: origin.ErrNotFound, observed: true},
		{name: "GET 304", method: "GET", path: "/b/k", hdr: []string{"If-None-Match", `"` + info.Version + `"`}, status: 304, observed: true},
		{name: "GET 412", method: "GET", path: "/b/k", hdr: []string{"If-Match", `"other"`}, status: 412, observed: true},
		{name: "GET version keeps changing", method: "GET", path: "/b/k",
			setup:  func(f *fakeBackend) { f.readErr = fmt.Errorf("test: %w", origin.ErrVersionChanged) },
			status: 0, reads: 3, errIs: origin.ErrVersionChanged, observed: true},
		{name: "GET aborted mid-body", method: "GET", path: "/b/k",
			setup:  func(f *fakeBackend) { f.failAfter = 100 },
			status: 200, reads: 1, errIs: errBroken, observed: true, wantPanic: true},
		{name: "HEAD", method: "HEAD", path: "/b/k", status: 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fb := &fakeBackend{StoreBackend: StoreBackend{Store: mem}}
			if tc.setup != nil {
				tc.setup(fb)
			}
			b := &observingBackend{fakeBackend: fb}
			g, err := New(Config{Backend: b})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(tc.method, tc.path, nil)
			for i := 0; i+1 < len(tc.hdr); i += 2 {
				req.Header.Set(tc.hdr[i], tc.hdr[i+1])
			}
			w := httptest.NewRecorder()
			panicked := func() (p bool) {
				defer func() {
					if r := recover(); r != nil {
						if r != http.ErrAbortHandler {
							panic(r)
						}
						p = true
					}
				}()
				g.ServeHTTP(w, req)
				return false
			}()
			if panicked != tc.wantPanic {
				t.Fatalf("aborted: %v, want %v", panicked, tc.wantPanic)
			}
			if got := fb.reads.Load(); got != tc.reads {
				t.Errorf("%d Reads, want %d", got, tc.reads)
			}
			if b.unmarked != 0 {
				t.Errorf("%d Reads without the observed request's context", b.unmarked)
			}
			if !tc.observed {
				if b.observing != 0 || len(b.obs) != 0 {
					t.Errorf("observed %d times: %+v", b.observing, b.obs)
				}
				return
			}
			if b.observing != 1 || len(b.obs) != 1 {
				t.Fatalf("ObserveRequest %d times, done %d times (%+v), want once each", b.observing, len(b.obs), b.obs)
			}
			o := b.obs[0]
			wantStatus := tc.status
			if wantStatus == 0 {
				wantStatus = w.Code
			}
			if o.status != wantStatus {
				t.Errorf("done status %d, want %d", o.status, wantStatus)
			}
			if (tc.errIs == nil) != (o.err == nil) || (tc.errIs != nil && !errors.Is(o.err, tc.errIs)) {
				t.Errorf("done err %v, want one wrapping %v", o.err, tc.errIs)
			}
			if o.sum.Bytes != tc.sumBytes && !tc.wantPanic {
				t.Errorf("done summary %d bytes, want %d", o.sum.Bytes, tc.sumBytes)
			}
		})
	}
}

// TestRequestObserverClientGone: a client that went away before any answer
// is reported with status 0 and an error wrapping context.Canceled.
func TestRequestObserverClientGone(t *testing.T) {
	mem := origintest.NewMemStore()
	mem.Put("s3://b/k", testData(100, 6))
	fb := &fakeBackend{StoreBackend: StoreBackend{Store: mem}}
	b := &observingBackend{fakeBackend: fb}
	g, err := New(Config{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fb.statErr = ctx.Err()
	w := httptest.NewRecorder()
	g.ServeHTTP(w, httptest.NewRequest("GET", "/b/k", nil).WithContext(ctx))
	if len(b.obs) != 1 || b.obs[0].status != 0 || !errors.Is(b.obs[0].err, context.Canceled) {
		t.Fatalf("observations %+v, want one with status 0 and context.Canceled", b.obs)
	}
}
