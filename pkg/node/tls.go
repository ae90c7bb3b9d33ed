package node

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"

	"github.com/locuscache/locus/internal/tlsreload"
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
//
// The certificate and key are reloaded when their files change
// (tlsreload: checked at most every 10 s by a handshake), so a rotated
// certificate (cert-manager, a Kubernetes Secret updated in place) is
// served and presented without a restart; the CA is read once.
func loadTLS(certFile, keyFile, caFile string, log *slog.Logger) (*tlsSetup, error) {
	if certFile == "" {
		return nil, nil
	}
	pair, err := tlsreload.Load(certFile, keyFile, log)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTLS, err)
	}
	s := &tlsSetup{
		server: &tls.Config{GetCertificate: pair.GetCertificate, MinVersion: tls.VersionTLS12},
		client: &tls.Config{GetClientCertificate: pair.GetClientCertificate, MinVersion: tls.VersionTLS12},
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
