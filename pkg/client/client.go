package client

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// Client reads through Locus cache nodes. It keeps a pool of gRPC
// connections per node address (created on first use, kept until Close)
// and is safe for concurrent use by many goroutines.
type Client struct {
	cfg Config

	mu     sync.Mutex // guards pools and closed
	pools  map[string]*nodePool
	closed bool

	stats struct {
		reads, nodeFailures, fallbacks, fallbackBytes atomic.Int64
	}
}

// nodePool is the connections to one node, used round-robin.
type nodePool struct {
	conns []*grpc.ClientConn
	next  atomic.Uint32
}

// New returns a Client for cfg, or an error wrapping ErrInvalidConfig.
// Connections are made lazily, on the first call to each node.
func New(cfg Config) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, pools: make(map[string]*nodePool)}, nil
}

// Close closes every connection. Calls in flight fail; later calls return
// ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	pools := c.pools
	c.pools, c.closed = nil, true
	c.mu.Unlock()
	var errs []error
	for _, p := range pools {
		for _, cc := range p.conns {
			errs = append(errs, cc.Close())
		}
	}
	return errors.Join(errs...)
}

// isClosed reports whether Close was called.
func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Stats counts the client's reads and fallbacks since New.
type Stats struct {
	// Reads is the number of range reads started (ReadRange, ReadSplit,
	// ReaderAt.ReadAt calls that went to a node).
	Reads int64
	// NodeFailures is the number of calls (reads and stats) in which the
	// node failed.
	NodeFailures int64
	// Fallbacks is the number of calls answered (in part) by the origin.
	Fallbacks int64
	// FallbackBytes is the number of bytes read from the origin by
	// fallbacks.
	FallbackBytes int64
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	return Stats{
		Reads:         c.stats.reads.Load(),
		NodeFailures:  c.stats.nodeFailures.Load(),
		Fallbacks:     c.stats.fallbacks.Load(),
		FallbackBytes: c.stats.fallbackBytes.Load(),
	}
}

// dialOptions are the options of every connection: large flow-control
// windows and a receive limit above the chunk size (as the node's peer
// connections), keepalives to notice a dead node on an idle connection,
// a connect timeout of DialTimeout, and the caller's extra options.
func (c *Client) dialOptions() []grpc.DialOption {
	var creds credentials.TransportCredentials = insecure.NewCredentials()
	if c.cfg.TLS != nil {
		creds = credentials.NewTLS(c.cfg.TLS)
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithInitialWindowSize(Window),
		grpc.WithInitialConnWindowSize(Window),
		grpc.WithReadBufferSize(256 << 10),
		grpc.WithWriteBufferSize(64 << 10),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxRecvMsgSize)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: c.cfg.DialTimeout,
		}),
	}
	return append(opts, c.cfg.DialOptions...)
}

// service returns a CacheService client on one of addr's connections.
func (c *Client) service(addr string) (cachev1.CacheServiceClient, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	p, ok := c.pools[addr]
	if !ok {
		p = &nodePool{}
		for range c.cfg.ConnsPerNode {
			cc, err := grpc.NewClient("passthrough:///"+addr, c.dialOptions()...)
			if err != nil { // a malformed address or option: no I/O happened
				for _, done := range p.conns {
					_ = done.Close()
				}
				return nil, err
			}
			p.conns = append(p.conns, cc)
		}
		c.pools[addr] = p
		c.cfg.Logger.Debug("client: new connection pool", "node", addr, "conns", len(p.conns))
	}
	cc := p.conns[p.next.Add(1)%uint32(len(p.conns))]
	return cachev1.NewCacheServiceClient(cc), nil
}
