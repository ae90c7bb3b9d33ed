package scheduler

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/testcert"
)

// TestForwardTransportFollowsClientTLSFor: the transport a follower
// forwards to the leader with takes its TLS configuration from
// Config.ClientTLSFor at each new connection (cmd/scheduler: the --tls-ca
// bundle as it is then), and checks the leader's name from the address it
// dials (an IP here). A leader whose certificate comes from a CA the
// bundle did not hold is refused, then served once the bundle holds it.
func TestForwardTransportFollowsClientTLSFor(t *testing.T) {
	old, next := testcert.NewCA(t), testcert.NewCA(t)
	certPEM, keyPEM := next.Leaf(t, 5, time.Now().Add(time.Hour))
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	leader := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	leader.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	leader.StartTLS()
	defer leader.Close()
	var roots atomic.Pointer[x509.CertPool]
	roots.Store(old.Pool)
	s := &Scheduler{cfg: Config{
		ClientTLS:    &tls.Config{RootCAs: old.Pool},
		ClientTLSFor: func() *tls.Config { return &tls.Config{RootCAs: roots.Load(), MinVersion: tls.VersionTLS12} },
	}}
	c := &http.Client{Transport: s.forwardTransport(), Timeout: 5 * time.Second}
	if resp, err := c.Get(leader.URL); err == nil {
		resp.Body.Close()
		t.Fatal("a leader certificate of a CA outside the bundle was accepted")
	}
	roots.Store(next.Pool)
	resp, err := c.Get(leader.URL)
	if err != nil {
		t.Fatalf("after the bundle took the leader's CA: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// TestForwardDialTimesOut: a leader address that accepts connections but
// never answers the TLS handshake fails the forwarded request within the
// dial timeout (DialTLSContext is not covered by the transport's
// TLSHandshakeTimeout).
func TestForwardDialTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent
		}
	}()
	defer func(d time.Duration) { forwardDialTimeout = d }(forwardDialTimeout)
	forwardDialTimeout = 300 * time.Millisecond
	ca := testcert.NewCA(t)
	s := &Scheduler{cfg: Config{ClientTLSFor: func() *tls.Config { return &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12} }}}
	c := &http.Client{Transport: s.forwardTransport()} // no client timeout: the dial's must end it
	start := time.Now()
	if resp, err := c.Get("https://" + ln.Addr().String() + "/"); err == nil {
		resp.Body.Close()
		t.Fatal("a silent leader answered")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the forwarded request failed after %v, want about the dial timeout (300ms)", d)
	}
}
