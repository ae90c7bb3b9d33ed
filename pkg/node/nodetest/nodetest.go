// Package nodetest starts real Locus cache nodes for tests: in-process
// clusters (Start: N nodes on 127.0.0.1, 127.0.0.2, ... with free ports,
// real gossip with loopback tuning, real gRPC and HTTP listeners, the S3
// gateway mounted) and daemon processes (BuildCachenode, StartProcess) for
// tests that kill or signal a node; with RunIfDaemon in TestMain the test
// binary itself serves as the daemon, so nothing is built. NewTLS makes a
// throwaway CA and certificates for TLS and mTLS tests; ReadRange and
// StreamRange read a range over gRPC and check the stream's protocol.
//
// The origin is whatever origin.Store the test passes (an
// origintest.MemStore, a FileStore), or a versitygw started with
// origintest.StartVersityGW (Options.VersityGW), the same for every node.
//
//	gw := origintest.StartVersityGW(t)
//	c := nodetest.Start(t, nodetest.Options{N: 3, VersityGW: gw})
//	cl := c.Client(t, 0)              // a cachev1.CacheServiceClient for node 0
//	url := c.HTTPURL(1) + "/" + gw.Bucket + "/key"   // node 1's S3 gateway
//	owner := c.Owner(gw.URI("key"), 0) // the node owning the block at offset 0
//	other := c.NonOwner(gw.URI("key"), 0) // a node outside that block's preference list
package nodetest

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/locuscache/locus/internal/testproc"
	"github.com/locuscache/locus/pkg/gateway"
	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/node"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/ring"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// The nodes are gateway backends.
var (
	_ gateway.Backend = (*node.Node)(nil)
	_ gateway.Lister  = (*node.Node)(nil)
)

// DebugEnv names an environment variable: set to 1, nodes log to stderr at
// debug level.
const DebugEnv = "LOCUS_NODE_DEBUG"

// Test geometry defaults: small blocks so a few-MiB object spreads over
// several owners.
const (
	DefaultBlockSize   = 1 << 20
	DefaultPageSize    = 64 << 10
	DefaultMemoryBytes = 64 << 20
)

// Options configure Start.
type Options struct {
	// N is the number of nodes (default 1).
	N int
	// Origin is the store every node reads. If nil, VersityGW must be set.
	Origin origin.Store
	// VersityGW, with Origin nil, makes the origin an S3Store over this
	// server (plus a FileStore when FileRoot is set).
	VersityGW *origintest.VersityGW
	// FileRoot adds a file:// origin rooted there (with VersityGW).
	FileRoot string
	// BlockSize, PageSize and MemoryBytes default to DefaultBlockSize,
	// DefaultPageSize and DefaultMemoryBytes.
	BlockSize   int64
	PageSize    int
	MemoryBytes int64
	// CacheBytes > 0 gives each node a disk cache of that size in
	// CacheDir(i) (a fresh temporary directory per node, or Dirs[i]).
	CacheBytes int64
	Dirs       []string
	// Replication (default node.DefaultReplication, 2: the first two
	// owners of a block serve it from their caches), StatTTL (default
	// 200ms: tests see overwrites quickly), Racks (node i gets
	// Racks[i % len]). Tests of what happens behind a single owner (a
	// killed owner's blocks come from the origin) set Replication 1.
	Replication int
	StatTTL     time.Duration
	Racks       []string
	// TLS, if set, enables TLS with these certificates; MTLS requires
	// client certificates as well.
	TLS  *TLSFiles
	MTLS bool
	// NoGateway leaves the S3 gateway off the HTTP listener.
	NoGateway bool
	// Mutate, if set, edits node i's Config before New.
	Mutate func(i int, cfg *node.Config)
}

// Cluster is a set of running in-process nodes.
type Cluster struct {
	Nodes []*node.Node
	opts  Options
	store origin.Store
}

// Addr returns a loopback address for node i: 127.0.0.(i+1) with port 0.
func Addr(i int) string { return fmt.Sprintf("127.0.0.%d:0", i%250+1) }

// FreeAddr returns host:port on the given loopback IP with a port that was
// free a moment ago (for processes, which take their ports as flags).
func FreeAddr(t testing.TB, ip string) string {
	t.Helper()
	port, err := testproc.FreePort(ip)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(ip, strconv.Itoa(port))
}

