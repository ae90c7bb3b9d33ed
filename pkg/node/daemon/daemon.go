// Package daemon is the cache node daemon behind cmd/cachenode: its flags
// (DESIGN.md's names, each also settable as a LOCUS_* environment
// variable through internal/flagenv), the origin it builds from them (S3
// always, with the standard AWS credential chain; file:// under
// --origin-file-root), the S3 gateway on the HTTP listener, structured logs
// on stderr, and the signal handling: SIGTERM or SIGINT drains the node
// (membership state draining, /readyz 503, in-flight reads finish, at most
// --drain-timeout), leaves the cluster, closes the cache and exits 0.
//
// It is a package rather than cmd/cachenode's main so that tests can run the
// daemon by re-executing their own binary (nodetest.RunIfDaemon) instead of
// building one.
//
// Sizes take plain bytes or units: 134217728, 128MiB, 10GiB, 1g, 1.5GiB,
// 500MB (KiB, MiB, GiB, TiB and k, m, g, t are binary; KB, MB, GB, TB
// decimal).
package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/locuscache/locus/internal/daemonmain"
	"github.com/locuscache/locus/internal/flagenv"
	"github.com/locuscache/locus/internal/units"
	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/gateway"
	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/node"
	"github.com/locuscache/locus/pkg/origin"
)

const summary = `cachenode: the Locus cache node.

It caches pages of data-lake objects (s3://bucket/key through the S3 origin,
file:///path under --origin-file-root) in RAM (--memory-size) and on disk
(--cache-dir, --cache-size), owns the blocks the consistent-hash ring gives
it (--block-size, the same on every node), and reads the blocks other nodes
own through them. It serves gRPC (--grpc-addr: CacheService, health,
reflection) and HTTP (--http-addr: /metrics, /healthz, /readyz and an
S3-compatible GET/HEAD gateway). Start the first node without --join, the
others with --join=<a member's --gossip-addr>.

Sizes take plain bytes or units: 134217728, 128MiB, 10GiB, 1g, 500MB.
S3 credentials come from the standard AWS chain (AWS_ACCESS_KEY_ID, ~/.aws, roles).
SIGTERM or SIGINT drains the node (state draining, in-flight reads finish),
leaves the cluster and exits 0; the disk cache survives for a warm restart.

Usage: cachenode [flags]`

// options are the parsed flags.
type options struct {
	nodeID, rack                       string
	gossipAddr, gossipAdvertise        string
	join                               []string
	grpcAddr, grpcAdvertise            string
	httpAddr, httpAdvertise            string
	cacheDir                           string
	cacheSize, memorySize              int64
	blockSize, pageSize                int64
	slots, replication                 int
	cachePolicy                        string
	cacheVerify                        string
	s3Endpoint, s3Region               string
	s3PathStyle                        bool
	fileRoot                           string
	fileVersion                        string
	gossipKeyFile                      string
	gossipTuning                       string
	tlsCert, tlsKey, tlsCA             string
	statTTL, drainTimeout, joinTimeout time.Duration
	peerIdleTimeout                    time.Duration
	log                                daemonmain.LogFlags
	sizer                              bool
	gatewayRegion                      string
	gatewayLenientRange                bool
	gatewayBuckets                     []string
	s3Timeout                          time.Duration
}

