package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/locuscache/locus/internal/tlsreload"
	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/cache/mrc"
	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/parquetx"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// Node lifecycle states.
const (
	stateNew int32 = iota
	stateReady
	stateDraining
	stateStopped
)

// ServiceName is the gRPC service name the health service reports on (the
// empty name "" reports the same).
const ServiceName = "locus.cache.v1.CacheService"

// Node is a Locus cache node: a page cache, a seat in the cluster gossip, a
// gRPC CacheService and an HTTP listener (metrics, health, the S3 gateway).
// Create it with New, then Start; Stop drains and leaves. All methods are
// safe for concurrent use.
type Node struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	stats   *origin.StatCache
	origin  origin.Store // cfg.Origin, its calls counted (countingStore)
	cache   *cache.Cache
	footers *parquetx.FooterCache
	// notParquet: object versions whose magic said not Parquet, or whose
	// footer is not usable (footer)
	notParquet keySet
	members    Membership
	gossip     *membership.Membership // nil when Config.Membership was given
	peers      *peerPool
	fills      fillLog // recent fills through earlier list nodes (fill.go)
	tls        *tlsSetup

	grpcLis, httpLis   net.Listener
	grpcAddr, httpAddr string // advertised
	grpcSrv            *grpc.Server
	httpSrv            *http.Server
	health             *health.Server

	state    atomic.Int32
	started  atomic.Bool
	mu       sync.Mutex // guards active and zero
	active   int64
	zero     chan struct{} // closed when active drops to 0
	stopOnce sync.Once
	stopErr  error
	done     chan struct{} // closed by Stop and Abort
	bg       sync.WaitGroup
	serveErr chan error
}

