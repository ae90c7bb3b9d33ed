package node_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/membership"
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
		"size of one page":      func(c *node.Config) { c.CacheDir, c.CacheSize = t.TempDir(), int64(c.PageSize) },
		"negative replication":  func(c *node.Config) { c.Replication = -1 },
		"replication over max":  func(c *node.Config) { c.Replication = membership.MaxReplication + 1 },
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

// TestReflection: the server answers gRPC reflection with the
// CacheService and the health service.
func TestReflection(t *testing.T) {
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: origintest.NewMemStore()})
	cc, err := grpc.NewClient("passthrough:///"+c.Nodes[0].GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(cc).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, s := range resp.GetListServicesResponse().GetService() {
		found[s.GetName()] = true
	}
	if !found[node.ServiceName] || !found["grpc.health.v1.Health"] {
		t.Fatalf("reflection lists %v", found)
	}
}

// TestGossipKey: nodes sharing a gossip key form a cluster; a node without
// the key cannot join it and fails to start.
func TestGossipKey(t *testing.T) {
	key := filepath.Join(t.TempDir(), "gossip.key")
	if err := os.WriteFile(key, []byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mem := origintest.NewMemStore()
	c := nodetest.Start(t, nodetest.Options{N: 2, Origin: mem, Mutate: func(_ int, cfg *node.Config) { cfg.GossipKeyFile = key }})
	cfg := c.Config(t, 2, c.Nodes[0].GossipAddr())
	cfg.JoinTimeout = time.Second
	cfg.GossipKeyFile = "" // Config applied Mutate: take the key away
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Abort()
	if err := n.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "gossip key") {
		t.Fatalf("a node without the gossip key: Start = %v, want a join failure naming the key", err)
	}
	if len(c.Nodes[0].View().Members) != 2 {
		t.Fatalf("the keyless node got in: %d members", len(c.Nodes[0].View().Members))
	}
}

// TestReplicationMismatch: the nodes announce their replication (default
// 2) in the gossip, and a node started with another --replication is
// refused, like one with another block size: Start fails at once naming
// the flag and value to use, and the cluster never lists it.
func TestReplicationMismatch(t *testing.T) {
	mem := origintest.NewMemStore()
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: mem})
	if got := c.Nodes[0].View().Replication(); got != node.DefaultReplication {
		t.Fatalf("View.Replication() = %d, want the nodes' default %d", got, node.DefaultReplication)
	}
	cfg := c.Config(t, 1, c.Nodes[0].GossipAddr())
	cfg.Replication = 1
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Abort()
	began := time.Now()
	err = n.Start(context.Background())
	if !errors.Is(err, membership.ErrIncompatible) || !strings.Contains(err.Error(), "--replication=2") {
		t.Fatalf("Start with replication 1 in a cluster of 2: %v, want ErrIncompatible naming --replication=2", err)
	}
	if d := time.Since(began); d > cfg.JoinTimeout/2 {
		t.Errorf("the refusal took %v: it was retried as if the seed were unreachable", d)
	}
	if ms := c.Nodes[0].View().Members; len(ms) != 1 {
		t.Fatalf("the misfit got in: %d members", len(ms))
	}
}

// TestJoinInterrupted: a node still retrying its seeds when its context is
// cancelled (SIGTERM during start-up) stops with context.Canceled and says
// it was interrupted, not that the join timed out.
func TestJoinInterrupted(t *testing.T) {
	mem := origintest.NewMemStore()
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: mem})
	cfg := c.Config(t, 1, "127.0.0.1:1") // nothing listens there
	cfg.JoinTimeout = time.Minute
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Abort()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	began := time.Now()
	err = n.Start(ctx)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted while joining") {
		t.Fatalf("Start cancelled while joining: %v, want context.Canceled, \"interrupted while joining\"", err)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Fatalf("Start returned %v after the cancel", d)
	}
}

// TestAnnouncedCapacity: a node announces the capacity its cache has, not
// the one configured: a disk too small for one slab leaves a pass-through
// cache, announced as 0 bytes (so the ring and the scheduler do not show a
// cache that is not there), or, with --memory-size, a RAM cache of that
// size.
func TestAnnouncedCapacity(t *testing.T) {
	for _, tc := range []struct {
		memory   int64
		mode     string
		capacity int64
	}{{0, "pass-through", 0}, {8 << 20, "ram", 8 << 20}} {
		t.Run(tc.mode, func(t *testing.T) {
			dir := t.TempDir()
			if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
				t.Skipf("cannot mount a 64 KiB tmpfs (%v: %s)", err, out)
			}
			t.Cleanup(func() { exec.Command("umount", dir).Run() })
			c := nodetest.Start(t, nodetest.Options{N: 1, Origin: origintest.NewMemStore(), Mutate: func(_ int, cfg *node.Config) {
				cfg.CacheDir, cfg.CacheSize, cfg.MemorySize = dir, 64<<20, tc.memory
			}})
			m, ok := c.Nodes[0].View().Member(c.Nodes[0].ID())
			if !ok {
				t.Fatal("the node is not in its own view")
			}
			if st := c.Nodes[0].CacheStats(); st.Mode != tc.mode || m.CapacityBytes != tc.capacity {
				t.Fatalf("cache mode %q, announced capacity %d; want %s, %d", st.Mode, m.CapacityBytes, tc.mode, tc.capacity)
			}
		})
	}
}

