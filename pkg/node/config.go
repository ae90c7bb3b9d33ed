package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/origin"
)

// Defaults for the zero fields of Config.
const (
	DefaultGossipAddr      = membership.DefaultBindAddr // 127.0.0.1:7946
	DefaultGRPCAddr        = "127.0.0.1:7070"
	DefaultHTTPAddr        = "127.0.0.1:7080"
	DefaultBlockSize       = membership.DefaultBlockSize   // 128 MiB
	DefaultPageSize        = cache.DefaultPageSize         // 1 MiB
	DefaultMemorySize      = 1 << 30                       // RAM-only cache of 1 GiB
	DefaultReplication     = membership.DefaultReplication // 2: see Config.Replication
	DefaultStatTTL         = origin.DefaultStatTTL         // 5s
	DefaultDrainTimeout    = 30 * time.Second
	DefaultJoinTimeout     = 30 * time.Second
	DefaultPeerIdleTimeout = 30 * time.Second
	DefaultPeerBackoff     = 3 * time.Second
	DefaultSlots           = 4

	// MaxChunkSize bounds the data of one ReadRange Chunk message: a piece
	// larger than this (a page size above 1 MiB) is sent as several chunks,
	// so clients with gRPC's default 4 MiB receive limit can read.
	MaxChunkSize = 1 << 20

	// peerWindow is the HTTP/2 flow-control window of peer connections and
	// of the server, per stream and per connection: enough for a 1 MiB
	// chunk stream to run at loopback and LAN speed without waiting for
	// window updates. gRPC's BDP estimator is disabled when it is set.
	peerWindow = 16 << 20
	// maxRecvMsg bounds one received message on peer connections.
	maxRecvMsg = 2*MaxChunkSize + 64<<10
)

// Sentinel errors. Compare with errors.Is.
var (
	// ErrInvalidConfig: a Config field is out of range, or two fields
	// contradict each other. Returned by New.
	ErrInvalidConfig = errors.New("node: invalid config")
	// ErrTLS: the TLS certificate, key or CA file cannot be loaded.
	// Returned by New.
	ErrTLS = errors.New("node: TLS configuration")
	// ErrNotStarted: Start was not called, or Stop already ran.
	ErrNotStarted = errors.New("node: not running")
	// ErrStopped: the node is stopping or stopped; reads are refused.
	ErrStopped = errors.New("node: stopped")
	// ErrPeer: a peer answered a read in a way that breaks the protocol
	// (chunks out of order, a missing or inconsistent summary). The read
	// continues from the next node of the block's preference list, or from
	// the origin when none is left; the error is only logged and counted.
	ErrPeer = errors.New("node: peer protocol error")
	// ErrPeerVersion (wrapping ErrPeer): a peer's summary named another
	// version of the object than the one asked for (a peer that ignored
	// ExpectedVersion), after its bytes arrived. A fill drops those bytes
	// and continues from another owner or the origin; a read that already
	// passed them on fails with gRPC DATA_LOSS, which pkg/client does not
	// continue from the origin: the bytes it received cannot be taken back.
	ErrPeerVersion = fmt.Errorf("%w: the peer served another version", ErrPeer)
)

// Membership is what a node needs from cluster membership.
// *membership.Membership implements it; tests may pass a fixed view.
type Membership interface {
	// View returns the current membership and ring; never nil.
	View() *membership.View
	// SetState announces alive or draining.
	SetState(ctx context.Context, s membership.State) error
	// Leave says goodbye and shuts down.
	Leave(ctx context.Context) error
	// Shutdown stops without a goodbye.
	Shutdown() error
}