// New builds a node from cfg: it opens the cache (re-indexing a cache
// directory, so a restarted node is warm), binds the gRPC and HTTP
// listeners and the gossip port, but serves nothing and joins no one until
// Start. Errors wrap ErrInvalidConfig, ErrTLS, the cache's errors
// (cache.ErrBadDir, cache.ErrDirLocked, ...), membership's, or the listen
// error.
func New(cfg Config) (_ *Node, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: cfg.Logger.With("node", cfg.ID), done: make(chan struct{}), serveErr: make(chan error, 3)}
	var cleanup []func()
	defer func() {
		if err != nil {
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i]()
			}
		}
	}()
	n.metrics = newMetrics()
	if n.tls, err = loadTLS(cfg.TLSCertFile, cfg.TLSKeyFile, cfg.TLSCAFile, n.log); err != nil {
		return nil, err
	}
	n.origin = countingStore{Store: cfg.Origin, m: n.metrics}
	n.stats, err = origin.NewStatCache(n.origin, origin.StatCacheConfig{TTL: cfg.StatTTL})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	n.footers, err = parquetx.NewFooterCache(parquetx.FooterCacheConfig{})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	ccfg := cache.Config{
		Origin:        fillOrigin{n},
		Dir:           cfg.CacheDir,
		CapacityBytes: cfg.CacheSize,
		MemoryBytes:   cfg.MemorySize,
		PageSize:      cfg.PageSize,
		Policy:        cfg.CachePolicy,
		Logger:        n.log.With("component", "cache"),
	}
	if cfg.CacheVerifyAlways {
		ccfg.Verify = cache.VerifyAlways
	}
	if cfg.CacheDir == "" && cfg.CacheSize != 0 {
		n.log.Warn("no cache directory: the cache lives in RAM and --cache-size is ignored (--memory-size sets its size)",
			"memory_size", cfg.MemorySize)
	}
	if cfg.CacheSizer {
		if sz, err := mrc.New(mrc.Config{}); err == nil {
			ccfg.Sizer = sz
		}
		ccfg.PolicySizing = true
	}
	t0 := time.Now()
	if n.cache, err = cache.New(ccfg); err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { n.cache.Close() })
	cs := n.cache.Stats()
	n.log.Info("cache open", "mode", cs.Mode, "dir", cfg.CacheDir, "capacity_bytes", cs.CapacityBytes,
		"verify_always", cfg.CacheVerifyAlways, "reindexed_pages", cs.ReindexedPages, "took", time.Since(t0).Round(time.Millisecond))
	if cs.CapacityBytes == 0 {
		n.log.Warn("the cache has no room (no slab fits in the cache directory, and no --memory-size): it passes every read through and this node owns no blocks while another node has a cache; free the disk or set --memory-size, then restart",
			"dir", cfg.CacheDir, "reason", cs.DegradedReason)
	}

	if n.grpcLis, err = net.Listen("tcp", cfg.GRPCAddr); err != nil {
		return nil, fmt.Errorf("node: gRPC listener: %w", err)
	}
	cleanup = append(cleanup, func() { n.grpcLis.Close() })
	if n.httpLis, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
		return nil, fmt.Errorf("node: HTTP listener: %w", err)
	}
	cleanup = append(cleanup, func() { n.httpLis.Close() })
	if n.grpcAddr, err = advertised(n.grpcLis, cfg.GRPCAdvertiseAddr, "--grpc-advertise-addr"); err != nil {
		return nil, err
	}
	if n.httpAddr, err = advertised(n.httpLis, cfg.HTTPAdvertiseAddr, "--http-advertise-addr"); err != nil {
		return nil, err
	}

	// The capacity announced is what the cache holds: less than the
	// configured size by the slabs' headers, less again if the disk could
	// not hold every slab, 0 for a cache that passes reads through.
	capacity := n.cache.Stats().CapacityBytes
	n.members = cfg.Membership
	if n.members == nil {
		n.gossip, err = membership.New(membership.Config{
			Meta: membership.NodeMeta{
				ID: cfg.ID, Rack: cfg.Rack, GRPCAddr: n.grpcAddr, HTTPAddr: n.httpAddr,
				Slots: cfg.Slots, CapacityBytes: capacity, State: membership.StateAlive,
				BlockSize: cfg.BlockSize, PageSize: int64(cfg.PageSize),
				Replication: cfg.Replication,
			},
			BindAddr:      cfg.GossipAddr,
			AdvertiseAddr: cfg.GossipAdvertiseAddr,
			KeyFile:       cfg.GossipKeyFile,
			Tuning:        cfg.GossipTuning,
			Logger:        n.log.With("component", "membership"),
		})
		if err != nil {
			return nil, err
		}
		n.members = n.gossip
		cleanup = append(cleanup, func() { n.gossip.Shutdown() })
	}

	var creds credentials.TransportCredentials
	if n.tls != nil {
		creds = n.tls.peerCreds()
	}
	n.peers = newPeerPool(creds, cfg.PeerIdleTimeout, cfg.PeerBackoff, n.log, n.metrics)

	opts := []grpc.ServerOption{
		grpc.ForceServerCodecV2(Codec{}),
		experimental.BufferPool(pool),
		grpc.InitialWindowSize(peerWindow),
		grpc.InitialConnWindowSize(peerWindow),
		grpc.WriteBufferSize(256 << 10),
		grpc.ReadBufferSize(64 << 10),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: time.Minute, Timeout: 20 * time.Second}),
	}
	if n.tls != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(n.tls.server)))
	}
	n.grpcSrv = grpc.NewServer(opts...)
	cachev1.RegisterCacheServiceServer(n.grpcSrv, &service{n: n})
	n.health = health.NewServer()
	n.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	n.health.SetServingStatus(ServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(n.grpcSrv, n.health)
	reflection.Register(n.grpcSrv)

	var gw http.Handler
	if cfg.Gateway != nil {
		if gw, err = cfg.Gateway(n); err != nil {
			return nil, fmt.Errorf("%w: gateway: %w", ErrInvalidConfig, err)
		}
	}
	n.httpSrv = &http.Server{
		Handler:           n.httpHandler(gw),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          tlsreload.ServerErrorLog(n.log.With("component", "http")),
	}
	if n.tls != nil {
		n.httpSrv.TLSConfig = n.tls.server.Clone()
	}

	n.metrics.register(metricSources{
		id: cfg.ID, rack: cfg.Rack,
		cache:     n.cache.Stats,
		stats:     n.stats.Stats,
		footers:   n.footers.Stats,
		inflight:  n.Inflight,
		draining:  n.Draining,
		ready:     n.Ready,
		members:   func() int { return len(n.members.View().Members) },
		capacity:  capacity,
		blockSize: cfg.BlockSize,
	})
	return n, nil
}

