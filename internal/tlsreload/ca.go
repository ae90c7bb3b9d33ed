package tlsreload

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"google.golang.org/grpc/credentials"
)

// CA is a bundle of CA certificates loaded from a PEM file and reloaded
// when the file changes (checked at most once per interval, by the
// handshakes that use it, as a Pair is). A bundle that does not load (a
// half-written file, no certificate in it) is logged and the old one
// kept. Its methods are safe for concurrent use.
//
// A CA rotation then needs no restart: add the new CA to the bundle
// everywhere, reissue the certificates from it, remove the old CA. Both
// sides follow the file: a server set up by RequireClients asks each new
// connection for a client certificate signed by the current bundle, and a
// client dialing with ClientConfig or ClientCredentials checks each server
// against the current bundle.
type CA struct {
	w watched[x509.CertPool]
}

// LoadCA reads the bundle from file; an error names it. log (nil:
// discard) gets a line for every reload and failed reload.
func LoadCA(file string, log *slog.Logger, opts ...Option) (*CA, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &CA{w: watched[x509.CertPool]{
		files:    []watchedFile{{file, "CA bundle"}},
		settings: newSettings(opts),
		load:     func() (*x509.CertPool, error) { return loadPool(file) },
		loaded:   func(*x509.CertPool) { log.Info("TLS CA bundle reloaded", "ca", file) },
		failed: func(err error, st bool) {
			if st {
				log.Warn("TLS CA bundle unreadable; keeping the loaded one", "err", err)
				return
			}
			log.Warn("TLS CA bundle changed but does not load; keeping the loaded one until it does", "err", err)
		},
	}}
	if err := c.w.start(); err != nil {
		return nil, err
	}
	return c, nil
}

func loadPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("CA bundle %s: %w", file, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA bundle %s holds no PEM certificate", file)
	}
	return pool, nil
}

// Pool returns the current bundle, first loading the file again if the
// check interval has passed and it changed.
func (c *CA) Pool() *x509.CertPool { return c.w.get() }

// RequireClients makes server, a server's configuration, require a client
// certificate signed by the current bundle. The standard check against a
// fixed ClientCAs is replaced by one in VerifyConnection: the server asks
// for any certificate (tls.RequireAnyClientCert) and VerifyConnection
// verifies its chain, for client authentication, against the bundle as it
// is at the handshake. (Swapping ClientCAs per handshake through
// GetConfigForClient would hand the handshake a copy of the configuration
// without what gRPC adds to its own copy, such as the h2 protocol.)
func (c *CA) RequireClients(server *tls.Config) {
	server.ClientCAs = nil
	server.ClientAuth = tls.RequireAnyClientCert
	server.VerifyConnection = c.verifyClient
}

func (c *CA) verifyClient(cs tls.ConnectionState) error {
	return c.verify(cs.PeerCertificates, "", x509.ExtKeyUsageClientAuth)
}

// ClientConfig returns a copy of base, a client's configuration, that
// trusts the current bundle (RootCAs). Build one per connection (or use
// ClientCredentials for gRPC): the standard verification, name included,
// then runs against the bundle as it is at the handshake. (A check in
// VerifyConnection could not see the name a client dialed by IP address:
// no SNI is sent for one, so ConnectionState.ServerName is empty.)
func (c *CA) ClientConfig(base *tls.Config) *tls.Config {
	cfg := base.Clone()
	cfg.RootCAs = c.Pool()
	return cfg
}

// ClientCredentials returns gRPC transport credentials for dialing: each
// handshake uses ClientConfig(base), so a server is checked against the
// bundle as it is then.
func (c *CA) ClientCredentials(base *tls.Config) credentials.TransportCredentials {
	return &clientCreds{ca: c, base: base.Clone()}
}

// clientCreds are ClientCredentials' credentials.
type clientCreds struct {
	ca   *CA
	base *tls.Config
}

func (cc *clientCreds) current() credentials.TransportCredentials {
	return credentials.NewTLS(cc.ca.ClientConfig(cc.base))
}

func (cc *clientCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return cc.current().ClientHandshake(ctx, authority, raw)
}

func (cc *clientCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return cc.current().ServerHandshake(raw)
}

func (cc *clientCreds) Info() credentials.ProtocolInfo { return credentials.NewTLS(cc.base).Info() }

func (cc *clientCreds) Clone() credentials.TransportCredentials {
	return &clientCreds{ca: cc.ca, base: cc.base.Clone()}
}

// OverrideServerName implements credentials.TransportCredentials (gRPC
// deprecates it; the name is taken from the authority).
func (cc *clientCreds) OverrideServerName(name string) error {
	cc.base.ServerName = name
	return nil
}

// verify checks a peer's chain (leaf first, then the intermediates it
// sent) against the current bundle, for usage, and the leaf against name
// unless it is empty (a client's certificate names no host).
func (c *CA) verify(chain []*x509.Certificate, name string, usage x509.ExtKeyUsage) error {
	if len(chain) == 0 {
		return errors.New("tlsreload: the peer sent no certificate")
	}
	opts := x509.VerifyOptions{
		DNSName:       name,
		Roots:         c.Pool(),
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{usage},
	}
	for _, cert := range chain[1:] {
		opts.Intermediates.AddCert(cert)
	}
	_, err := chain[0].Verify(opts)
	return err
}
