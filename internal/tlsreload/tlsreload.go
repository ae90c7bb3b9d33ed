// Package tlsreload serves a TLS certificate and key from their files and
// picks up a new pair when the files change, so that a daemon keeps
// working across certificate rotation without a restart.
//
// Certificates in a cluster are short-lived: cert-manager renews its
// certificates at two thirds of their lifetime, and Kubernetes rewrites
// the mounted Secret's files in place (an atomic symlink swap). A daemon
// that read its pair once at start serves the old certificate until it
// expires, and then every peer read and client connection fails the
// handshake. A Pair is set as tls.Config.GetCertificate (servers) and
// GetClientCertificate (clients): each handshake gets the current pair,
// and at most once per check interval a handshake first stats the two
// files and, if either changed, loads them again. A pair that does not
// load (the key written but not yet its certificate, a bad file) is
// logged and the old one kept.
//
// A CA bundle (--tls-ca) is reloaded the same way (CA): a server asks
// for client certificates signed by the current bundle, and a client
// checks the server's certificate against it, so a CA rotation (the new
// CA added to the bundle, certificates reissued, the old CA removed)
// needs no restart either. See ca.go.
package tlsreload

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
	"time"
)

// DefaultInterval is how often, at most, a handshake checks the files:
// two stat calls, cheap next to a handshake, and soon enough for a
// rotation that happens days before the old certificate expires.
const DefaultInterval = 10 * time.Second

// ExpiryWarning is how close to its expiry a certificate is logged at
// Warn, when loaded or while served (then once a day, ExpiryRewarn):
// enough warning to renew it by hand if rotation is broken.
const ExpiryWarning = 7 * 24 * time.Hour

// ExpiryRewarn is how often a served certificate within ExpiryWarning of
// its expiry is logged again.
const ExpiryRewarn = 24 * time.Hour

// settings are what the options set, shared by Pair and CA.
type settings struct {
	interval time.Duration
	now      func() time.Time
}

// Pair is a certificate and key loaded from files and reloaded when they
// change. Its methods are safe for concurrent use.
type Pair struct {
	w        watched[tls.Certificate]
	certFile string
	log      *slog.Logger
	// nextWarn (unix nanoseconds) is when Certificate next looks at the
	// served certificate's expiry (warnExpiry sets it).
	nextWarn atomic.Int64
}

// Option changes a Pair's or a CA's defaults (for tests).
type Option func(*settings)

// WithInterval sets how often, at most, the files are checked.
func WithInterval(d time.Duration) Option { return func(s *settings) { s.interval = d } }

// WithClock replaces time.Now.
func WithClock(now func() time.Time) Option { return func(s *settings) { s.now = now } }

func newSettings(opts []Option) settings {
	s := settings{interval: DefaultInterval, now: time.Now}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// Load reads the pair from certFile and keyFile; an error names the files.
// log (nil: discard) gets a line for every reload, failed reload and
// certificate close to its expiry.
func Load(certFile, keyFile string, log *slog.Logger, opts ...Option) (*Pair, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pair{certFile: certFile, log: log}
	p.w = watched[tls.Certificate]{
		files:    []watchedFile{{certFile, "certificate"}, {keyFile, "key"}},
		settings: newSettings(opts),
		load:     func() (*tls.Certificate, error) { return load(certFile, keyFile) },
		loaded: func(cert *tls.Certificate) {
			log.Info("TLS certificate reloaded", "cert", certFile, "subject", cert.Leaf.Subject.String(),
				"serial", cert.Leaf.SerialNumber.String(), "not_after", cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
			p.warnExpiry(cert)
		},
		failed: func(err error, st bool) {
			if st {
				log.Warn("TLS certificate files unreadable; keeping the loaded certificate", "err", err)
				return
			}
			log.Warn("TLS certificate files changed but do not load; keeping the loaded certificate until they do", "err", err)
		},
	}
	if err := p.w.start(); err != nil {
		return nil, err
	}
	p.warnExpiry(p.w.cur.Load())
	return p, nil
}

// load reads and parses the pair, with its leaf certificate parsed.
func load(certFile, keyFile string) (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("certificate %s and key %s: %w", certFile, keyFile, err)
	}
	if cert.Leaf == nil && len(cert.Certificate) > 0 {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("certificate %s: %w", certFile, err)
		}
	}
	return &cert, nil
}

// Certificate returns the current pair, first loading the files again if
// the check interval has passed and they changed. A pair within
// ExpiryWarning of its expiry is logged, once every ExpiryRewarn.
func (p *Pair) Certificate() *tls.Certificate {
	cert := p.w.get()
	if next := p.nextWarn.Load(); p.w.now().UnixNano() >= next && p.nextWarn.CompareAndSwap(next, math.MaxInt64) {
		p.warnExpiry(cert) // this handshake only; it sets nextWarn again
	}
	return cert
}

// warnExpiry logs cert's expiry at Warn if it is within ExpiryWarning, and
// sets when Certificate looks again: ExpiryRewarn after a warning, else
// when cert enters the warning window.
func (p *Pair) warnExpiry(cert *tls.Certificate) {
	if cert.Leaf == nil {
		p.nextWarn.Store(math.MaxInt64)
		return
	}
	now := p.w.now()
	left := cert.Leaf.NotAfter.Sub(now)
	if left >= ExpiryWarning {
		p.nextWarn.Store(cert.Leaf.NotAfter.Add(-ExpiryWarning).UnixNano())
		return
	}
	p.log.Warn("TLS certificate expires soon (or has expired): renew it; the new files are picked up without a restart",
		"cert", p.certFile, "not_after", cert.Leaf.NotAfter.UTC().Format(time.RFC3339), "left", left.Round(time.Minute).String())
	p.nextWarn.Store(now.Add(ExpiryRewarn).UnixNano())
}

// GetCertificate is for tls.Config.GetCertificate (a server's side).
func (p *Pair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return p.Certificate(), nil
}

// GetClientCertificate is for tls.Config.GetClientCertificate (a client
// presenting its certificate to an mTLS server).
func (p *Pair) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return p.Certificate(), nil
}
