package tlsreload

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/testcert"
)

// TestCARotation: a server and a client on loopback that both follow one
// CA bundle file through a CA rotation, as an operator does it: the new CA
// is added to the bundle, certificates are reissued from it, the old CA is
// removed. No side restarts; each step takes effect at the next handshake.
// Before CA existed the bundle was read once, so the reissued certificates
// failed every handshake until a restart.
func TestCARotation(t *testing.T) {
	old, next := testcert.NewCA(t), testcert.NewCA(t)
	exp := time.Now().Add(20 * 24 * time.Hour)
	dir := t.TempDir()
	bundle := filepath.Join(dir, "ca.crt")
	replace(t, bundle, old.PEM)
	ca, err := LoadCA(bundle, nil, WithInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	srvFiles, srv := issuePair(t, old, 10, exp)
	cliFiles, cli := issuePair(t, old, 20, exp)
	server := &tls.Config{GetCertificate: srv.GetCertificate, MinVersion: tls.VersionTLS12}
	ca.RequireClients(server)
	serverErrs := make(chan error, 16)
	ln := serveHandshakes(t, server, func(_ *tls.Conn, err error) { serverErrs <- err })
	// dial handshakes as the client, named name; it returns the client's
	// error and the server's.
	dial := func(name string) (client, server error) {
		t.Helper()
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		c := tls.Client(conn, ca.ClientConfig(&tls.Config{GetClientCertificate: cli.GetClientCertificate, MinVersion: tls.VersionTLS12, ServerName: name}))
		client = c.Handshake()
		if client == nil {
			// TLS 1.3: the server checks the client's certificate after
			// the client's handshake ends; read to see its verdict.
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			c.Read(make([]byte, 1))
		}
		c.Close()
		return client, <-serverErrs
	}
	ok := func(step string) {
		t.Helper()
		if c, s := dial("127.0.0.1"); c != nil || s != nil {
			t.Fatalf("%s: client %v, server %v; want a handshake", step, c, s)
		}
	}
	ok("old CA")
	issue := func(f files, ca *testcert.CA, serial int64) { // replaces f's files
		c, k := ca.Leaf(t, serial, exp)
		writePair(t, filepath.Dir(f.cert), c, k)
	}
	// The new CA joins the bundle; certificates are reissued from it.
	replace(t, bundle, bytes.Join([][]byte{old.PEM, next.PEM}, nil))
	ok("both CAs, old certificates")
	issue(srvFiles, next, 11)
	issue(cliFiles, next, 21)
	ok("both CAs, new certificates")
	// The old CA leaves the bundle.
	replace(t, bundle, next.PEM)
	ok("new CA")
	// A certificate of the old CA is refused both ways now.
	issue(cliFiles, old, 22)
	if _, s := dial("127.0.0.1"); s == nil {
		t.Fatal("the server took a client certificate of the removed CA")
	}
	issue(cliFiles, next, 23)
	issue(srvFiles, old, 12)
	if c, _ := dial("127.0.0.1"); c == nil {
		t.Fatal("the client took a server certificate of the removed CA")
	}
	issue(srvFiles, next, 13)
	ok("new CA again")
	// The name is checked: the certificate is for loopback and localhost.
	if c, _ := dial("other.example"); c == nil || !strings.Contains(c.Error(), "other.example") {
		t.Fatalf("dialing a name the certificate does not hold: %v, want a refusal naming it", c)
	}
	if c, _ := dial(""); c == nil {
		t.Fatal("dialing with no server name: a handshake, want a refusal")
	}
	// A bundle that does not load keeps the last one.
	replace(t, bundle, []byte("not a certificate"))
	ok("a broken bundle file")
}

// TestCASessionResumption: a client that resumes a TLS session (tickets,
// TLS 1.2 and 1.3) is held to the bundle as it is now. While the bundle
// is unchanged it resumes; once its CA has left the bundle it can neither
// resume nor handshake; and a client reissued from the new CA, holding a
// ticket from before the rotation, gets a full handshake, not a refusal.
// (Checking client certificates in VerifyConnection instead of by
// ClientCAs refused that last client on every resumption attempt.)
func TestCASessionResumption(t *testing.T) {
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(v), func(t *testing.T) {
			old, next := testcert.NewCA(t), testcert.NewCA(t)
			exp := time.Now().Add(24 * time.Hour)
			bundle := filepath.Join(t.TempDir(), "ca.crt")
			replace(t, bundle, old.PEM)
			ca, err := LoadCA(bundle, nil, WithInterval(0))
			if err != nil {
				t.Fatal(err)
			}
			_, srv := issuePair(t, old, 1, exp)
			server := &tls.Config{GetCertificate: srv.GetCertificate, MinVersion: v, MaxVersion: v}
			ca.RequireClients(server)
			serverErrs := make(chan error, 16)
			ln := serveHandshakes(t, server, func(tc *tls.Conn, err error) {
				if err == nil {
					tc.Write([]byte("x")) // TLS 1.3: the client reads its ticket before this
				}
				serverErrs <- err
			})
			roots := x509.NewCertPool()
			roots.AddCert(old.Cert)
			roots.AddCert(next.Cert)
			cache := tls.NewLRUClientSessionCache(8)
			// dial handshakes with the client certificate of cli and the
			// shared session cache; it reports whether the session was
			// resumed and the server's verdict.
			dial := func(cli *Pair) (resumed bool, server error) {
				t.Helper()
				c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{
					RootCAs: roots, GetClientCertificate: cli.GetClientCertificate, ClientSessionCache: cache,
					MinVersion: v, MaxVersion: v, ServerName: "127.0.0.1",
				})
				if err == nil {
					c.SetReadDeadline(time.Now().Add(2 * time.Second))
					c.Read(make([]byte, 1))
					resumed = c.ConnectionState().DidResume
					c.Close()
				}
				return resumed, <-serverErrs
			}
			_, oldCli := issuePair(t, old, 10, exp)
			if _, err := dial(oldCli); err != nil {
				t.Fatalf("first handshake: %v", err)
			}
			if resumed, err := dial(oldCli); err != nil || !resumed {
				t.Fatalf("second handshake, bundle unchanged: resumed %v, %v; want a resumption", resumed, err)
			}
			replace(t, bundle, next.PEM)
			if _, err := dial(oldCli); err == nil {
				t.Fatal("a client of the removed CA was served (resumed a session from before)")
			}
			// A fresh ticket under the old bundle, then the rotation: the
			// new CA's client must get through with it.
			replace(t, bundle, bytes.Join([][]byte{old.PEM, next.PEM}, nil))
			if _, err := dial(oldCli); err != nil {
				t.Fatalf("both CAs: %v", err)
			}
			replace(t, bundle, next.PEM)
			_, newCli := issuePair(t, next, 11, exp)
			for i := range 2 {
				if _, err := dial(newCli); err != nil {
					t.Fatalf("client of the new CA, attempt %d: %v", i+1, err)
				}
			}
		})
	}
}

