package nodetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TLSFiles are PEM files of a throwaway CA and one certificate it signed,
// valid for server and client authentication on 127.0.0.1-127.0.0.254,
// ::1 and localhost.
type TLSFiles struct {
	CAFile, CertFile, KeyFile string
	CA                        *x509.CertPool
	Cert                      tls.Certificate

	caKey  *ecdsa.PrivateKey
	caCert *x509.Certificate
	serial int64 // of the last certificate issued
}

// NewTLS writes a new CA and certificate into a temporary directory. Two
// calls give unrelated CAs (for tests of a wrong CA).
func NewTLS(t testing.TB) *TLSFiles {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "locus test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	f := &TLSFiles{
		CAFile:   filepath.Join(dir, "ca.pem"),
		CertFile: filepath.Join(dir, "node.pem"),
		KeyFile:  filepath.Join(dir, "node-key.pem"),
		CA:       x509.NewCertPool(),
		caKey:    caKey,
		caCert:   caCert,
		serial:   1,
	}
	f.CA.AddCert(caCert)
	if err := os.WriteFile(f.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
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
	now := time.Now()
	f.serial++
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(f.serial),
		Subject:      pkix.Name{CommonName: "locus test node"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv6loopback},
	}
	for i := 1; i < 255; i++ {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.IPv4(127, 0, 0, byte(i)))
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, f.caCert, &key.PublicKey, f.caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(path, typ string, b []byte) {
		if err := os.WriteFile(path+".new", pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
	write(f.KeyFile, "EC PRIVATE KEY", keyDER)
	write(f.CertFile, "CERTIFICATE", der)
	if f.Cert, err = tls.LoadX509KeyPair(f.CertFile, f.KeyFile); err != nil {
		t.Fatal(err)
	}
	return f.serial
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
