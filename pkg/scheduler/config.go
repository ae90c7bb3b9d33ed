package scheduler

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/placement"
	"github.com/locuscache/locus/pkg/schedapi"
)

// Defaults for the zero fields of Config (DESIGN.md fixes the addresses and
// the locality wait).
const (
	DefaultHTTPAddr = "127.0.0.1:8080"
	DefaultGRPCAddr = "127.0.0.1:7071"
	// DefaultGossipAddr is one port above the cache node's default
	// (membership.DefaultBindAddr, 127.0.0.1:7946), so a scheduler and a
	// node started with their defaults on one host do not collide.
	DefaultGossipAddr   = "127.0.0.1:7947"
	DefaultLocalityWait = 3 * time.Second
	// DefaultReplication is the replication placement uses while no cache
	// node announces one (see Config.Replication): the nodes' default.
	DefaultReplication   = membership.DefaultReplication
	DefaultMaxQueueWait  = 30 * time.Second
	DefaultMaxWait       = 10 * time.Minute
	DefaultMaxBatchTasks = 100000
	// DefaultMaxBodyBytes bounds the body of a single call (place,
	// complete): far above any sane request (a 4 KiB URI and names).
	DefaultMaxBodyBytes = 64 << 10
	// DefaultMaxBatchBodyBytes bounds a batch body: 100k tasks of about
	// 150 bytes each.
	DefaultMaxBatchBodyBytes = 16 << 20
	DefaultJoinTimeout       = 30 * time.Second
	DefaultLostLog           = 10000
	DefaultEtcdPrefix        = "/locus/"
	DefaultEtcdSessionTTL    = 5 * time.Second
	DefaultEtcdDialTimeout   = 5 * time.Second
	DefaultEtcdOpTimeout     = 5 * time.Second
	// Limits on names in requests (schedapi's).
	MaxNameLen = schedapi.MaxNameLen // job and task ids
	MaxURILen  = schedapi.MaxURILen  // split URIs
)

// NoLocalityWait, as Config.LocalityWait, means tasks do not wait for a
// better locality level (the flag --locality-wait=0). The zero value means
// DefaultLocalityWait.
const NoLocalityWait time.Duration = -1

// Membership is what the scheduler needs from cluster membership: the
// current View, a way to wait for the next one, and a way out.
// *membership.Membership implements it; tests pass schedulertest.Views.
type Membership interface {
	// View returns the current membership and ring; never nil.
	View() *membership.View
	// WaitFor blocks until cond holds for the current View and returns it,
	// or returns with ctx's error.
	WaitFor(ctx context.Context, cond func(*membership.View) bool) (*membership.View, error)
	// Leave says goodbye to the cluster and shuts down.
	Leave(ctx context.Context) error
}