// TestTicketKeys: the session ticket keys stay while the bundle does, for
// a day; then a new key seals and the previous one still opens; a new
// bundle gets a new key alone (its tickets never open under the old one).
func TestTicketKeys(t *testing.T) {
	clk := &fakeClock{t: time.Now()}
	bundle := filepath.Join(t.TempDir(), "ca.crt")
	replace(t, bundle, testcert.NewCA(t).PEM)
	ca, err := LoadCA(bundle, nil, WithClock(clk.now), WithInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	pool := ca.Pool()
	first := ca.ticketKeys(pool)
	clk.add(time.Hour)
	if again := ca.ticketKeys(pool); len(again) != 1 || again[0] != first[0] {
		t.Fatalf("an hour later, same bundle: keys changed")
	}
	clk.add(ticketKeyLife)
	rotated := ca.ticketKeys(pool)
	if len(rotated) != 2 || rotated[0] == first[0] || rotated[1] != first[0] {
		t.Fatalf("a day later: %d keys, want a new one and the previous one", len(rotated))
	}
	replace(t, bundle, testcert.NewCA(t).PEM)
	fresh := ca.ticketKeys(ca.Pool())
	if len(fresh) != 1 || fresh[0] == rotated[0] || fresh[0] == rotated[1] {
		t.Fatalf("a new bundle: %d keys, want one new key alone", len(fresh))
	}
}
