package client

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"

	"github.com/locuscache/locus/pkg/origin"
)

// ErrInvalidConfig is returned by New for a Config that cannot work.
var ErrInvalidConfig = errors.New("client: invalid config")

// Defaults of Config.
const (
	DefaultDialTimeout = 3 * time.Second
	DefaultStatTimeout = 10 * time.Second
	// DefaultIdleTimeout outlasts a healthy node's silence: a node gives
	// each node of a block's list (2 by default) its own peer idle
	// timeout (30 s by default) before it reads the origin itself, and
	// the client's timer starts first. At 30 s, the node's value, the
	// client always gave up on a healthy node whose block's owner
	// stalled.
	DefaultIdleTimeout       = 75 * time.Second
	DefaultConnsPerNode      = 1
	DefaultFallbackChunkSize = 1 << 20

	// Window is the HTTP/2 stream and connection flow-control window of
	// the client's connections: large enough that a ReadRange stream of
	// 1 MiB chunks is never throttled by window updates on a fast link
	// (the node uses the same size for its peers).
	Window = 16 << 20
	// MaxRecvMsgSize bounds one received message: above the node's largest
	// Chunk (node.MaxChunkSize, 1 MiB) with room for framing.
	MaxRecvMsgSize = 4 << 20
)

// Config configures a Client. The zero value is usable: plaintext, no
// fallback, the defaults below.
type Config struct {
	// TLS, if set, secures the connections to cache nodes (set
	// Certificates for mTLS). Nil means plaintext, as nodes listen on
	// loopback by default.
	TLS *tls.Config

	// Origin, if set, is read directly when a node fails (dial error,
	// UNAVAILABLE, a broken or stalled stream, a stream that ends
	// without its summary). Nil means no fallback: the node's error is
	// returned, wrapping ErrNodeUnavailable. The client holds no
	// credentials of its own: build the store as the node's origin is
	// built (origin.NewS3Store with the standard AWS chain).
	Origin origin.Store

	// DialTimeout bounds how long a call waits for a connection to a node
	// before the node counts as failed. Default 3s: on loopback or in a
	// rack a connection takes microseconds, so seconds mean a dead node.
	DialTimeout time.Duration
	// StatTimeout bounds one Stat (on the node, then on the origin).
	// Default 10s.
	StatTimeout time.Duration
	// IdleTimeout abandons a ReadRange stream that delivers no message
	// for this long (the rest then comes from the origin). Default 75s:
	// the node may be filling a cold page from a slow origin, or waiting
	// out stalled owners of a block (up to its --peer-idle-timeout, 30s,
	// for each node of the block's list) before it reads the origin
	// itself; keep it above replication x the nodes' peer idle timeout.
	IdleTimeout time.Duration
	// ReadTimeout bounds a whole ReadRange, ReadSplit or ReaderAt.ReadAt
	// call, fallback included. Default 0: no bound beyond the caller's
	// context (a large range legitimately takes long).
	ReadTimeout time.Duration

	// ConnsPerNode is the number of gRPC connections kept to each node,
	// used round-robin. Default 1: one HTTP/2 connection with large
	// windows fills a loopback or 10 GbE link; raise it when many
	// goroutines read from one node over a high-latency link.
	ConnsPerNode int
	// FallbackChunkSize is the size of each origin read during a
	// fallback. Default 1 MiB (the node's page size).
	FallbackChunkSize int

	// DialOptions are appended to the client's own dial options (tests
	// pass a bufconn dialer here).
	DialOptions []grpc.DialOption

	// Logger receives fallbacks (Warn) and connection events (Debug).
	// Default: discard.
	Logger *slog.Logger
}

func (c *Config) validate() error {
	if c.DialTimeout < 0 || c.StatTimeout < 0 || c.IdleTimeout < 0 || c.ReadTimeout < 0 {
		return fmt.Errorf("%w: negative timeout", ErrInvalidConfig)
	}
	if c.ConnsPerNode < 0 || c.FallbackChunkSize < 0 {
		return fmt.Errorf("%w: negative ConnsPerNode or FallbackChunkSize", ErrInvalidConfig)
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.StatTimeout == 0 {
		c.StatTimeout = DefaultStatTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.ConnsPerNode == 0 {
		c.ConnsPerNode = DefaultConnsPerNode
	}
	if c.FallbackChunkSize == 0 {
		c.FallbackChunkSize = DefaultFallbackChunkSize
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