// Config configures a Node. Zero fields take the defaults named in their
// comments; New validates the rest and fills the defaults.
type Config struct {
	// ID names the node in the cluster (the memberlist node name).
	// Default: the host name.
	ID string
	// Rack is the node's failure domain (optional).
	Rack string

	// GossipAddr is the memberlist bind address "ip:port" (default
	// 127.0.0.1:7946; port 0 picks a free one). GossipAdvertiseAddr is the
	// address others reach it at, when different (NAT, or 0.0.0.0).
	GossipAddr          string
	GossipAdvertiseAddr string
	// GossipKeyFile names the gossip encryption key file (see
	// membership.ParseKey); empty means no gossip encryption.
	GossipKeyFile string
	// GossipTuning sets the failure detector timings; zero means
	// membership.LANTuning().
	GossipTuning membership.Tuning
	// Join lists "host:port" gossip addresses of members to join; empty
	// starts a new cluster.
	Join []string
	// JoinTimeout bounds how long Start retries Join while no seed
	// answers (default 30s). A refusal (incompatible block size, duplicate
	// id) fails at once.
	JoinTimeout time.Duration

	// GRPCAddr and HTTPAddr are the listen addresses (defaults
	// 127.0.0.1:7070 and 127.0.0.1:7080; port 0 picks a free port).
	GRPCAddr string
	HTTPAddr string
	// GRPCAdvertiseAddr and HTTPAdvertiseAddr are announced to the
	// cluster when the listen address is not reachable as is (0.0.0.0).
	// Default: the bound address.
	GRPCAdvertiseAddr string
	HTTPAdvertiseAddr string

	// Slots is the number of executor slots announced (default 4).
	Slots int

	// CacheDir holds the page cache's slab files; empty means a RAM-only
	// cache of MemorySize bytes.
	CacheDir string
	// CacheSize is the disk budget with CacheDir (required then).
	CacheSize int64
	// MemorySize is the RAM budget: the whole cache without CacheDir
	// (default 1 GiB), a RAM tier in front of the disk with it (0 = none).
	MemorySize int64
	// PageSize is the cache page size (default 1 MiB); it must divide
	// BlockSize.
	PageSize int
	// BlockSize is the cluster block size, the unit of ring ownership
	// (default 128 MiB); every node must use the same.
	BlockSize int64
	// CachePolicy names the cache's eviction policy ("" = the cache's
	// default).
	CachePolicy string
	// CacheSizer enables the cache's hit-ratio-at-other-sizes estimates,
	// exported as locus_cache_estimated_hit_ratio: the cache's own policy
	// by miniature simulation (model="policy", cache.Config.PolicySizing)
	// and the LRU curve (model="lru", SHARDS, package mrc).
	CacheSizer bool
	// CacheVerifyAlways checks a disk page's checksum on every read instead
	// of the cache's default, the first read after a restart re-indexed it
	// (pages this process wrote are trusted: see cache.VerifyMode). For
	// disks that are not trusted to return what was written; it costs about
	// half the read speed of disk-tier hits.
	CacheVerifyAlways bool

	// Replication is the length of each block's preference list (default
	// 2, DefaultReplication): a node in the list serves the block from its
	// own cache; others read it through the first reachable node of the
	// list. It is part of the cluster's data layout, like BlockSize: the
	// node announces it in its gossip metadata, a node whose replication
	// differs from the cluster's is refused (start it with the cluster's
	// --replication), and the scheduler takes it from the nodes, so a task
	// placed DATA_LOCAL always reads from its node's own cache. Why 2: with
	// owner-only lists (1) a busy cluster cannot keep tasks data-local
	// (pkg/placement/placementtest: 91.7% DATA_LOCAL at 2x oversubscription
	// with 3 s waits, against 98.9% with 2), as Trino's file-system cache
	// found (fs.cache.preferred-hosts-count defaults to 2); the cost is
	// that a hot block may be cached on both of its nodes.
	// 1..membership.MaxReplication.
	Replication int

	// Origin is the object store (an origin.Router over S3 and file
	// stores, or a test store). Required. The node wraps it in a StatCache
	// and counts its calls.
	Origin origin.Store
	// StatTTL is how long a Stat answer is trusted (default 5s): a rewrite
	// of an object whose pages are all cached becomes visible within it.
	// Reads never mix versions regardless.
	StatTTL time.Duration

	// TLSCertFile and TLSKeyFile (PEM) enable TLS on the gRPC and HTTP
	// listeners, and are presented as the client certificate when dialing
	// peers. TLSCAFile (PEM) makes the servers require client certificates
	// signed by it (mTLS) and is the root used to verify peers.
	TLSCertFile string
	TLSKeyFile  string
	TLSCAFile   string

	// DrainTimeout bounds the wait for in-flight reads in Drain (default
	// 30s).
	DrainTimeout time.Duration
	// PeerIdleTimeout fails a peer read (which then continues from the
	// next node of the block's preference list, or from the origin when
	// none is left) when no message arrives for this long (default 30s,
	// the origin's own timeout, since the owner may be filling from it).
	PeerIdleTimeout time.Duration
	// PeerBackoff is how long a peer that failed with an availability
	// error is skipped (default 3s), so a dead or hung owner costs one
	// timeout, not one per block, until membership drops it.
	PeerBackoff time.Duration

	// Gateway, if set, builds the handler the HTTP listener serves for
	// every path other than /metrics, /healthz and /readyz (the S3
	// gateway: cmd/cachenode passes gateway.New over the node). Nil
	// answers those paths with 404.
	Gateway func(n *Node) (http.Handler, error)

	// Membership, if set, replaces the gossip membership New would create
	// (tests pass a fixed view). The Gossip* and Join fields are then
	// ignored, and the View must list this node with its real gRPC
	// address for peers to reach it.
	Membership Membership

	// Logger receives the node's structured logs. Default slog.Default().
	Logger *slog.Logger
}

