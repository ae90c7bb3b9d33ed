package tlsreload

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"time"

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
	w   watched[x509.CertPool]
	key atomic.Pointer[poolKey] // the session ticket keys of the current bundle (RequireClients)
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
				log.Error("TLS CA bundle unreadable: the CAs loaded before stay trusted until it is; fix the file", "err", err)
				return
			}
			log.Error("TLS CA bundle changed but does not load: the CAs loaded before stay trusted until it does; fix the file", "err", err)
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
// certificate signed by the bundle as it is at each handshake: each gets a
// copy of server as it is now (set it up first) with the current bundle as
// ClientCAs, through GetConfigForClient, so Go's own verification runs
// (and lists the acceptable CAs to the client). A copy that names no
// application protocols offers h2 and http/1.1, as net/http and gRPC do
// (gRPC adds h2 to the copy itself). The copy's session tickets are
// sealed with keys drawn anew at every reload of the bundle (and daily),
// so a client cannot resume a session verified against a bundle since
// replaced: it makes a full handshake, verified against the current one.
func (c *CA) RequireClients(server *tls.Config) {
	server.ClientAuth = tls.RequireAndVerifyClientCert
	server.ClientCAs = c.Pool()
	base := server.Clone()
	if len(base.NextProtos) == 0 {
		base.NextProtos = []string{"h2", "http/1.1"}
	}
	server.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		pool := c.Pool()
		cfg := base.Clone()
		cfg.ClientCAs = pool
		cfg.SetSessionTicketKeys(c.ticketKeys(pool))
		return cfg, nil
	}
}

// ticketKeys returns the session ticket keys for pool, the current
// bundle: a key drawn at random when the bundle changes, and again every
// ticketKeyLife (as Go rotates its own keys), with the one before kept for
// decryption only while the bundle is the same, so a ticket sealed under
// another bundle never opens.
func (c *CA) ticketKeys(pool *x509.CertPool) [][32]byte {
	now := c.w.now()
	cur := c.key.Load()
	if cur != nil && cur.pool == pool && now.Sub(cur.made) < ticketKeyLife {
		return cur.keys
	}
	var key [32]byte
	rand.Read(key[:]) // never fails (Go 1.24+: it crashes the program instead)
	next := &poolKey{pool: pool, made: now, keys: [][32]byte{key}}
	if cur != nil && cur.pool == pool {
		next.keys = append(next.keys, cur.keys[0])
	}
	if c.key.CompareAndSwap(cur, next) {
		return next.keys
	}
	return c.ticketKeys(pool) // another handshake drew one first
}

// ticketKeyLife is how long a session ticket key seals new tickets.
const ticketKeyLife = 24 * time.Hour

// poolKey is a bundle and its session ticket keys (the current one
// first), the current one drawn at made.
type poolKey struct {
	pool *x509.CertPool
	made time.Time
	keys [][32]byte
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
func (cc *clientCreds) OverrideServerName(string) error {
	return errors.New("tlsreload: OverrideServerName is not supported: the server name comes from the address dialed")
}