// Config configures a Scheduler. Zero fields take the defaults named in
// their comments; New checks the rest (ErrInvalidConfig).
type Config struct {
	// NodeID names the scheduler in the gossip (an observer: it owns no
	// ring range) and in the etcd election. Default "scheduler-" + the
	// host name. [A-Za-z0-9._-], as membership ids.
	NodeID string

	// GossipAddr is the memberlist bind address "ip:port" (default
	// 127.0.0.1:7947; port 0 picks a free one); GossipAdvertiseAddr the
	// address others reach it at when different.
	GossipAddr          string
	GossipAdvertiseAddr string
	// GossipKeyFile names the gossip encryption key file, shared by all
	// members (optional).
	GossipKeyFile string
	// GossipTuning sets the failure detector timings. The zero value is
	// membership.LANTuning (a crashed node is declared dead in about 3-7 s);
	// tests and single-host clusters use membership.LoopbackTuning (about
	// 1-1.5 s). A dead node's running tasks are reported lost, and new
	// tasks avoid it, as soon as the gossip declares it dead.
	GossipTuning membership.Tuning
	// Join lists gossip seeds "host:port". Start retries them for
	// JoinTimeout (default 30s) while none answers; empty starts alone
	// (cache nodes may join the scheduler later).
	Join        []string
	JoinTimeout time.Duration
	// Membership, if set, replaces the gossip membership Start would
	// create; the Gossip* and Join fields are then ignored.
	Membership Membership

	// HTTPAddr and GRPCAddr are the listen addresses (defaults
	// 127.0.0.1:8080 and 127.0.0.1:7071; port 0 picks a free port).
	HTTPAddr string
	GRPCAddr string
	// HTTPAdvertiseAddr and GRPCAdvertiseAddr are what the scheduler
	// announces (in its gossip metadata and as the etcd leader) when the
	// listen address is not reachable as is (0.0.0.0). Default: the bound
	// address.
	HTTPAdvertiseAddr string
	GRPCAdvertiseAddr string
	// TLS, if set, serves both listeners over TLS (ClientAuth as
	// configured: cmd/scheduler requires client certificates when --tls-ca
	// is given).
	TLS *tls.Config
	// ClientTLS is used to dial another scheduler (a follower forwarding
	// to the leader, Etcd.Forward) when TLS is on: the CA to verify it,
	// and the client certificate when it requires one.
	ClientTLS *tls.Config
	// ClientTLSFor, if set, is called for each new connection to another
	// scheduler and its configuration used instead of ClientTLS
	// (cmd/scheduler: ClientTLS trusting the --tls-ca bundle as it is
	// then, so a rotated CA needs no restart).
	ClientTLSFor func() *tls.Config

	// BlockSize is the cluster block size used to compute placement keys.
	// 0 (default) takes the cache nodes' (View.BlockSize), 128 MiB while
	// no cache node is known. When set and the cache nodes announce
	// another, placement answers ErrUnavailable rather than computing
	// wrong keys. Etcd's cluster config overrides it.
	BlockSize int64
	// Replication is the length of a split's preference list: a task on
	// any node of it is DATA_LOCAL. It belongs to the cache nodes: they
	// announce theirs in the gossip (all the same: the membership refuses a
	// node that differs), since a node serves a block from its own cache
	// only when it is in the block's list, and the scheduler must count
	// DATA_LOCAL exactly the tasks that read their node's cache. So 0 (the
	// default) takes the nodes' (View.Replication), DefaultReplication (2)
	// while no cache node is known; and a value set here (or in etcd's
	// cluster config, which overrides it) that differs from the nodes' is
	// logged as a warning and the NODES' value is used for placement.
	// 0..placement.MaxPrefer.
	Replication int
	// LocalityWait is how long a task waits for a data-local slot before
	// stepping down to rack-local, and as long again before any node
	// (delay scheduling; DESIGN's --locality-wait). Zero means
	// DefaultLocalityWait (3s), NoLocalityWait no wait. A request's
	// wait_ms overrides it. Etcd's cluster config overrides it.
	LocalityWait time.Duration

	// MaxQueueWait bounds how long a Place (or a batch) waits for a slot
	// once queued (default 30s); then the task is cancelled and the call
	// answers ErrNoNode (503).
	MaxQueueWait time.Duration
	// MaxWait bounds a request's wait_ms (default 10 minutes); larger
	// values are ErrBadRequest.
	MaxWait time.Duration
	// MaxBatchTasks bounds the tasks of one batch (default 100000).
	MaxBatchTasks int
	// MaxBodyBytes bounds the body of single calls (default 64 KiB),
	// MaxBatchBodyBytes that of batch calls (default 16 MiB); larger
	// bodies get 413.
	MaxBodyBytes      int64
	MaxBatchBodyBytes int64

	// AuthToken, if set, is the bearer token mutating calls (POST, and the
	// gRPC Place, PlaceBatch, Complete and CompleteBatch) must carry:
	// "Authorization: Bearer <token>". Reads (GET, JobCounters, Ring) stay
	// open.
	AuthToken string

	// Etcd enables high availability: leader election, the cluster config
	// and persisted counters. Empty Endpoints: standalone, in memory.
	Etcd EtcdConfig

	// LostLog is how many recently lost tasks GET /v1/lost remembers
	// (default 10000).
	LostLog int

	// Placement configures the placement core (queue and job limits).
	Placement placement.Config

	// Logger receives the scheduler's structured logs. Default
	// slog.Default().
	Logger *slog.Logger
}