func (c *Config) validate() error {
	if c.ID == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			return fmt.Errorf("%w: no node id given and the host name is unknown (%v)", ErrInvalidConfig, err)
		}
		c.ID = h
	}
	if c.Origin == nil {
		return fmt.Errorf("%w: no origin store configured", ErrInvalidConfig)
	}
	if c.GossipAddr == "" {
		c.GossipAddr = DefaultGossipAddr
	}
	if c.GRPCAddr == "" {
		c.GRPCAddr = DefaultGRPCAddr
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = DefaultHTTPAddr
	}
	if c.JoinTimeout == 0 {
		c.JoinTimeout = DefaultJoinTimeout
	}
	if c.Slots == 0 {
		c.Slots = DefaultSlots
	}
	if c.PageSize == 0 {
		c.PageSize = DefaultPageSize
	}
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	if c.Replication == 0 {
		c.Replication = DefaultReplication
	}
	if c.StatTTL == 0 {
		c.StatTTL = DefaultStatTTL
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.PeerIdleTimeout == 0 {
		c.PeerIdleTimeout = DefaultPeerIdleTimeout
	}
	if c.PeerBackoff == 0 {
		c.PeerBackoff = DefaultPeerBackoff
	}
	if c.CacheDir == "" && c.MemorySize == 0 {
		c.MemorySize = DefaultMemorySize
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	switch {
	case c.Slots < 0:
		return fmt.Errorf("%w: slots %d < 0", ErrInvalidConfig, c.Slots)
	case c.PageSize < 0 || c.BlockSize < 0:
		return fmt.Errorf("%w: page size %d and block size %d must be > 0", ErrInvalidConfig, c.PageSize, c.BlockSize)
	case c.PageSize%512 != 0 || c.PageSize < cache.MinPageSize || c.PageSize > cache.MaxPageSize:
		return fmt.Errorf("%w: --page-size %s: want a multiple of 512 bytes from %s to %s that divides --block-size",
			ErrInvalidConfig, membership.FormatBytes(int64(c.PageSize)), membership.FormatBytes(cache.MinPageSize), membership.FormatBytes(cache.MaxPageSize))
	case c.BlockSize%int64(c.PageSize) != 0:
		return fmt.Errorf("%w: page size %s does not divide block size %s", ErrInvalidConfig,
			membership.FormatBytes(int64(c.PageSize)), membership.FormatBytes(c.BlockSize))
	case c.CacheSize < 0 || c.MemorySize < 0:
		return fmt.Errorf("%w: cache size %d and memory size %d must be >= 0", ErrInvalidConfig, c.CacheSize, c.MemorySize)
	case c.CacheDir != "" && c.CacheSize == 0:
		return fmt.Errorf("%w: a cache directory needs a cache size (--cache-size)", ErrInvalidConfig)
	case c.CacheDir != "" && c.CacheSize < cache.MinDiskCapacity(c.PageSize):
		return fmt.Errorf("%w: --cache-size %s holds no page of --page-size %s with its header: want at least %s",
			ErrInvalidConfig, membership.FormatBytes(c.CacheSize), membership.FormatBytes(int64(c.PageSize)), membership.FormatBytes(cache.MinDiskCapacity(c.PageSize)))
	case c.CacheDir == "" && c.MemorySize < int64(c.PageSize):
		return fmt.Errorf("%w: --memory-size %s holds no page of --page-size %s: want at least one page (or a --cache-dir)",
			ErrInvalidConfig, membership.FormatBytes(c.MemorySize), membership.FormatBytes(int64(c.PageSize)))
	case c.Replication < 0 || c.Replication > membership.MaxReplication:
		return fmt.Errorf("%w: --replication %d: want 1 to %d (0: the default, %d)", ErrInvalidConfig, c.Replication, membership.MaxReplication, DefaultReplication)
	case c.StatTTL < 0 || c.DrainTimeout < 0 || c.JoinTimeout < 0 || c.PeerIdleTimeout < 0 || c.PeerBackoff < 0:
		return fmt.Errorf("%w: negative duration (--stat-ttl %v, --drain-timeout %v, --join-timeout %v, --peer-idle-timeout %v, --peer-backoff %v): want 0 (the default) or more",
			ErrInvalidConfig, c.StatTTL, c.DrainTimeout, c.JoinTimeout, c.PeerIdleTimeout, c.PeerBackoff)
	case (c.TLSCertFile == "") != (c.TLSKeyFile == ""):
		return fmt.Errorf("%w: --tls-cert and --tls-key go together", ErrInvalidConfig)
	case c.TLSCAFile != "" && c.TLSCertFile == "":
		return fmt.Errorf("%w: --tls-ca needs --tls-cert and --tls-key (the node presents its certificate to peers)", ErrInvalidConfig)
	}
	return nil
}
