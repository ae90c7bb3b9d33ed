package tlsreload

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/testcert"
)

// replace writes data to path as Kubernetes updates a mounted Secret: a
// new file renamed over the old one.
func replace(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// serveHandshakes listens on loopback with cfg and, for each connection,
// handshakes and calls done with the connection and the handshake's error.
// The listener closes when the test ends.
func serveHandshakes(t *testing.T, cfg *tls.Config, done func(*tls.Conn, error)) net.Listener {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				done(tc, tc.Handshake())
			}()
		}
	}()
	return ln
}

type files struct{ cert, key string }

// issuePair writes a certificate of ca (serial, expiry exp) and its key
// into a new directory and loads them, checked at every call.
func issuePair(t *testing.T, ca *testcert.CA, serial int64, exp time.Time) (files, *Pair) {
	t.Helper()
	c, k := ca.Leaf(t, serial, exp)
	f := writePair(t, t.TempDir(), c, k)
	p, err := Load(f.cert, f.key, nil, WithInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	return f, p
}

func writePair(t *testing.T, dir string, c, k []byte) files {
	f := files{filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")}
	replace(t, f.cert, c)
	replace(t, f.key, k)
	return f
}

func serial(c *tls.Certificate) int64 { return c.Leaf.SerialNumber.Int64() }

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestReloadsChangedFiles: a new pair is served once the check interval
// has passed, not before; a pair that does not load (garbage, or a key
// that does not match its certificate, as between the two writes of a
// rotation) keeps the old one, and the next good pair is taken.
func TestReloadsChangedFiles(t *testing.T) {
	is := testcert.NewCA(t)
	dir := t.TempDir()
	exp := time.Now().Add(20 * 24 * time.Hour)
	c2, k2 := is.Leaf(t, 2, exp)
	f := writePair(t, dir, c2, k2)
	clock := &fakeClock{t: time.Now()}
	var logs bytes.Buffer
	p, err := Load(f.cert, f.key, slog.New(slog.NewTextHandler(&logs, nil)), WithClock(clock.now))
	if err != nil {
		t.Fatal(err)
	}
	if got := serial(p.Certificate()); got != 2 {
		t.Fatalf("serial %d, want 2", got)
	}

	c3, k3 := is.Leaf(t, 3, exp)
	writePair(t, dir, c3, k3)
	if got := serial(p.Certificate()); got != 2 {
		t.Errorf("serial %d before the check interval passed, want 2 (no stat on every handshake)", got)
	}
	clock.add(DefaultInterval)
	if got := serial(p.Certificate()); got != 3 {
		t.Fatalf("serial %d after the files changed and the interval passed, want 3", got)
	}
	if !strings.Contains(logs.String(), "TLS certificate reloaded") {
		t.Errorf("no reload logged:\n%s", logs.String())
	}

	steps := []struct {
		name       string
		cert, key  []byte
		wantSerial int64
	}{
		{"garbage certificate", []byte("not a certificate"), k3, 3},
		{"certificate 4 with key 3", nil, k3, 3},
		{"certificate 4 with its key", nil, nil, 4},
	}
	c4, k4 := is.Leaf(t, 4, exp)
	steps[1].cert, steps[2].cert, steps[2].key = c4, c4, k4
	for _, s := range steps {
		writePair(t, dir, s.cert, s.key)
		clock.add(DefaultInterval)
		if got := serial(p.Certificate()); got != s.wantSerial {
			t.Errorf("%s: serial %d, want %d", s.name, got, s.wantSerial)
		}
	}
	if !strings.Contains(logs.String(), "do not load") {
		t.Errorf("the failed reloads were not logged:\n%s", logs.String())
	}

	// Files gone (a Secret deleted): the loaded pair stays.
	os.Remove(f.cert)
	clock.add(DefaultInterval)
	if got := serial(p.Certificate()); got != 4 {
		t.Errorf("after the files were removed: serial %d, want 4", got)
	}
}

// TestReloadsAfterPermissionFix: a renewed pair whose key the daemon may
// not read (written by root with mode 0600) is logged and the old pair
// kept; once the operator fixes the mode (chmod, chgrp: the contents stay
// as they are), the next check loads it, as the log line promises ("until
// they do"). Was: only a change of mtime, size or inode was seen, so the
// fixed files were never tried again and the old certificate was served
// until it expired. Run as a user other than root (root reads any file).
func TestReloadsAfterPermissionFix(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads a file whatever its mode")
	}
	is := testcert.NewCA(t)
	exp := time.Now().Add(20 * 24 * time.Hour)
	dir := t.TempDir()
	c2, k2 := is.Leaf(t, 2, exp)
	f := writePair(t, dir, c2, k2)
	clock := &fakeClock{t: time.Now()}
	p, err := Load(f.cert, f.key, nil, WithClock(clock.now))
	if err != nil {
		t.Fatal(err)
	}
	c3, k3 := is.Leaf(t, 3, exp)
	writePair(t, dir, c3, k3)
	if err := os.Chmod(f.key, 0); err != nil {
		t.Fatal(err)
	}
	clock.add(DefaultInterval)
	if got := serial(p.Certificate()); got != 2 {
		t.Fatalf("key unreadable: serial %d, want 2 (the loaded pair)", got)
	}
	if err := os.Chmod(f.key, 0o600); err != nil {
		t.Fatal(err)
	}
	clock.add(DefaultInterval)
	if got := serial(p.Certificate()); got != 3 {
		t.Errorf("after the key's mode was fixed: serial %d, want 3", got)
	}
}

// TestLoadErrors: a missing or bad pair at start is an error naming the
// file, as the daemons report it before serving.
func TestLoadErrors(t *testing.T) {
	is := testcert.NewCA(t)
	dir := t.TempDir()
	c, k := is.Leaf(t, 2, time.Now().Add(time.Hour))
	_, k9 := is.Leaf(t, 9, time.Now().Add(time.Hour))
	for _, tc := range []struct {
		name       string
		cert, key  []byte
		wantInText string
	}{
		{"mismatched key", c, k9, "tls.crt"},
		{"garbage", []byte("x"), k, "tls.crt"},
	} {
		f := writePair(t, dir, tc.cert, tc.key)
		if _, err := Load(f.cert, f.key, nil); err == nil || !strings.Contains(err.Error(), tc.wantInText) {
			t.Errorf("%s: Load: %v, want an error naming %s", tc.name, err, tc.wantInText)
		}
	}
	if _, err := Load(filepath.Join(dir, "none.crt"), filepath.Join(dir, "none.key"), nil); err == nil || !strings.Contains(err.Error(), "none.crt") {
		t.Errorf("missing files: Load: %v, want an error naming none.crt", err)
	}
}

// TestExpiryWarning: a certificate that expires within ExpiryWarning is
// logged at Warn when loaded.
func TestExpiryWarning(t *testing.T) {
	is := testcert.NewCA(t)
	for _, tc := range []struct {
		left time.Duration
		warn bool
	}{{30 * 24 * time.Hour, false}, {2 * 24 * time.Hour, true}} {
		c, k := is.Leaf(t, 2, time.Now().Add(tc.left))
		f := writePair(t, t.TempDir(), c, k)
		var logs bytes.Buffer
		if _, err := Load(f.cert, f.key, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(logs.String(), "expires soon"); got != tc.warn {
			t.Errorf("%v left: warned %v, want %v:\n%s", tc.left, got, tc.warn, logs.String())
		}
	}
}

// TestExpiryWarningWhileServing: a certificate that comes within
// ExpiryWarning of its expiry while it is served, its files unchanged
// (rotation broken: the case the warning is for), is logged at Warn then,
// and again a day later, not at every handshake. Was: only at a load, so
// a daemon that loaded a 90-day certificate never warned before it
// expired.
func TestExpiryWarningWhileServing(t *testing.T) {
	is := testcert.NewCA(t)
	start := time.Now()
	c, k := is.Leaf(t, 2, start.Add(30*24*time.Hour))
	f := writePair(t, t.TempDir(), c, k)
	clock := &fakeClock{t: start}
	var logs bytes.Buffer
	p, err := Load(f.cert, f.key, slog.New(slog.NewTextHandler(&logs, nil)), WithClock(clock.now))
	if err != nil {
		t.Fatal(err)
	}
	warnings := func() int { return strings.Count(logs.String(), "expires soon") }
	p.Certificate()
	if n := warnings(); n != 0 {
		t.Fatalf("30 days left: %d warnings, want 0:\n%s", n, logs.String())
	}
	clock.add(24 * 24 * time.Hour) // 6 days left
	for range 100 {
		p.Certificate()
	}
	if n := warnings(); n != 1 {
		t.Fatalf("6 days left: %d warnings after 100 handshakes, want 1:\n%s", n, logs.String())
	}
	clock.add(12 * time.Hour)
	p.Certificate()
	if n := warnings(); n != 1 {
		t.Errorf("12 hours later: %d warnings, want still 1", n)
	}
	clock.add(12 * time.Hour)
	p.Certificate()
	if n := warnings(); n != 2 {
		t.Errorf("a day after the first warning: %d warnings, want 2", n)
	}
}

// TestHandshakesSeeRotation: a real TLS server and client on loopback,
// each with a Pair. After the server's files are replaced, the next
// connection is served the new certificate, and the client presents its
// new one to the mTLS server; connections never fail in between, with
// handshakes running concurrently with the rotation (-race).
func TestHandshakesSeeRotation(t *testing.T) {
	is := testcert.NewCA(t)
	exp := time.Now().Add(20 * 24 * time.Hour)
	srvFiles, srv := issuePair(t, is, 10, exp)
	cliFiles, cli := issuePair(t, is, 20, exp)
	clientSerials := make(chan int64, 64)
	ln := serveHandshakes(t, &tls.Config{
		GetCertificate: srv.GetCertificate, ClientCAs: is.Pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	}, func(tc *tls.Conn, err error) {
		if err != nil {
			clientSerials <- -1
			return
		}
		clientSerials <- tc.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	})
	dial := func() (server, client int64) {
		t.Helper()
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{
			RootCAs: is.Pool, GetClientCertificate: cli.GetClientCertificate, MinVersion: tls.VersionTLS12,
		})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.Close()
		server = c.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
		return server, <-clientSerials
	}
	if s, c := dial(); s != 10 || c != 20 {
		t.Fatalf("before rotation: server %d client %d, want 10 and 20", s, c)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // handshakes during the rotation
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				srv.Certificate()
				cli.Certificate()
			}
		}
	}()
	sc2, sk2 := is.Leaf(t, 11, exp)
	writePair(t, filepath.Dir(srvFiles.cert), sc2, sk2)
	cc2, ck2 := is.Leaf(t, 21, exp)
	writePair(t, filepath.Dir(cliFiles.cert), cc2, ck2)
	close(stop)
	wg.Wait()
	if s, c := dial(); s != 11 || c != 21 {
		t.Fatalf("after rotation: server %d client %d, want 11 and 21", s, c)
	}
}