// advertised returns the address to announce for a listener.
func advertised(l net.Listener, override, flag string) (string, error) {
	if override != "" {
		if _, _, err := net.SplitHostPort(override); err != nil {
			return "", fmt.Errorf("%w: %s %q: %v", ErrInvalidConfig, flag, override, err)
		}
		return override, nil
	}
	a := l.Addr().(*net.TCPAddr)
	if a.IP.IsUnspecified() {
		return "", fmt.Errorf("%w: listening on %s, which peers cannot dial: set %s", ErrInvalidConfig, a, flag)
	}
	return a.String(), nil
}

// Start serves gRPC and HTTP, joins the cluster through Config.Join
// (retrying unreachable seeds for up to Config.JoinTimeout; a refusal
// fails at once), and marks the node ready (/readyz 200, gRPC health
// SERVING). ctx bounds the join.
func (n *Node) Start(ctx context.Context) error {
	if !n.started.CompareAndSwap(false, true) {
		return fmt.Errorf("node: Start called twice")
	}
	go func() { n.serveErr <- n.grpcSrv.Serve(n.grpcLis) }()
	go func() {
		var err error
		if n.tls != nil {
			err = n.httpSrv.ServeTLS(n.httpLis, "", "")
		} else {
			err = n.httpSrv.Serve(n.httpLis)
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		n.serveErr <- err
	}()
	if n.gossip != nil && len(n.cfg.Join) > 0 {
		if err := n.join(ctx); err != nil {
			return err
		}
	}
	n.bg.Add(1)
	go n.watchViews()
	if !n.state.CompareAndSwap(stateNew, stateReady) {
		return ErrStopped
	}
	n.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	n.health.SetServingStatus(ServiceName, healthpb.HealthCheckResponse_SERVING)
	v := n.members.View()
	n.log.Info("node ready", "grpc", n.grpcAddr, "http", n.httpAddr, "gossip", n.GossipAddr(),
		"members", len(v.Members), "epoch", v.Epoch, "tls", n.tls != nil, "mtls", n.cfg.TLSCAFile != "")
	return nil
}

func (n *Node) join(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.JoinTimeout)
	defer cancel()
	delay := 200 * time.Millisecond
	for {
		k, err := n.gossip.Join(n.cfg.Join)
		if err == nil {
			n.log.Info("joined cluster", "seeds_reached", k, "members", len(n.members.View().Members))
			return nil
		}
		if errors.Is(err, membership.ErrIncompatible) || errors.Is(err, membership.ErrDuplicateID) ||
			errors.Is(err, membership.ErrBadAddress) {
			return err
		}
		n.log.Warn("join failed; retrying", "seeds", n.cfg.Join, "err", err)
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), context.Canceled) {
				return fmt.Errorf("node: interrupted while joining %v: %w", n.cfg.Join, context.Canceled)
			}
			return fmt.Errorf("node: could not join %v within %v: %w", n.cfg.Join, n.cfg.JoinTimeout, err)
		case <-n.done:
			return ErrStopped
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// watchViews drops peer connections of members that left, logs ring
// changes, and feeds the rejoiner (see rejoin.go).
func (n *Node) watchViews() {
	defer n.bg.Done()
	v := n.members.View()
	epoch, prev := v.Epoch, v
	var rj *rejoiner
	var gossipDone <-chan struct{} // the gossip stopping by itself ends the node (ServeErr)
	if n.gossip != nil {
		rj = newRejoiner(v)
		go n.rejoinLoop(rj, rejoinInterval(n.cfg.GossipTuning))
		gossipDone = n.gossip.Done()
	}
	for {
		select {
		case <-v.Changed():
		case <-gossipDone:
			gossipDone = nil
			if err := n.gossip.Err(); err != nil {
				n.serveErr <- fmt.Errorf("node: the gossip stopped: %w", err)
			}
			continue
		case <-n.done:
			return
		}
		v = n.members.View()
		if rj != nil {
			rj.observe(v, time.Now())
		}
		n.peers.prune(v)
		if v.Epoch != epoch {
			joined, left := ringDiff(prev, v)
			epoch = v.Epoch
			n.log.Info("ring changed", "members", len(v.Members), "epoch", v.Epoch, "joined", joined, "left", left)
		}
		prev = v
	}
}

