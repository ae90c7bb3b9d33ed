package node

import (
	"crypto/tls"
	"fmt"
	"log/slog"

	"google.golang.org/grpc/credentials"

	"github.com/locuscache/locus/internal/tlsreload"
)

// tlsSetup holds the TLS configurations built from --tls-cert, --tls-key
// and --tls-ca.
type tlsSetup struct {
	server *tls.Config // gRPC and HTTP listeners
	client *tls.Config // dialing peers: the base of peerCreds
	ca     *tlsreload.CA
}

// peerCreds are the gRPC credentials for dialing peers: with a CA, each
// handshake checks the peer against the CA bundle as it is then.
func (s *tlsSetup) peerCreds() credentials.TransportCredentials {
	if s.ca != nil {
		return s.ca.ClientCredentials(s.client)
	}
	return credentials.NewTLS(s.client)
}

// loadTLS builds the TLS configurations. With only a certificate and key
// the servers speak TLS and peers are verified against the system roots.
// With a CA as well, the servers require client certificates signed by it
// (mTLS), peers must present server certificates signed by it, and the node
// presents its own certificate when it dials. Errors wrap ErrTLS.
//
// The certificate and key, and the CA bundle, are reloaded when their
// files change (tlsreload: checked at most every 10 s by a handshake), so
// a rotated certificate (cert-manager, a Kubernetes Secret updated in
// place) is served and presented, and a rotated CA trusted, without a
// restart.
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
		if s.ca, err = tlsreload.LoadCA(caFile, log); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrTLS, err)
		}
		s.ca.RequireClients(s.server)
	}
	return s, nil
}
