package scheduler_test

import (
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/logtest"
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
	rec := &logtest.Recorder{}
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
	rec.WaitFor(t, slog.LevelWarn, "TLS handshake error")
	for _, m := range rec.At(slog.LevelWarn) {
		if strings.HasSuffix(m, ": EOF") {
			t.Errorf("a TCP probe logged at Warn: %q", m)
		}
	}
}