// ringDiff lists the ids of the members in b but not in a (joined) and in
// a but not in b (left), for the log.
func ringDiff(a, b *membership.View) (joined, left []string) {
	in := func(v *membership.View, id string) bool { _, ok := v.Member(id); return ok }
	for _, m := range b.Members {
		if !in(a, m.ID) {
			joined = append(joined, m.ID)
		}
	}
	for _, m := range a.Members {
		if !in(b, m.ID) {
			left = append(left, m.ID)
		}
	}
	return joined, left
}

// enter registers a read in flight; false once the node stopped.
func (n *Node) enter() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.state.Load() == stateStopped {
		return false
	}
	n.active++
	return true
}

func (n *Node) exit() {
	n.mu.Lock()
	n.active--
	if n.active == 0 && n.zero != nil {
		close(n.zero)
		n.zero = nil
	}
	n.mu.Unlock()
}

// waitIdle waits until no read is in flight, or ctx ends.
func (n *Node) waitIdle(ctx context.Context) error {
	n.mu.Lock()
	if n.active == 0 {
		n.mu.Unlock()
		return nil
	}
	if n.zero == nil {
		n.zero = make(chan struct{})
	}
	ch := n.zero
	n.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Drain announces that the node is going away: its membership state
// becomes draining (schedulers stop placing tasks here; it keeps its ring
// ownership, so peers still read through it), /readyz answers 503 and the
// gRPC health service NOT_SERVING. Then it waits for the reads in flight to
// finish, at most Config.DrainTimeout (or until ctx ends). Reads keep being
// served while draining.
func (n *Node) Drain(ctx context.Context) error {
	if !n.state.CompareAndSwap(stateReady, stateDraining) && !n.state.CompareAndSwap(stateNew, stateDraining) {
		if n.state.Load() == stateStopped {
			return ErrStopped
		}
	}
	n.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	n.health.SetServingStatus(ServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
	t0 := time.Now()
	// As Leave's in Stop, the broadcast waits for a peer to carry it: bound
	// it, or a whole cluster stopping at once spends the drain on it.
	sctx, scancel := context.WithTimeout(ctx, membership.DefaultBroadcastTimeout)
	if err := n.members.SetState(sctx, membership.StateDraining); err != nil {
		n.log.Warn("announcing draining", "err", err)
	}
	scancel()
	n.log.Info("draining", "inflight", n.Inflight())
	wctx, cancel := context.WithTimeout(ctx, n.cfg.DrainTimeout)
	defer cancel()
	if err := n.waitIdle(wctx); err != nil {
		n.log.Warn("drain timeout: reads still in flight", "inflight", n.Inflight(), "waited", time.Since(t0).Round(time.Millisecond))
		return nil
	}
	n.log.Info("drained", "took", time.Since(t0).Round(time.Millisecond))
	return nil
}

// Stop drains (if Drain was not called), leaves the cluster, stops the
// servers (waiting for streams in progress until ctx ends) and closes the
// cache, whose pages stay on disk for the next start. It is idempotent and
// returns the first error of the shutdown.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() {
		if s := n.state.Load(); s == stateReady || s == stateNew {
			n.Drain(ctx)
		}
		var errs []error
		// The leave broadcast waits for a peer to carry it; when the whole
		// cluster stops at once there may be none left, so bound the wait
		// (the goodbye only spares peers the failure detector's delay)
		// instead of spending the rest of ctx, which the daemon sizes past
		// Kubernetes' default grace period.
		lctx, lcancel := context.WithTimeout(ctx, membership.DefaultBroadcastTimeout)
		if err := n.members.Leave(lctx); err != nil && !errors.Is(err, membership.ErrClosed) {
			errs = append(errs, fmt.Errorf("leave: %w", err))
		}
		lcancel()
		n.mu.Lock()
		n.state.Store(stateStopped)
		n.mu.Unlock()
		close(n.done)
		// Both listeners close now, as reads are refused from here on:
		// the HTTP one too, while gRPC streams still in flight finish
		// (otherwise every gateway request meanwhile got a 500 "node:
		// stopped" instead of a refused connection a client retries).
		httpDone := make(chan struct{})
		go func() {
			defer close(httpDone)
			if err := n.httpSrv.Shutdown(ctx); err != nil {
				n.httpSrv.Close()
			}
		}()
		stopped := make(chan struct{})
		go func() { n.grpcSrv.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-ctx.Done():
			n.grpcSrv.Stop()
			<-stopped
		}
		<-httpDone
		n.peers.close()
		n.bg.Wait()
		if err := n.cache.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing cache: %w", err))
		}
		n.stopErr = errors.Join(errs...)
		n.log.Info("stopped")
	})
	return n.stopErr
}