// Logger returns the logger nodes use in tests: discard, or debug to stderr
// when LOCUS_NODE_DEBUG=1.
func Logger() *slog.Logger {
	if os.Getenv(DebugEnv) == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// Start starts opts.N nodes, joins them into one cluster, waits until every
// node sees all of them with one ring epoch, and stops them when the test
// ends. It fails the test on any error.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.N == 0 {
		opts.N = 1
	}
	if opts.BlockSize == 0 {
		opts.BlockSize = DefaultBlockSize
	}
	if opts.PageSize == 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.MemoryBytes == 0 {
		opts.MemoryBytes = DefaultMemoryBytes
	}
	if opts.StatTTL == 0 {
		opts.StatTTL = 200 * time.Millisecond
	}
	c := &Cluster{opts: opts, store: opts.Origin}
	if c.store == nil {
		if opts.VersityGW == nil {
			t.Fatal("nodetest: Options needs Origin or VersityGW")
		}
		c.store = VersityOrigin(t, opts.VersityGW, opts.FileRoot)
	}
	if opts.CacheBytes > 0 && len(opts.Dirs) == 0 {
		for range opts.N {
			opts.Dirs = append(opts.Dirs, t.TempDir())
		}
		c.opts.Dirs = opts.Dirs
	}
	var seed string
	for i := range opts.N {
		n := c.startNode(t, i, seed)
		if i == 0 {
			seed = n.GossipAddr()
		}
		c.Nodes = append(c.Nodes, n)
	}
	WaitConverged(t, c.Nodes, 10*time.Second)
	return c
}

// Config returns the node.Config Start uses for node i (joining seed).
func (c *Cluster) Config(t testing.TB, i int, seed string) node.Config {
	o := c.opts
	cfg := node.Config{
		ID:           fmt.Sprintf("node%d", i),
		GossipAddr:   Addr(i),
		GossipTuning: membership.LoopbackTuning(),
		GRPCAddr:     Addr(i),
		HTTPAddr:     Addr(i),
		MemorySize:   o.MemoryBytes,
		PageSize:     o.PageSize,
		BlockSize:    o.BlockSize,
		Replication:  o.Replication,
		Origin:       c.store,
		StatTTL:      o.StatTTL,
		DrainTimeout: 5 * time.Second,
		JoinTimeout:  10 * time.Second,
		PeerBackoff:  500 * time.Millisecond,
		Logger:       Logger().With("test", t.Name()),
	}
	if seed != "" {
		cfg.Join = []string{seed}
	}
	if len(o.Racks) > 0 {
		cfg.Rack = o.Racks[i%len(o.Racks)]
	}
	if o.CacheBytes > 0 {
		cfg.CacheDir = o.Dirs[i]
		cfg.CacheSize = o.CacheBytes
		cfg.MemorySize = 0
	}
	if o.TLS != nil {
		cfg.TLSCertFile, cfg.TLSKeyFile = o.TLS.CertFile, o.TLS.KeyFile
		if o.MTLS {
			cfg.TLSCAFile = o.TLS.CAFile
		}
	}
	if !o.NoGateway {
		cfg.Gateway = func(n *node.Node) (http.Handler, error) {
			return gateway.New(gateway.Config{Backend: n, DirectoryMarkers: gateway.StoreBackend{Store: n.Origin()}})
		}
	}
	if o.Mutate != nil {
		o.Mutate(i, &cfg)
	}
	return cfg
}

func (c *Cluster) startNode(t testing.TB, i int, seed string) *node.Node {
	t.Helper()
	n, err := node.New(c.Config(t, i, seed))
	if err != nil {
		t.Fatalf("nodetest: node %d: %v", i, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		n.Abort()
		t.Fatalf("nodetest: starting node %d: %v", i, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n.Stop(ctx)
	})
	return n
}

// Restart stops node i (Stop: drain, leave, close the cache) and starts a
// new node with the same id, addresses chosen afresh, the same cache
// directory, joining the others. It returns the new node.
func (c *Cluster) Restart(t testing.TB, i int) *node.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Nodes[i].Stop(ctx); err != nil {
		t.Fatalf("nodetest: stopping node %d: %v", i, err)
	}
	seed := ""
	for j, n := range c.Nodes {
		if j != i {
			seed = n.GossipAddr()
			break
		}
	}
	c.Nodes[i] = c.startNode(t, i, seed)
	WaitConverged(t, c.Nodes, 10*time.Second)
	return c.Nodes[i]
}

// Store returns the origin the nodes read.
func (c *Cluster) Store() origin.Store { return c.store }

// Owner returns the node owning the block holding byte off of uri
// (nil if that node is not one of c.Nodes).
func (c *Cluster) Owner(uri string, off int64) *node.Node {
	id := c.Nodes[0].View().Ring.Owner(ring.BlockKey(uri, off/c.opts.BlockSize)).ID
	for _, n := range c.Nodes {
		if n.ID() == id {
			return n
		}
	}
	return nil
}