// EtcdConfig configures the scheduler's use of etcd. See the package
// documentation for the key layout.
type EtcdConfig struct {
	// Endpoints are etcd client URLs or host:port; empty disables etcd.
	Endpoints []string
	// Prefix of every key (default "/locus/"); it must end in "/".
	Prefix string
	// SessionTTL is the lease TTL of the leader's election key (default
	// 5s, whole seconds, at least 1s): a killed leader is replaced about
	// this long after it stopped renewing.
	SessionTTL time.Duration
	// DialTimeout bounds connecting (default 5s); OpTimeout each etcd call
	// (default 5s).
	DialTimeout time.Duration
	OpTimeout   time.Duration
	// Username and Password authenticate to etcd (optional).
	Username string
	Password string
	// TLS for the etcd client (optional). With it every endpoint must be
	// TLS (https://): the etcd client dials an http:// or unix:// URL in
	// plaintext, leaving TLS unused.
	TLS *tls.Config
	// Credentials, when set, are the gRPC transport credentials of every
	// etcd connection, in place of the ones the etcd client builds from
	// TLS once: the daemon passes ones that check etcd against the CA
	// bundle as it is at each handshake (--etcd-tls-ca is read again when
	// its file changes). With them every endpoint is dialed over TLS, so
	// none may be an http:// or unix:// URL.
	Credentials credentials.TransportCredentials
	// Forward makes followers proxy mutating HTTP calls to the leader
	// instead of answering 503 naming it, and GET /v1/ring and /v1/lost
	// (slot use, queued and lost tasks are the leader's placer state).
	Forward bool
}

// Enabled reports whether etcd is configured.
func (e EtcdConfig) Enabled() bool { return len(e.Endpoints) > 0 }