func newFlags(o *options, stderr io.Writer) *flag.FlagSet {
	fs := daemonmain.NewFlagSet("cachenode", summary, stderr, &o.log)
	fs.StringVar(&o.nodeID, "node-id", "", "node id, unique in the cluster (default: the host name)")
	fs.StringVar(&o.rack, "rack", "", "rack (failure domain) of this node, for rack-aware placement")
	fs.StringVar(&o.gossipAddr, "gossip-addr", node.DefaultGossipAddr, "gossip (memberlist) listen address ip:port, UDP and TCP")
	fs.StringVar(&o.gossipAdvertise, "gossip-advertise-addr", "", "gossip address announced to others, when --gossip-addr is not reachable as is (0.0.0.0, NAT)")
	fs.Var(flagenv.List(&o.join), "join", "comma-separated gossip addresses (host:port) of cluster members to join; empty starts a new cluster")
	fs.StringVar(&o.grpcAddr, "grpc-addr", node.DefaultGRPCAddr, "gRPC listen address (CacheService, health, reflection)")
	fs.StringVar(&o.grpcAdvertise, "grpc-advertise-addr", "", "gRPC address announced to the cluster (needed when --grpc-addr is 0.0.0.0)")
	fs.StringVar(&o.httpAddr, "http-addr", node.DefaultHTTPAddr, "HTTP listen address (/metrics, /healthz, /readyz, S3 gateway)")
	fs.StringVar(&o.httpAdvertise, "http-advertise-addr", "", "HTTP address announced to the cluster (needed when --http-addr is 0.0.0.0)")
	fs.StringVar(&o.cacheDir, "cache-dir", "", "directory of the disk cache (slab files; reused on restart); empty: RAM only")
	fs.Var(units.Flag(&o.cacheSize), "cache-size", "disk cache size, required with --cache-dir; the files never grow past it")
	fs.Var(units.Flag(&o.memorySize), "memory-size", "RAM for page data: the whole cache without --cache-dir (default 1GiB then), a RAM tier over the disk with it (default none; the whole cache if no slab fits on a full disk)")
	fs.Var(units.Flag(&o.blockSize), "block-size", "cluster block size, the unit of ring ownership; must be the same on every node (default 128MiB)")
	fs.Var(units.Flag(&o.pageSize), "page-size", "cache page size; must divide --block-size (default 1MiB)")
	fs.IntVar(&o.slots, "slots", node.DefaultSlots, "executor slots announced to the scheduler")
	fs.IntVar(&o.replication, "replication", node.DefaultReplication, "cluster replication: the nodes of a block's preference list, which cache it and where its tasks count as DATA_LOCAL; must be the same on every node (a node that differs is refused) and the scheduler takes it from the nodes")
	fs.StringVar(&o.cachePolicy, "cache-policy", "", "cache eviction policy: locus or lru (default locus)")
	fs.StringVar(&o.cacheVerify, "cache-verify", "first-read", "when disk pages' checksums are checked: first-read (the first read after a restart re-indexed the page; pages this process wrote are trusted, but pages served to other nodes' peer reads are always checked) or always (every read, for disks not trusted to return what was written; gRPC reads of disk hits run at about 0.65x, BENCHMARKS.md)")
	fs.BoolVar(&o.sizer, "cache-sizing", true, "estimate the hit ratio at 0.25x-4x the cache's size, simulating its own policy on a sample of page reads (locus_cache_estimated_hit_ratio; locusctl sizing); costs per page read on average: ~10ns at a million pages, ~0.35us at ~1,000, more on smaller caches (~5us at 64 pages)")
	fs.StringVar(&o.s3Endpoint, "origin-s3-endpoint", "", "S3 endpoint URL for S3-compatible stores, e.g. http://127.0.0.1:9000 (default: AWS)")
	fs.StringVar(&o.s3Region, "origin-s3-region", "", "S3 region (default: from the AWS configuration, else us-east-1)")
	fs.BoolVar(&o.s3PathStyle, "origin-s3-path-style", false, "address S3 buckets by path (http://host/bucket/key), as most S3-compatible stores need")
	fs.DurationVar(&o.s3Timeout, "origin-s3-timeout", origin.DefaultS3Timeout, "bound on one S3 call, retries included")
	fs.StringVar(&o.fileRoot, "origin-file-root", "", "the only directory file:// URIs may name; empty: no file:// origin")
	fs.StringVar(&o.fileVersion, "origin-file-version", "identity", "what a file's version is made of: identity (size, mtime, inode and ctime: a file replaced by rename is always a new version) or mtime (size and mtime only, for a root each node mounts itself with inode numbers of its own, such as FUSE, where identity versions would differ between nodes; a same-size replacement that keeps the old mtime, as rsync -a or cp -p make, or one within one tick of the file clock, then goes unseen)")
	fs.StringVar(&o.gossipKeyFile, "gossip-key-file", "", "file holding the gossip encryption key (16, 24 or 32 bytes, raw or base64); the same on every node")
	fs.StringVar(&o.gossipTuning, "gossip-tuning", "lan", "failure detector timings: lan (a dead node is detected in 3-7s) or loopback (1-3s; for single-host clusters)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "PEM certificate: enables TLS on gRPC and HTTP (with --tls-key); it, the key and --tls-ca are read again when their files change")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&o.tlsCA, "tls-ca", "", "PEM CA: require client certificates signed by it (mTLS) and verify peers with it")
	fs.DurationVar(&o.statTTL, "stat-ttl", node.DefaultStatTTL, "how long an object's size and version are trusted before asking the origin again: after a rewrite in the origin, reads whose pages are all cached may serve the previous version (whole, never mixed) for up to this long; lower it for fresher reads at the cost of more HEAD requests to the origin")
	fs.DurationVar(&o.drainTimeout, "drain-timeout", node.DefaultDrainTimeout, "on SIGTERM, how long to wait for in-flight reads before leaving; the whole shutdown takes at most this plus 15s (set Kubernetes' terminationGracePeriodSeconds above that)")
	fs.DurationVar(&o.joinTimeout, "join-timeout", node.DefaultJoinTimeout, "how long to keep retrying --join while no member answers")
	fs.DurationVar(&o.peerIdleTimeout, "peer-idle-timeout", node.DefaultPeerIdleTimeout, "a peer read silent this long continues from the next node of the block's preference list, or from the origin when none is left")
	fs.StringVar(&o.gatewayRegion, "gateway-region", "", "region the S3 gateway reports for GetBucketLocation")
	fs.BoolVar(&o.gatewayLenientRange, "gateway-lenient-range", false, "serve the whole object for a malformed Range header, as AWS does (default: 400)")
	fs.Var(flagenv.List(&o.gatewayBuckets), "gateway-bucket", "comma-separated name=uri-prefix mappings for the S3 gateway, e.g. lake=s3://prod/tables/,local=file:///data/; empty: every bucket is itself")
	return fs
}

// Main runs the cache node daemon with the given arguments (without the
// program name), environment lookup (os.LookupEnv) and standard error, until
// SIGTERM or SIGINT, and returns the exit code: 0 after a clean shutdown, 2
// for bad flags, 1 for any other failure (with a one-line reason on
// stderr).
func Main(args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	var o options
	fs := newFlags(&o, stderr)
	d, code, ok := daemonmain.Parse(fs, args, lookup, &o.log, stdout)
	if !ok {
		return code
	}
	ctx, stop := daemonmain.SignalContext(context.Background())
	defer stop()
	if err := serve(ctx, o, d.Log); err != nil {
		if isUsage(err) {
			return d.Fail(daemonmain.ExitUsage, err)
		}
		return d.Fail(daemonmain.ExitFailure, err)
	}
	return daemonmain.ExitOK
}

// errUsage marks an error in a flag's value found after parsing.
var errUsage = errors.New("bad flag value")

// usageErrorf is an error in a flag's value: Main exits with ExitUsage.
func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// usageError reads as its own message and matches errUsage.
type usageError struct{ err error }

func (u usageError) Error() string        { return u.err.Error() }
func (u usageError) Unwrap() error        { return u.err }
func (u usageError) Is(target error) bool { return target == errUsage }

// isUsage reports whether err is about the command line (a flag's value,
// an impossible combination, a key file of the wrong length) rather than
// the running system: Main exits with ExitUsage (2) for those, as for a
// flag that does not parse.
func isUsage(err error) bool {
	var ae *net.AddrError // "missing port in address": a malformed --*-addr, not one that cannot be bound
	if errors.As(err, &ae) {
		return true
	}
	for _, sentinel := range []error{errUsage, node.ErrInvalidConfig, cache.ErrInvalidConfig,
		gateway.ErrInvalidConfig, membership.ErrInvalidConfig, membership.ErrInvalidMeta, membership.ErrKeyLength, membership.ErrBadAddress} {
		if errors.Is(err, sentinel) {
			return true
		}
	}
	return false
}

// serve runs the node until ctx ends (a signal), then stops it.
func serve(ctx context.Context, o options, log *slog.Logger) error {
	var nodeRef atomic.Pointer[node.Node]
	store, err := buildOrigin(ctx, o, log, func(a origin.Attempt) {
		if n := nodeRef.Load(); n != nil {
			n.ObserveOriginAttempt(a)
		}
	})
	if err != nil {
		return err
	}
	var tuning membership.Tuning
	switch o.gossipTuning {
	case "lan":
		tuning = membership.LANTuning()
	case "loopback":
		tuning = membership.LoopbackTuning()
	default:
		return usageErrorf("--gossip-tuning %q: want lan or loopback", o.gossipTuning)
	}
	var verifyAlways bool
	switch o.cacheVerify {
	case "first-read", "":
	case "always":
		verifyAlways = true
	default:
		return usageErrorf("--cache-verify %q: want first-read or always", o.cacheVerify)
	}
	if o.pageSize > 1<<30 {
		return usageErrorf("--page-size %s is too large: want at most %s", units.FormatBytes(o.pageSize), units.FormatBytes(cache.MaxPageSize))
	}
	if o.slots == 0 {
		// node.Config reads 0 as its default; the flag's default is
		// already that, so a 0 here is the operator's and must not be
		// announced as another number.
		return usageErrorf("--slots 0: want at least 1 executor slot (the scheduler places tasks only on nodes with slots)")
	}
	buckets, err := parseBuckets(o.gatewayBuckets)
	if err != nil {
		return err
	}
	cfg := node.Config{
		ID: o.nodeID, Rack: o.rack,
		GossipAddr: o.gossipAddr, GossipAdvertiseAddr: o.gossipAdvertise, GossipKeyFile: o.gossipKeyFile,
		GossipTuning: tuning, Join: o.join, JoinTimeout: o.joinTimeout,
		GRPCAddr: o.grpcAddr, GRPCAdvertiseAddr: o.grpcAdvertise,
		HTTPAddr: o.httpAddr, HTTPAdvertiseAddr: o.httpAdvertise,
		Slots:    o.slots,
		CacheDir: o.cacheDir, CacheSize: o.cacheSize, MemorySize: o.memorySize,
		PageSize: int(o.pageSize), BlockSize: o.blockSize, CachePolicy: o.cachePolicy, CacheSizer: o.sizer,
		CacheVerifyAlways: verifyAlways,
		Replication:       o.replication,
		Origin:            store, StatTTL: o.statTTL,
		TLSCertFile: o.tlsCert, TLSKeyFile: o.tlsKey, TLSCAFile: o.tlsCA,
		DrainTimeout: o.drainTimeout, PeerIdleTimeout: o.peerIdleTimeout,
		Logger: log,
		Gateway: func(n *node.Node) (http.Handler, error) {
			return gateway.New(gateway.Config{
				Backend: n, Buckets: buckets, Region: o.gatewayRegion, LenientRange: o.gatewayLenientRange,
				// Directory markers ("dir/" objects) are no objects to the
				// cluster: read from the origin, uncached.
				DirectoryMarkers: gateway.StoreBackend{Store: n.Origin()},
				Logger:           log.With("component", "gateway"),
			})
		},
	}
	n, err := node.New(cfg)
	if err != nil {
		return err
	}
	nodeRef.Store(n)
	if err := n.Start(ctx); err != nil {
		n.Abort()
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			log.Info("signal received while starting; stopped", "err", err)
			return nil
		}
		return err
	}
	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("signal received: draining", "drain_timeout", o.drainTimeout)
	case serveErr = <-n.ServeErr():
		log.Error("server failed; stopping", "err", serveErr)
	}
	sctx, cancel := context.WithTimeout(context.Background(), o.drainTimeout+15*time.Second)
	defer cancel()
	if err := n.Stop(sctx); err != nil {
		log.Warn("shutdown", "err", err)
	}
	return serveErr
}