// Replication returns the cluster replication the nodes announce
// (View.Replication): the length of every block's preference list.
func (c *Cluster) Replication() int { return c.Nodes[0].View().Replication() }

// Preferred returns the preference list of the block holding byte off of
// uri: its first Replication owners, owner first; they serve the block
// from their own caches.
func (c *Cluster) Preferred(uri string, off int64) []*node.Node {
	v := c.Nodes[0].View()
	var out []*node.Node
	for _, o := range v.Ring.Owners(ring.BlockKey(uri, off/c.opts.BlockSize), v.Replication()) {
		for _, n := range c.Nodes {
			if n.ID() == o.ID {
				out = append(out, n)
			}
		}
	}
	return out
}

// NonOwner returns a node outside the preference list of the block holding
// byte off of uri: a node that reads that block through the list (a peer
// hit once the list caches it). It is nil when every node is in the list
// (N <= Replication).
func (c *Cluster) NonOwner(uri string, off int64) *node.Node {
	pref := c.Preferred(uri, off)
	for _, n := range c.Nodes {
		if !slices.Contains(pref, n) {
			return n
		}
	}
	return nil
}

// Client returns a CacheService client for node i, dialed with the
// cluster's TLS settings and the nodes' own dial options.
func (c *Cluster) Client(t testing.TB, i int) cachev1.CacheServiceClient {
	t.Helper()
	return Dial(t, c.Nodes[i].GRPCAddr(), c.opts.TLS)
}

// Dial returns a CacheService client for addr, over TLS when files is set
// (presenting its certificate as the client certificate).
func Dial(t testing.TB, addr string, files *TLSFiles) cachev1.CacheServiceClient {
	t.Helper()
	var creds credentials.TransportCredentials
	if files != nil {
		creds = credentials.NewTLS(files.ClientConfig())
	}
	cc, err := grpc.NewClient("passthrough:///"+addr, node.PeerDialOptions(creds)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cachev1.NewCacheServiceClient(cc)
}

// HTTPURL returns the base URL of node i's HTTP listener.
func (c *Cluster) HTTPURL(i int) string {
	if c.opts.TLS != nil {
		return "https://" + c.Nodes[i].HTTPAddr()
	}
	return "http://" + c.Nodes[i].HTTPAddr()
}

// HTTPClient returns an HTTP client for the nodes (trusting the test CA
// and presenting the client certificate under TLS).
func (c *Cluster) HTTPClient() *http.Client {
	if c.opts.TLS == nil {
		return &http.Client{Timeout: 60 * time.Second}
	}
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{TLSClientConfig: c.opts.TLS.ClientConfig()}}
}

// CacheDir returns node i's cache directory ("" for RAM-only nodes).
func (c *Cluster) CacheDir(i int) string {
	if i < len(c.opts.Dirs) {
		return c.opts.Dirs[i]
	}
	return ""
}

// WaitConverged waits until every node's view lists exactly these nodes
// with one common ring epoch; it fails the test after timeout.
func WaitConverged(t testing.TB, nodes []*node.Node, timeout time.Duration) {
	t.Helper()
	ids := map[string]bool{}
	for _, n := range nodes {
		ids[n.ID()] = true
	}
	deadline := time.Now().Add(timeout)
	for {
		ok := true
		var epoch uint64
		for i, n := range nodes {
			v := n.View()
			if len(v.Members) != len(nodes) || (i > 0 && v.Epoch != epoch) {
				ok = false
				break
			}
			epoch = v.Epoch
			for _, m := range v.Members {
				if !ids[m.ID] {
					ok = false
				}
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var s string
			for _, n := range nodes {
				v := n.View()
				s += fmt.Sprintf("\n  %s: epoch %d, %d members", n.ID(), v.Epoch, len(v.Members))
			}
			t.Fatalf("nodetest: nodes did not converge in %v:%s", timeout, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// VersityOrigin returns the origin nodes use for a versitygw server: an
// S3Store with its static credentials, plus a FileStore when fileRoot is
// set.
func VersityOrigin(t testing.TB, gw *origintest.VersityGW, fileRoot string) origin.Store {
	t.Helper()
	routes := map[string]origin.Store{origin.SchemeS3: gw.Store(t)}
	if fileRoot != "" {
		fs, err := origin.NewFileStore(origin.FileConfig{Root: fileRoot})
		if err != nil {
			t.Fatal(err)
		}
		routes[origin.SchemeFile] = fs
	}
	r, err := origin.NewRouter(routes)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
