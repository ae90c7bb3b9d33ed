package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locuscache/locus/pkg/gateway"
	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/node"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/scheduler"
)

// Defaults of Config: a cluster small enough to start in about a second
// and to spread a few-MB dataset over its nodes.
const (
	DefaultNodes      = 3
	DefaultBlockSize  = 512 << 10 // 512 KiB: a 1.1 MB file of 4 row groups spans 3 blocks
	DefaultPageSize   = 16 << 10  // divides the block size; small, so adjacent row groups share little
	DefaultMemorySize = 64 << 20  // per node: the whole dataset fits
	DefaultSlots      = 4
	// DefaultReplication is the nodes' --replication here: the cluster
	// default, 2 (node.DefaultReplication).
	DefaultReplication  = node.DefaultReplication
	DefaultLocalityWait = 500 * time.Millisecond
	DefaultStartTimeout = 20 * time.Second
	// GatewayBucket is the S3 gateway bucket that serves the data
	// directory: GET /lake/<path under Dir/data/lake>.
	GatewayBucket = "lake"
)

// DefaultRacks puts nodes 1 and 2 on rack r1 and node 3 on r2.
var DefaultRacks = []string{"r1", "r1", "r2"}

// ErrInvalidConfig is returned by Start for a Config that cannot work.
var ErrInvalidConfig = errors.New("localcluster: invalid config")

// Config configures a local cluster. Zero fields take the defaults above.
type Config struct {
	// Dir holds the origin's files: the file:// root is Dir/data, and the
	// dataset goes under Dir/data/lake/. Required; it must exist.
	Dir string
	// Nodes is the number of cache nodes (default 3), on Racks (node i on
	// Racks[i % len(Racks)], default DefaultRacks).
	Nodes int
	Racks []string
	// BlockSize is the cluster block size, the same on every node and on
	// the scheduler (default 512 KiB). PageSize must divide it (default
	// 16 KiB). MemorySize is each node's RAM cache (default 64 MiB); Slots
	// its executor slots (default 4).
	BlockSize  int64
	PageSize   int
	MemorySize int64
	Slots      int
	// Replication is the nodes' --replication, the length of every block's
	// preference list; the scheduler takes it from the nodes. Default
	// DefaultReplication, 2, the product's: a block is cached on each node
	// of its list that ran one of its tasks, the second node filling from
	// the owner's cache (package node, "Filling a replica"), so a warm
	// pass hits wherever in the list its tasks run and the origin serves
	// each page once. 1..membership.MaxReplication.
	Replication int
	// LocalityWait is the scheduler's --locality-wait (default 500ms;
	// negative: no wait, as scheduler.NoLocalityWait).
	LocalityWait time.Duration
	// HTTPPortBase, if set, fixes the HTTP ports: the scheduler's API on
	// HTTPPortBase, node i's HTTP (metrics, S3 gateway) on HTTPPortBase+1+i.
	// 0 (default) picks free ports. gRPC and gossip ports are always
	// picked free.
	HTTPPortBase int
	// StartTimeout bounds Start (default 20s).
	StartTimeout time.Duration
	// Logger receives the nodes' and the scheduler's logs. Default:
	// discard.
	Logger *slog.Logger
	// Progress, if set, receives one line per startup step.
	Progress io.Writer
}

