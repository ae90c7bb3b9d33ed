package node

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// tlsSetup holds the TLS configurations built from --tls-cert, --tls-key
// and --tls-ca.
type tlsSetup struct {
	server *tls.Config // gRPC and HTTP listeners
	client *tls.Config // dialing peers
}

// loadTLS builds the TLS configurations. With only a certificate and key
// the servers speak TLS and peers are verified against the system roots.
// With a CA as well, the servers require client certificates signed by it
// (mTLS), peers must present server certificates signed by it, and the node
// presents its own certificate when it dials. Errors wrap ErrTLS.
func loadTLS(certFile, keyFile, caFile string) (*tlsSetup, error) {
	if certFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: certificate %s and key %s: %v", ErrTLS, certFile, keyFile, err)
	}
	s := &tlsSetup{
		server: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		client: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("%w: CA file: %v", ErrTLS, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: CA file %s holds no PEM certificate", ErrTLS, caFile)
		}
		s.server.ClientCAs = pool
		s.server.ClientAuth = tls.RequireAndVerifyClientCert
		s.client.RootCAs = pool
	}
	return s, nil
}