// buildOrigin builds the origin store: S3 always (credentials from the AWS
// chain), files when --origin-file-root is set.
func buildOrigin(ctx context.Context, o options, log *slog.Logger, observe func(origin.Attempt)) (origin.Store, error) {
	// The S3 store refuses these too, but as a configuration it cannot
	// run: they are flag values (exit 2), named as such.
	if o.s3Timeout < 0 {
		return nil, usageErrorf("--origin-s3-timeout %s: want 0 (the default, %s) or more", o.s3Timeout, origin.DefaultS3Timeout)
	}
	if e := o.s3Endpoint; e != "" && !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") {
		return nil, usageErrorf("--origin-s3-endpoint %q: want a URL starting with http:// or https://, e.g. http://127.0.0.1:9000", e)
	}
	s3s, err := origin.NewS3Store(ctx, origin.S3Config{
		Endpoint: o.s3Endpoint, Region: o.s3Region, PathStyle: o.s3PathStyle,
		Timeout: o.s3Timeout, Observe: observe, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("S3 origin: %w", err)
	}
	routes := map[string]origin.Store{origin.SchemeS3: s3s}
	var mtimeVersions bool
	switch o.fileVersion {
	case "identity", "":
	case "mtime":
		mtimeVersions = true
	default:
		return nil, usageErrorf("--origin-file-version %q: want identity or mtime", o.fileVersion)
	}
	if o.fileRoot != "" {
		fsx, err := origin.NewFileStore(origin.FileConfig{Root: o.fileRoot, SizeMtimeVersions: mtimeVersions})
		if err != nil {
			return nil, fmt.Errorf("--origin-file-root: %w", err)
		}
		routes[origin.SchemeFile] = fsx
	}
	return origin.NewRouter(routes)
}

// parseBuckets parses --gateway-bucket name=prefix pairs.
func parseBuckets(pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		name, prefix, ok := strings.Cut(p, "=")
		if !ok || name == "" || prefix == "" {
			return nil, usageErrorf("--gateway-bucket %q: want name=uri-prefix", p)
		}
		if prev, dup := m[name]; dup {
			return nil, usageErrorf("--gateway-bucket: bucket %q is mapped twice (to %s and %s)", name, prev, prefix)
		}
		m[name] = prefix
	}
	return m, nil
}