func (c *Config) validate() error {
	if c.Dir == "" {
		return fmt.Errorf("%w: Dir is empty", ErrInvalidConfig)
	}
	if st, err := os.Stat(c.Dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%w: Dir %q is not a directory (%v)", ErrInvalidConfig, c.Dir, err)
	}
	if c.Nodes == 0 {
		c.Nodes = DefaultNodes
	}
	if len(c.Racks) == 0 {
		c.Racks = DefaultRacks
	}
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	if c.PageSize == 0 {
		c.PageSize = DefaultPageSize
	}
	if c.MemorySize == 0 {
		c.MemorySize = DefaultMemorySize
	}
	if c.Slots == 0 {
		c.Slots = DefaultSlots
	}
	if c.LocalityWait == 0 {
		c.LocalityWait = DefaultLocalityWait
	}
	if c.Replication == 0 {
		c.Replication = DefaultReplication
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	switch {
	case c.Nodes < 1 || c.Nodes > 64:
		return fmt.Errorf("%w: %d nodes; want 1 to 64", ErrInvalidConfig, c.Nodes)
	case c.BlockSize < 0 || c.PageSize < 0 || c.MemorySize < 0 || c.Slots < 0:
		return fmt.Errorf("%w: negative size or slots", ErrInvalidConfig)
	case c.Replication < 0 || c.Replication > membership.MaxReplication:
		return fmt.Errorf("%w: replication %d; want 1 to %d", ErrInvalidConfig, c.Replication, membership.MaxReplication)
	case c.BlockSize%int64(c.PageSize) != 0:
		return fmt.Errorf("%w: page size %d does not divide block size %d", ErrInvalidConfig, c.PageSize, c.BlockSize)
	case c.HTTPPortBase < 0 || c.HTTPPortBase > 65535-c.Nodes:
		return fmt.Errorf("%w: HTTP port base %d out of range", ErrInvalidConfig, c.HTTPPortBase)
	}
	return nil
}

// Cluster is a running local cluster: cache nodes and a scheduler in this
// process, on 127.0.0.1.
type Cluster struct {
	Nodes     []*node.Node
	Scheduler *scheduler.Scheduler
	// Origin is the store the nodes read: file:// under DataRoot.
	Origin   origin.Store
	DataRoot string
	cfg      Config
	stopOnce sync.Once
	stopErr  error
}

// Start starts the cluster: the file origin, cfg.Nodes cache nodes (real
// memberlist gossip with loopback tuning, gRPC, HTTP with /metrics and the
// S3 gateway, RAM caches) joined into one ring, and a standalone
// scheduler observing their gossip. It returns once the scheduler sees
// every node on the ring the nodes agree on. On error, whatever started is
// stopped.
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	// Absolute first: the data root becomes file:// URIs, which cannot
	// be relative (a relative --dir or TMPDIR gave "file://demo/...").
	abs, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	root, err := filepath.EvalSymlinks(abs) // the file store refuses links out of its root
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	c := &Cluster{cfg: cfg, DataRoot: filepath.Join(root, "data")}
	defer func() {
		if err != nil {
			sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer scancel()
			c.Stop(sctx)
		}
	}()
	if err := os.MkdirAll(filepath.Join(c.DataRoot, GatewayBucket), 0o755); err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	files, err := origin.NewFileStore(origin.FileConfig{Root: c.DataRoot})
	if err != nil {
		return nil, fmt.Errorf("localcluster: file origin: %w", err)
	}
	if c.Origin, err = origin.NewRouter(map[string]origin.Store{origin.SchemeFile: files}); err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}

	var seed []string
	for i := range cfg.Nodes {
		n, err := c.startNode(ctx, i, seed)
		if err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, n)
		seed = []string{c.Nodes[0].GossipAddr()}
		fmt.Fprintf(c.cfg.Progress, "  node %-6s rack %-3s gRPC %s  HTTP %s  gossip %s\n", n.ID(), n.Rack(), n.GRPCAddr(), n.HTTPAddr(), n.GossipAddr())
	}
	epoch, err := c.waitConverged(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.startScheduler(ctx, seed); err != nil {
		return nil, err
	}
	if err := c.waitScheduler(ctx, epoch); err != nil {
		return nil, err
	}
	fmt.Fprintf(c.cfg.Progress, "  scheduler       HTTP %s  gRPC %s  sees %d nodes (ring epoch %016x, replication %d)\n",
		c.Scheduler.HTTPAddr(), c.Scheduler.GRPCAddr(), cfg.Nodes, epoch, c.Scheduler.Replication())
	return c, nil
}

func (c *Cluster) httpAddr(offset int) string {
	if c.cfg.HTTPPortBase == 0 {
		return "127.0.0.1:0"
	}
	return "127.0.0.1:" + strconv.Itoa(c.cfg.HTTPPortBase+offset)
}

