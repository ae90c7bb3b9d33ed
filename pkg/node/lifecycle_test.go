package node_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/node"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

func baseConfig(t *testing.T, mem *origintest.MemStore) node.Config {
	return node.Config{
		ID: "life", GossipAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		MemorySize: 8 << 20, PageSize: 64 << 10, BlockSize: 1 << 20, Origin: mem,
		DrainTimeout: 2 * time.Second, Logger: nodetest.Logger(),
	}
}

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestLifecycle: ready after Start; Drain makes /readyz 503 while reads
// still work; Stop refuses reads and is idempotent.
func TestLifecycle(t *testing.T) {
	mem := origintest.NewMemStore()
	mem.Put("s3://bucket/k", []byte("0123456789"))
	n, err := node.New(baseConfig(t, mem))
	if err != nil {
		t.Fatal(err)
	}
	if n.Ready() {
		t.Fatal("ready before Start")
	}
	ctx := context.Background()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err == nil {
		t.Fatal("second Start succeeded")
	}
	base := "http://" + n.HTTPAddr()
	if s := httpStatus(t, base+"/readyz"); s != 200 || !n.Ready() {
		t.Fatalf("/readyz %d after Start", s)
	}
	if s := httpStatus(t, base+"/healthz"); s != 200 {
		t.Fatalf("/healthz %d", s)
	}
	if s := httpStatus(t, base+"/s3-gateway-not-mounted/k"); s != 404 {
		t.Fatalf("gateway path without a gateway: %d, want 404", s)
	}
	if err := n.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if s := httpStatus(t, base+"/readyz"); s != 503 || n.Ready() || !n.Draining() {
		t.Fatalf("/readyz %d while draining", s)
	}
	if s := httpStatus(t, base+"/healthz"); s != 200 {
		t.Fatalf("/healthz %d while draining", s)
	}
	cl := nodetest.Dial(t, n.GRPCAddr(), nil)
	got, _, err := nodetest.ReadRange(ctx, cl, &cachev1.ReadRangeRequest{Uri: "s3://bucket/k", Offset: 2, Length: 3})
	if err != nil || string(got) != "234" {
		t.Fatalf("read while draining: %q %v", got, err)
	}
	ping, err := cl.Ping(ctx, &cachev1.PingRequest{})
	if err != nil || ping.GetState() != "draining" || ping.GetNodeId() != "life" || ping.GetBlockSize() != 1<<20 {
		t.Fatalf("ping: %v %v", ping, err)
	}
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := n.Read(ctx, readpath.Request{URI: "s3://bucket/k", Length: 1}, func([]byte) error { return nil }); !errors.Is(err, node.ErrStopped) {
		t.Fatalf("read after Stop: %v", err)
	}
	select {
	case <-n.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
}

// TestNewFailureReleases: a New that fails late (bad gossip key file)
// releases the cache directory and the listeners it had taken.
func TestNewFailureReleases(t *testing.T) {
	mem := origintest.NewMemStore()
	dir := t.TempDir()
	cfg := baseConfig(t, mem)
	cfg.CacheDir, cfg.CacheSize = dir, 4<<20
	cfg.GossipKeyFile = filepath.Join(dir, "no-such-key")
	if _, err := node.New(cfg); err == nil {
		t.Fatal("New with a missing key file succeeded")
	}
	cfg.GossipKeyFile = ""
	n, err := node.New(cfg)
	if err != nil {
		t.Fatalf("New after a failed New on the same directory: %v", err)
	}
	// A second node on the same directory is refused while the first runs.
	if _, err := node.New(cfg); !errors.Is(err, cache.ErrDirLocked) {
		t.Fatalf("second New on a used directory: %v, want cache.ErrDirLocked", err)
	}
	n.Abort()
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}

// TestConfigErrors: invalid configurations are refused by New with
// ErrInvalidConfig or ErrTLS.
func TestConfigErrors(t *testing.T) {
	mem := origintest.NewMemStore()
	for name, mut := range map[string]func(*node.Config){
		"no origin":             func(c *node.Config) { c.Origin = nil },
		"page not dividing":     func(c *node.Config) { c.PageSize = 3 << 10; c.BlockSize = 1 << 20 },
		"dir without size":      func(c *node.Config) { c.CacheDir = t.TempDir() },
		"negative replication":  func(c *node.Config) { c.Replication = -1 },
		"cert without key":      func(c *node.Config) { c.TLSCertFile = "x" },
		"ca without cert":       func(c *node.Config) { c.TLSCAFile = "x" },
		"missing cert":          func(c *node.Config) { c.TLSCertFile, c.TLSKeyFile = "/nope", "/nope" },
		"unspecified listener":  func(c *node.Config) { c.GRPCAddr = "0.0.0.0:0" },
		"bad advertise address": func(c *node.Config) { c.HTTPAdvertiseAddr = "no-port" },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := baseConfig(t, mem)
			mut(&cfg)
			n, err := node.New(cfg)
			if err == nil {
				n.Abort()
				t.Fatal("New succeeded")
			}
			if !errors.Is(err, node.ErrInvalidConfig) && !errors.Is(err, node.ErrTLS) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}