// TestCachelessNodeOwnsNothing: in a cluster of three real nodes where one
// has no cache (a disk too small for one slab, no memory tier), every node
// builds a ring of the other two, so the cacheless node's share of the
// blocks is cached there: a second read through the cacheless node is all
// peer hits, where it used to go to the origin for the blocks it owned.
func TestCachelessNodeOwnsNothing(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a 64 KiB tmpfs (%v: %s)", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	mem := origintest.NewMemStore()
	size := int64(8 * nodetest.DefaultBlockSize) // blocks spread over every node of the ring
	uri := "s3://bkt/cacheless.bin"
	data := randBytes(11, int(size))
	mem.Put(uri, data)
	c := nodetest.Start(t, nodetest.Options{N: 3, Origin: mem, Replication: 1, Mutate: func(i int, cfg *node.Config) {
		if i == 2 {
			cfg.CacheDir, cfg.CacheSize, cfg.MemorySize = dir, 64<<20, 0
		}
	}})
	if st := c.Nodes[2].CacheStats(); st.Mode != "pass-through" {
		t.Fatalf("node 2's cache mode %q, want pass-through", st.Mode)
	}
	for i, n := range c.Nodes {
		var ids []string
		for _, rn := range n.View().Ring.Nodes() {
			ids = append(ids, rn.ID)
		}
		if len(ids) != 2 || slices.Contains(ids, c.Nodes[2].ID()) {
			t.Fatalf("node %d's ring: %v, want the two nodes with a cache", i, ids)
		}
	}
	cl := c.Client(t, 2)
	rangeRead(t, cl, uri, 0, size)
	got, s := rangeRead(t, cl, uri, 0, size)
	if s.OriginBytes != 0 || s.PeerHitBytes != size || !bytes.Equal(got, data) {
		t.Fatalf("second read through the cacheless node: %d origin bytes, %d peer hit bytes (want 0 and %d), bytes equal %v",
			s.OriginBytes, s.PeerHitBytes, size, bytes.Equal(got, data))
	}
}

// TestDuplicateIDJoinRaceEndsOneNode: two nodes started with one id join
// through different members at the same time, so both are let in; the
// one whose gossip stops (membership.Membership.Err) reports it on
// ServeErr, which makes the daemon exit, and the other keeps running.
// Was: both ran on, and the cluster disagreed for good on which of them
// the id named.
func TestDuplicateIDJoinRaceEndsOneNode(t *testing.T) {
	mem := origintest.NewMemStore()
	c := nodetest.Start(t, nodetest.Options{N: 2, Origin: mem})
	dups := make([]*node.Node, 2)
	for i := range dups {
		cfg := c.Config(t, 2+i, c.Nodes[i].GossipAddr())
		cfg.ID = "dup"
		n, err := node.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			n.Stop(ctx)
		})
		dups[i] = n
	}
	errs := make(chan error, 2)
	for _, n := range dups {
		go func() { errs <- n.Start(context.Background()) }()
	}
	for range dups {
		switch err := <-errs; {
		case errors.Is(err, membership.ErrDuplicateID):
			t.Skipf("the Joins did not overlap: one Start was refused at once (%v)", err)
		case err != nil:
			t.Fatalf("Start: %v", err)
		}
	}
	select {
	case err := <-dups[0].ServeErr():
		if !errors.Is(err, membership.ErrDuplicateID) {
			t.Fatalf("ServeErr: %v, want ErrDuplicateID", err)
		}
		t.Logf("dup at %s: %v", dups[0].GossipAddr(), err)
	case err := <-dups[1].ServeErr():
		if !errors.Is(err, membership.ErrDuplicateID) {
			t.Fatalf("ServeErr: %v, want ErrDuplicateID", err)
		}
		t.Logf("dup at %s: %v", dups[1].GossipAddr(), err)
	case <-time.After(30 * time.Second): // a claimant must stay live 5 s (membership's conflictRecheck)
		var where []string
		for _, n := range c.Nodes {
			m, _ := n.View().Member("dup")
			where = append(where, n.ID()+" lists dup at "+m.GossipAddr)
		}
		t.Fatalf("both nodes with id dup still run 30 s after starting, no ServeErr: %s", strings.Join(where, "; "))
	}
}
