package nodetest

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/testcert"
)

// TLSFiles are PEM files of a throwaway CA and one certificate it signed,
// valid for server and client authentication on 127.0.0.1-127.0.0.254,
// ::1 and localhost (testcert).
type TLSFiles struct {
	CAFile, CertFile, KeyFile string
	CA                        *x509.CertPool
	Cert                      tls.Certificate

	ca     *testcert.CA
	old    *testcert.CA // the CA RotateCA replaced, until DropOldCA
	serial int64        // of the last certificate issued
}

// NewTLS writes a new CA and certificate into a temporary directory. Two
// calls give unrelated CAs (for tests of a wrong CA).
func NewTLS(t testing.TB) *TLSFiles {
	t.Helper()
	dir := t.TempDir()
	ca := testcert.NewCA(t)
	f := &TLSFiles{
		CAFile:   filepath.Join(dir, "ca.pem"),
		CertFile: filepath.Join(dir, "node.pem"),
		KeyFile:  filepath.Join(dir, "node-key.pem"),
		CA:       ca.Pool,
		ca:       ca,
		serial:   1,
	}
	if err := os.WriteFile(f.CAFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	f.Renew(t)
	return f
}

// Renew issues a new certificate (a new key, the next serial number) from
// the same CA and replaces CertFile and KeyFile with it, each written
// aside and renamed over the old file, as Kubernetes updates a mounted
// Secret. It returns the new certificate's serial number.
func (f *TLSFiles) Renew(t testing.TB) int64 {
	t.Helper()
	f.serial++
	certPEM, keyPEM := f.ca.Leaf(t, f.serial, time.Now().Add(24*time.Hour))
	write := func(path string, b []byte) {
		if err := os.WriteFile(path+".new", b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
	write(f.KeyFile, keyPEM)
	write(f.CertFile, certPEM)
	var err error
	if f.Cert, err = tls.LoadX509KeyPair(f.CertFile, f.KeyFile); err != nil {
		t.Fatal(err)
	}
	return f.serial
}

// RotateCA starts a CA rotation as an operator does it: a new CA joins
// the bundle in CAFile (both are trusted), and the certificate is reissued
// from the new CA (Renew). CA, the clients' pool, trusts both. It returns
// the old CA, for a client certificate DropOldCA makes unacceptable.
func (f *TLSFiles) RotateCA(t testing.TB) *testcert.CA {
	t.Helper()
	f.old, f.ca = f.ca, testcert.NewCA(t)
	f.writeCA(t, append(append([]byte(nil), f.old.PEM...), f.ca.PEM...))
	f.CA = x509.NewCertPool()
	f.CA.AddCert(f.old.Cert)
	f.CA.AddCert(f.ca.Cert)
	f.Renew(t)
	return f.old
}

// DropOldCA ends a rotation: CAFile (and CA) hold the new CA only.
func (f *TLSFiles) DropOldCA(t testing.TB) {
	t.Helper()
	f.writeCA(t, f.ca.PEM)
	f.CA, f.old = f.ca.Pool, nil
}

func (f *TLSFiles) writeCA(t testing.TB, pem []byte) {
	t.Helper()
	if err := os.WriteFile(f.CAFile+".new", pem, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f.CAFile+".new", f.CAFile); err != nil {
		t.Fatal(err)
	}
}

// ClientConfig returns a client TLS configuration that trusts the CA and
// presents the certificate.
func (f *TLSFiles) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: f.CA, Certificates: []tls.Certificate{f.Cert}, MinVersion: tls.VersionTLS12}
}

// ClientConfigNoCert returns a client TLS configuration that trusts the CA
// but presents no certificate (refused by mTLS servers).
func (f *TLSFiles) ClientConfigNoCert() *tls.Config {
	return &tls.Config{RootCAs: f.CA, MinVersion: tls.VersionTLS12}
}