// validate fills defaults and checks every field; see the field docs.
func (c *Config) validate() error {
	if c.NodeID == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "local"
		}
		c.NodeID = "scheduler-" + sanitizeID(h)
	}
	if err := (membership.NodeMeta{ID: c.NodeID, Role: membership.RoleObserver, ProtocolVersion: membership.ProtocolVersion}).Validate(); err != nil {
		return fmt.Errorf("%w: node id: %v", ErrInvalidConfig, err)
	}
	def := func(s *string, d string) {
		if *s == "" {
			*s = d
		}
	}
	def(&c.GossipAddr, DefaultGossipAddr)
	def(&c.HTTPAddr, DefaultHTTPAddr)
	def(&c.GRPCAddr, DefaultGRPCAddr)
	def(&c.Etcd.Prefix, DefaultEtcdPrefix)
	defDur := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	defDur(&c.JoinTimeout, DefaultJoinTimeout)
	defDur(&c.LocalityWait, DefaultLocalityWait)
	defDur(&c.MaxQueueWait, DefaultMaxQueueWait)
	defDur(&c.MaxWait, DefaultMaxWait)
	defDur(&c.Etcd.SessionTTL, DefaultEtcdSessionTTL)
	defDur(&c.Etcd.DialTimeout, DefaultEtcdDialTimeout)
	defDur(&c.Etcd.OpTimeout, DefaultEtcdOpTimeout)
	if c.MaxBatchTasks == 0 {
		c.MaxBatchTasks = DefaultMaxBatchTasks
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxBatchBodyBytes == 0 {
		c.MaxBatchBodyBytes = DefaultMaxBatchBodyBytes
	}
	if c.LostLog == 0 {
		c.LostLog = DefaultLostLog
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	switch {
	case c.BlockSize < 0:
		return fmt.Errorf("%w: block size %d < 0", ErrInvalidConfig, c.BlockSize)
	case c.Replication < 0 || c.Replication > placement.MaxPrefer:
		return fmt.Errorf("%w: replication %d outside [0, %d] (0: the cache nodes')", ErrInvalidConfig, c.Replication, placement.MaxPrefer)
	case c.LocalityWait < 0 && c.LocalityWait != NoLocalityWait:
		return fmt.Errorf("%w: locality wait %v < 0 (use NoLocalityWait for none)", ErrInvalidConfig, c.LocalityWait)
	case c.MaxQueueWait < 0 || c.MaxWait < 0 || c.JoinTimeout < 0:
		return fmt.Errorf("%w: negative duration (max queue wait %v, max wait %v, join timeout %v)", ErrInvalidConfig, c.MaxQueueWait, c.MaxWait, c.JoinTimeout)
	case c.MaxBatchTasks < 0 || c.MaxBodyBytes < 0 || c.MaxBatchBodyBytes < 0 || c.LostLog < 0:
		return fmt.Errorf("%w: negative limit (--max-batch-tasks %d, --max-body-bytes %d, --max-batch-body-bytes %d, lost-log %d): want 0 (the default) or more",
			ErrInvalidConfig, c.MaxBatchTasks, c.MaxBodyBytes, c.MaxBatchBodyBytes, c.LostLog)
	case c.AuthToken != strings.TrimSpace(c.AuthToken):
		return fmt.Errorf("%w: the auth token has leading or trailing white space", ErrInvalidConfig)
	case strings.IndexFunc(c.AuthToken, notTokenChar) >= 0:
		return fmt.Errorf("%w: the auth token has a character a bearer token cannot carry (a line break, a space?): want one line of letters, digits and -._~+/= (RFC 6750)", ErrInvalidConfig)
	}
	if c.Etcd.Enabled() {
		switch {
		case !strings.HasPrefix(c.Etcd.Prefix, "/") || !strings.HasSuffix(c.Etcd.Prefix, "/"):
			return fmt.Errorf("%w: etcd prefix %q must start and end with '/'", ErrInvalidConfig, c.Etcd.Prefix)
		case c.Etcd.SessionTTL < time.Second:
			return fmt.Errorf("%w: etcd session TTL %v is below 1s", ErrInvalidConfig, c.Etcd.SessionTTL)
		case c.Etcd.DialTimeout < 0 || c.Etcd.OpTimeout < 0:
			return fmt.Errorf("%w: negative etcd timeout", ErrInvalidConfig)
		}
		if c.Etcd.Credentials != nil || c.Etcd.TLS != nil {
			for _, ep := range c.Etcd.Endpoints {
				if plaintextEndpoint(ep) {
					return fmt.Errorf("%w: etcd endpoint %q is not TLS but etcd TLS is configured (--etcd-tls-ca, --etcd-tls-cert): write it as https://host:port", ErrInvalidConfig, ep)
				}
			}
		}
	}
	if _, err := placement.New(c.Placement); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return nil
}

// plaintextEndpoint reports whether the etcd client would dial ep without
// TLS (an http:// or unix:// URL; etcd's endpoint.RequiresCredentials).
func plaintextEndpoint(ep string) bool {
	ep = strings.ToLower(ep)
	return strings.HasPrefix(ep, "http://") || strings.HasPrefix(ep, "unix:") && !strings.HasPrefix(ep, "unixs:")
}

// sanitizeID maps a host name onto the membership id alphabet.
func sanitizeID(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) > 100 {
		b = b[:100]
	}
	return string(b)
}

// Settings are the cluster settings placement uses. They come from Config
// and, with etcd, from the cluster config key, which overrides Config and
// is watched: a change applies to the next placements.
type Settings struct {
	// BlockSize in bytes; 0 = the cache nodes'.
	BlockSize int64 `json:"block_size,omitempty"`
	// Replication: the configured preference list length; 0 = the cache
	// nodes'. Placement uses the nodes' whenever they announce one (see
	// Config.Replication and Scheduler.Replication).
	Replication int `json:"replication,omitempty"`
	// LocalityWait: default wait per locality level; NoLocalityWait = none.
	LocalityWait time.Duration `json:"-"`
}

// wait returns the task wait for a request's wait_ms.
func (s *Settings) wait(waitMS int64) time.Duration {
	def := s.LocalityWait
	if def < 0 {
		def = 0
	}
	return placement.WaitFromMillis(waitMS, def)
}

// notTokenChar reports whether r is outside RFC 6750's b64token alphabet
// (letters, digits, "-._~+/" and trailing "="), the characters an
// Authorization: Bearer header carries.
func notTokenChar(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return false
	}
	return !strings.ContainsRune("-._~+/=", r)
}
