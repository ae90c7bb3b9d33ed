package scheduler_test

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/testcert"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// TestHTTPServerErrorsLogged: the HTTP listener's own errors (a TLS
// handshake that fails) go to Config.Logger at Warn, as the cache node's
// do, except a connection closed before its TLS hello (kubelet's TCP
// probes under mTLS), which is Debug. Was: net/http's default logger, a
// plain-text line on stderr for each, even with --log-format json, so a
// JSON log pipeline got lines it could not parse, one for every probe.
func TestHTTPServerErrorsLogged(t *testing.T) {
	ca := testcert.NewCA(t)
	certPEM, keyPEM := ca.Leaf(t, 2, time.Now().Add(24*time.Hour))
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	rec := &levelRecorder{}
	s := schedulertest.Start(t, scheduler.Config{
		Membership: schedulertest.NewViews(t), Logger: slog.New(rec),
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool, MinVersion: tls.VersionTLS12},
	})
	for range 3 {
		conn, err := net.Dial("tcp", s.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
	noCert := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}}}
	if resp, err := noCert.Get("https://" + s.HTTPAddr() + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatalf("HTTPS without a client certificate answered %d", resp.StatusCode)
	}
	rec.waitFor(t, slog.LevelWarn, "TLS handshake error")
	for _, m := range rec.at(slog.LevelWarn) {
		if strings.HasSuffix(m, ": EOF") {
			t.Errorf("a TCP probe logged at Warn: %q", m)
		}
	}
}

// levelRecorder is a slog.Handler that keeps every record's level and
// message (Debug included).
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

// at returns the messages logged at level.
func (h *levelRecorder) at(level slog.Level) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.recs {
		if r.Level == level {
			out = append(out, r.Message)
		}
	}
	return out
}

// waitFor waits up to 5 s for a message at level containing s.
func (h *levelRecorder) waitFor(t *testing.T, level slog.Level, s string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		for _, m := range h.at(level) {
			if strings.Contains(m, s) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %v message containing %q; logged at that level: %q", level, s, h.at(level))
		}
	}
}