// Abort stops the node as a crash would, for tests: no draining and no
// goodbye (peers detect the failure), connections cut. The cache is closed
// so its directory can be reopened.
func (n *Node) Abort() {
	n.stopOnce.Do(func() {
		n.mu.Lock()
		n.state.Store(stateStopped)
		n.mu.Unlock()
		close(n.done)
		n.members.Shutdown()
		n.grpcSrv.Stop()
		n.httpSrv.Close()
		n.peers.close()
		n.bg.Wait()
		n.cache.Close()
	})
}

// Done is closed when the node stops (Stop or Abort).
func (n *Node) Done() <-chan struct{} { return n.done }

// ServeErr returns a channel that receives an error if the gRPC or HTTP
// server fails while running, or if the gossip stops by itself (another
// live process uses this node's id: membership.Membership.Err).
func (n *Node) ServeErr() <-chan error { return n.serveErr }

// ID returns the node id.
func (n *Node) ID() string { return n.cfg.ID }

// Rack returns the node's rack.
func (n *Node) Rack() string { return n.cfg.Rack }

// GRPCAddr returns the gRPC address announced to the cluster.
func (n *Node) GRPCAddr() string { return n.grpcAddr }

// HTTPAddr returns the HTTP address announced to the cluster.
func (n *Node) HTTPAddr() string { return n.httpAddr }

// GossipAddr returns the gossip address others join (empty when the node
// was given a Membership).
func (n *Node) GossipAddr() string {
	if n.gossip == nil {
		return ""
	}
	return n.gossip.GossipAddr()
}

// Config returns the node's configuration, defaults filled.
func (n *Node) Config() Config { return n.cfg }

// View returns the node's current membership view.
func (n *Node) View() *membership.View { return n.members.View() }

// Ready reports whether the node is started and not draining.
func (n *Node) Ready() bool { return n.state.Load() == stateReady }

// Draining reports whether the node is draining (or stopped).
func (n *Node) Draining() bool { s := n.state.Load(); return s == stateDraining || s == stateStopped }

// Inflight returns the number of reads in progress.
func (n *Node) Inflight() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.active
}

// CacheStats returns the page cache's counters.
func (n *Node) CacheStats() cache.Stats { return n.cache.Stats() }

// Invalidate drops the cached pages and the stat entry of uri on this node.
func (n *Node) Invalidate(uri string) (int, error) {
	n.stats.Invalidate(uri)
	return n.cache.Invalidate(uri)
}

// Registry returns the node's Prometheus registry (served on /metrics), so
// the gateway or the daemon can add collectors.
func (n *Node) Registry() *prometheus.Registry { return n.metrics.reg }

// ObserveOriginAttempt counts one HTTP attempt of the S3 origin
// (locus_origin_http_attempts_total); pass it as origin.S3Config.Observe.
func (n *Node) ObserveOriginAttempt(a origin.Attempt) { n.metrics.observeAttempt(a) }

// Origin returns the node's origin store (Config.Origin) with its calls
// counted in locus_origin_requests_total, for what reads the origin
// outside the cache: the S3 gateway's directory markers.
func (n *Node) Origin() origin.Store { return n.origin }