func (c *Cluster) startNode(ctx context.Context, i int, join []string) (*node.Node, error) {
	id := fmt.Sprintf("node%d", i+1)
	buckets := map[string]string{GatewayBucket: c.URI(GatewayBucket + "/")}
	n, err := node.New(node.Config{
		ID:              id,
		Rack:            c.cfg.Racks[i%len(c.cfg.Racks)],
		GossipAddr:      "127.0.0.1:0",
		GossipTuning:    membership.LoopbackTuning(),
		Join:            join,
		JoinTimeout:     5 * time.Second,
		GRPCAddr:        "127.0.0.1:0",
		HTTPAddr:        c.httpAddr(1 + i),
		Slots:           c.cfg.Slots,
		MemorySize:      c.cfg.MemorySize,
		PageSize:        c.cfg.PageSize,
		BlockSize:       c.cfg.BlockSize,
		Replication:     c.cfg.Replication,
		CacheSizer:      true, // as cachenode's --cache-sizing default
		Origin:          c.Origin,
		DrainTimeout:    5 * time.Second,
		PeerIdleTimeout: 5 * time.Second,
		PeerBackoff:     500 * time.Millisecond,
		Gateway: func(n *node.Node) (http.Handler, error) {
			return gateway.New(gateway.Config{Backend: n, Buckets: buckets, Logger: c.cfg.Logger,
				DirectoryMarkers: gateway.StoreBackend{Store: n.Origin()}})
		},
		Logger: c.cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("localcluster: node %s: %w", id, err)
	}
	if err := n.Start(ctx); err != nil {
		n.Abort()
		return nil, fmt.Errorf("localcluster: starting node %s: %w", id, err)
	}
	return n, nil
}

// waitConverged waits until every node sees all of them with one epoch.
func (c *Cluster) waitConverged(ctx context.Context) (uint64, error) {
	for {
		epoch, ok := c.Nodes[0].View().Epoch, true
		for _, n := range c.Nodes {
			v := n.View()
			// Members, not ring nodes: a node without a cache is a member
			// that owns no blocks.
			if v.Epoch != epoch || v.Ring == nil || v.CacheMembers() != len(c.Nodes) {
				ok = false
			}
		}
		if ok {
			return epoch, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("localcluster: the %d nodes did not agree on one ring: %w", len(c.Nodes), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (c *Cluster) startScheduler(ctx context.Context, join []string) error {
	s, err := scheduler.New(scheduler.Config{
		NodeID:       "scheduler",
		GossipAddr:   "127.0.0.1:0",
		GossipTuning: membership.LoopbackTuning(),
		Join:         join,
		JoinTimeout:  5 * time.Second,
		HTTPAddr:     c.httpAddr(0),
		GRPCAddr:     "127.0.0.1:0",
		BlockSize:    c.cfg.BlockSize,
		LocalityWait: max(c.cfg.LocalityWait, scheduler.NoLocalityWait),
		MaxQueueWait: 10 * time.Second,
		Logger:       c.cfg.Logger,
	})
	if err != nil {
		return fmt.Errorf("localcluster: scheduler: %w", err)
	}
	if err := s.Start(ctx); err != nil {
		return fmt.Errorf("localcluster: starting the scheduler: %w", err)
	}
	c.Scheduler = s
	return nil
}

// waitScheduler waits until the scheduler's ring is the nodes' ring.
func (c *Cluster) waitScheduler(ctx context.Context, epoch uint64) error {
	for {
		r := c.Scheduler.Ring()
		alive := 0
		for _, m := range r.Members {
			if m.Role == "cache" && m.State == "alive" {
				alive++
			}
		}
		if r.Epoch == epoch && alive == len(c.Nodes) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("localcluster: the scheduler sees %d of %d nodes: %w", alive, len(c.Nodes), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// URI returns the file:// URI of rel, a slash-separated path under the
// data root ("lake/events/").
func (c *Cluster) URI(rel string) string {
	p := filepath.ToSlash(filepath.Join(c.DataRoot, filepath.FromSlash(rel)))
	if strings.HasSuffix(rel, "/") {
		p += "/"
	}
	return origin.URI{Scheme: origin.SchemeFile, Path: p}.String()
}

// SchedulerURL is the scheduler's HTTP API: http://127.0.0.1:port.
func (c *Cluster) SchedulerURL() string { return "http://" + c.Scheduler.HTTPAddr() }

// Config returns the cluster's config, defaults filled.
func (c *Cluster) Config() Config { return c.cfg }

// Stop drains every node (the scheduler stops placing on them, reads in
// flight finish), then stops the scheduler and the nodes. It is
// idempotent and returns the first errors. Close the idle connections of
// the clients first (client.Scheduler.Close): an HTTP server waits up to
// 5 s for a connection that was opened but never carried a request.
func (c *Cluster) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() {
		var errs []error
		var wg sync.WaitGroup
		for _, n := range c.Nodes {
			wg.Go(func() { _ = n.Drain(ctx) })
		}
		wg.Wait()
		if c.Scheduler != nil {
			if err := c.Scheduler.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("scheduler: %w", err))
			}
		}
		// One at a time: a node's goodbye is confirmed by the others, which
		// cannot confirm it while leaving themselves.
		for _, n := range c.Nodes {
			if err := n.Stop(ctx); err != nil {
				errs = append(errs, fmt.Errorf("node %s: %w", n.ID(), err))
			}
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}
