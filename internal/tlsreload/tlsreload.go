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
// The CA bundle (--tls-ca) is still read once: a CA changes far more
// rarely than the certificates it signs, and a new one takes a restart.
package tlsreload

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultInterval is how often, at most, a handshake checks the files:
// two stat calls, cheap next to a handshake, and soon enough for a
// rotation that happens days before the old certificate expires.
const DefaultInterval = 10 * time.Second

// ExpiryWarning is how close to its expiry a loaded certificate is
// logged at Warn: enough warning to renew it by hand if rotation is
// broken.
const ExpiryWarning = 7 * 24 * time.Hour

// Pair is a certificate and key loaded from files and reloaded when they
// change. Its methods are safe for concurrent use.
type Pair struct {
	certFile, keyFile string
	interval          time.Duration
	now               func() time.Time
	log               *slog.Logger

	cur     atomic.Pointer[tls.Certificate]
	checked atomic.Int64 // unix nanoseconds of the last check of the files

	mu    sync.Mutex // serialises checks; guards stamp
	stamp stamp      // of the files when last loaded (or tried)
}

// stamp identifies the contents of the two files without reading them.
type stamp struct {
	certMod, keyMod   time.Time
	certSize, keySize int64
	certIno, keyIno   uint64 // a file replaced by rename (Kubernetes' swap) is a new inode
}

// Option changes a Pair's defaults (for tests).
type Option func(*Pair)

// WithInterval sets how often, at most, the files are checked.
func WithInterval(d time.Duration) Option { return func(p *Pair) { p.interval = d } }

// WithClock replaces time.Now.
func WithClock(now func() time.Time) Option { return func(p *Pair) { p.now = now } }

// Load reads the pair from certFile and keyFile; an error names the files.
// log (nil: discard) gets a line for every reload, failed reload and
// certificate close to its expiry.
func Load(certFile, keyFile string, log *slog.Logger, opts ...Option) (*Pair, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pair{certFile: certFile, keyFile: keyFile, interval: DefaultInterval, now: time.Now, log: log}
	for _, o := range opts {
		o(p)
	}
	st, err := p.stat()
	if err != nil {
		return nil, err
	}
	cert, err := load(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	p.stamp = st
	p.cur.Store(cert)
	p.checked.Store(p.now().UnixNano())
	p.warnExpiry(cert)
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

func (p *Pair) stat() (stamp, error) {
	c, err := os.Stat(p.certFile)
	if err != nil {
		return stamp{}, fmt.Errorf("certificate %s: %w", p.certFile, err)
	}
	k, err := os.Stat(p.keyFile)
	if err != nil {
		return stamp{}, fmt.Errorf("key %s: %w", p.keyFile, err)
	}
	return stamp{certMod: c.ModTime(), keyMod: k.ModTime(), certSize: c.Size(), keySize: k.Size(), certIno: inode(c), keyIno: inode(k)}, nil
}

// inode is fi's inode number, 0 where the platform does not say.
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// Certificate returns the current pair, first loading the files again if
// the check interval has passed and they changed.
func (p *Pair) Certificate() *tls.Certificate {
	now := p.now()
	if now.UnixNano()-p.checked.Load() < int64(p.interval) {
		return p.cur.Load()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.UnixNano()-p.checked.Load() < int64(p.interval) {
		return p.cur.Load() // another handshake just checked
	}
	p.checked.Store(now.UnixNano())
	st, err := p.stat()
	if err != nil {
		p.log.Warn("TLS certificate files unreadable; keeping the loaded certificate", "err", err)
		return p.cur.Load()
	}
	if st == p.stamp {
		return p.cur.Load()
	}
	p.stamp = st // tried once per change: a pair that fails waits for the next one
	cert, err := load(p.certFile, p.keyFile)
	if err != nil {
		p.log.Warn("TLS certificate files changed but do not load; keeping the loaded certificate until they do", "err", err)
		return p.cur.Load()
	}
	p.cur.Store(cert)
	p.log.Info("TLS certificate reloaded", "cert", p.certFile, "subject", cert.Leaf.Subject.String(),
		"serial", cert.Leaf.SerialNumber.String(), "not_after", cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	p.warnExpiry(cert)
	return cert
}

func (p *Pair) warnExpiry(cert *tls.Certificate) {
	if cert.Leaf == nil {
		return
	}
	if left := cert.Leaf.NotAfter.Sub(p.now()); left < ExpiryWarning {
		p.log.Warn("TLS certificate expires soon (or has expired): renew it; the new files are picked up without a restart",
			"cert", p.certFile, "not_after", cert.Leaf.NotAfter.UTC().Format(time.RFC3339), "left", left.Round(time.Minute).String())
	}
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
