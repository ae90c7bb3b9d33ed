package node_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/node"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/readpath"
	"github.com/locuscache/locus/pkg/ring"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// Partition test bounds: how long each side may take to drop the other
// side's nodes after the cut, and how long the cluster may take to agree
// on one ring again after the heal.
const (
	partitionDetectBound = 8 * time.Second
	partitionHealBound   = 10 * time.Second
	// partitionHold is how long the partition lasts once detected: longer
	// than the loopback tuning's GossipToTheDeadTime (2s), after which a
	// dead member is forgotten and no longer gossiped to.
	partitionHold = 4 * time.Second
)

// partNode is one cachenode process of TestPartition with its client.
type partNode struct {
	*nodetest.Process
	side string // "A" or "B"
	cl   cachev1.CacheServiceClient
}

// ringOf returns the view a cluster of the cache nodes ids computes
// (its Epoch and Ring) (computed here the way every member does: the
// test checks that the nodes report this epoch).
func ringOf(t *testing.T, ids ...string) *membership.View {
	t.Helper()
	var ms []membership.Member
	for _, id := range ids {
		ms = append(ms, membership.Member{NodeMeta: membership.NodeMeta{ID: id, GRPCAddr: "x:1", HTTPAddr: "x:2"}, GossipAddr: "x:3"})
	}
	v, err := membership.NewView(ms, ring.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// partReads is what one node's reader saw during the partition.
type partReads struct {
	n       int              // reads finished
	first   readpath.Summary // the first read's summary
	slowest time.Duration
	err     error // the first failure: an error or wrong bytes
}

// run reads [0, size) through cl until stop closes or a read fails,
// checking each read's sha256 against sum.
func (r *partReads) run(cl cachev1.CacheServiceClient, uri string, size int64, sum [32]byte, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		begin := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		b, s, err := nodetest.ReadRange(ctx, cl, &cachev1.ReadRangeRequest{Uri: uri, Offset: 0, Length: size})
		cancel()
		if err == nil && sha256.Sum256(b) != sum {
			err = fmt.Errorf("%d bytes, sha256 differs from the file's (%+v)", len(b), s)
		}
		if err != nil {
			r.err = fmt.Errorf("read %d (after %v): %w", r.n+1, time.Since(begin).Round(time.Millisecond), err)
			return
		}
		if r.n == 0 {
			r.first = s
		}
		r.n++
		r.slowest = max(r.slowest, time.Since(begin))
		time.Sleep(50 * time.Millisecond)
	}
}

func pingEpoch(cl cachev1.CacheServiceClient) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r, err := cl.Ping(ctx, &cachev1.PingRequest{})
	return r.GetRingEpoch(), err
}

// TestPartition cuts a real network between cachenode processes: two
// Linux network namespaces joined by a veth pair, nodes n1 and n3 in A
// (10.77.0.1, 10.77.0.3), n2 in B (10.77.0.2), origin file:// on the
// shared file system. It checks that
//
//  1. the three nodes agree on the ring {n1,n2,n3} (the epoch computed
//     here from the ids) and a read on the block's non-owner is a peer hit;
//  2. with the link down, side A drops n2 and side B drops n1 and n3
//     (each node reports its side's ring) within partitionDetectBound,
//     while reads on every node, polled all along, return the file's bytes
//     (never an error);
//  3. with the link up again, all nodes report the full ring within
//     partitionHealBound and the non-owner's second read is a peer hit
//     again.
//
// It needs root and `ip netns`; it skips otherwise, or fails when
// LOCUS_REQUIRE_NETNS=1 (.ci/run sets it when it could create a network
// namespace itself: a container without CAP_SYS_ADMIN cannot).
func TestPartition(t *testing.T) {
	if err := nodetest.NetnsAvailable(); err != nil {
		msg := "network partition test: " + err.Error()
		if os.Getenv("LOCUS_REQUIRE_NETNS") == "1" {
			t.Fatal(msg + " (LOCUS_REQUIRE_NETNS=1)")
		}
		t.Skip(msg)
	}
	pid := os.Getpid()
	nsA := nodetest.NewNetns(t, fmt.Sprintf("locus-pA-%d", pid))
	nsB := nodetest.NewNetns(t, fmt.Sprintf("locus-pB-%d", pid))
	// The veth ends are created inside the namespaces: nothing is added
	// to the root namespace, so neither the names nor the addresses can
	// collide with the host or with another run.
	vA, vB := fmt.Sprintf("lpa%d", pid), fmt.Sprintf("lpb%d", pid)
	nodetest.IP(t, "link", "add", vA, "netns", nsA.Name, "type", "veth", "peer", "name", vB, "netns", nsB.Name)
	nsA.IP(t, "addr", "add", "10.77.0.1/24", "dev", vA)
	nsA.IP(t, "addr", "add", "10.77.0.3/24", "dev", vA)
	nsB.IP(t, "addr", "add", "10.77.0.2/24", "dev", vB)
	nsA.IP(t, "link", "set", vA, "up")
	nsB.IP(t, "link", "set", vB, "up")

	root := t.TempDir()
	const size = 3 << 20
	data := randBytes(11, size)
	sum := sha256.Sum256(data)
	if err := os.WriteFile(filepath.Join(root, "part.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	uri := "file://" + root + "/part.bin"

	bin := nodetest.BuildCachenode(t)
	args := []string{"--block-size=1MiB", "--page-size=64KiB", "--memory-size=64MiB", "--peer-idle-timeout=2s"}
	nodes := map[string]*partNode{}
	start := func(id, ip, side string, ns *nodetest.Netns, join ...string) {
		p := nodetest.StartProcess(t, bin, nodetest.ProcessOptions{ID: id, IP: ip, Netns: ns, FileRoot: root, Args: args, Join: join})
		nodes[id] = &partNode{Process: p, side: side, cl: ns.Dial(t, p.GRPCAddr)}
	}
	t0 := time.Now()
	start("n1", "10.77.0.1", "A", nsA)
	start("n2", "10.77.0.2", "B", nsB, nodes["n1"].GossipAddr)
	start("n3", "10.77.0.3", "A", nsA, nodes["n1"].GossipAddr)
	t.Logf("3 nodes ready after %v", time.Since(t0).Round(time.Millisecond))

	full, sideA, sideB := ringOf(t, "n1", "n2", "n3"), ringOf(t, "n1", "n3"), ringOf(t, "n2")
	sideRing := map[string]*membership.View{"A": sideA, "B": sideB}
	ids := []string{"n1", "n2", "n3"}

	// waitAll polls every node's ring epoch (every 20ms) until each
	// reports epoch(node), and returns when each first did.
	waitAll := func(what string, bound time.Duration, epoch func(*partNode) uint64) map[string]time.Duration {
		t.Helper()
		begin := time.Now()
		seen := map[string]time.Duration{}
		for len(seen) < len(nodes) {
			for _, id := range ids {
				if _, ok := seen[id]; ok {
					continue
				}
				if e, err := pingEpoch(nodes[id].cl); err == nil && e == epoch(nodes[id]) {
					seen[id] = time.Since(begin).Round(time.Millisecond)
				}
			}
			if len(seen) < len(nodes) && time.Since(begin) > bound {
				var last []string
				for _, id := range ids {
					e, err := pingEpoch(nodes[id].cl)
					last = append(last, fmt.Sprintf("%s: epoch %016x want %016x (%v)", id, e, epoch(nodes[id]), err))
				}
				t.Fatalf("%s: not every node reported its ring within %v (seen %v): %v", what, bound, seen, last)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return seen
	}

	// 1. One ring; the non-owner of block 0 reads it from a peer.
	waitAll("convergence", 15*time.Second, func(*partNode) uint64 { return full.Epoch })
	t.Logf("converged on epoch %016x after %v", full.Epoch, time.Since(t0).Round(time.Millisecond))
	repl := node.DefaultReplication
	owners := full.Ring.Owners(ring.BlockKey(uri, 0), repl)
	var reader *partNode
	for _, id := range ids {
		if !slices.ContainsFunc(owners, func(o ring.Node) bool { return o.ID == id }) {
			reader = nodes[id]
		}
	}
	if reader == nil {
		t.Fatalf("every node owns block 0 (owners %v, replication %d)", owners, repl)
	}
	const length = 512 << 10 // inside block 0
	// peerHit reads block 0 on the non-owner until a read is all peer hits,
	// for at most within (a peer that failed during the partition is
	// skipped for PeerBackoff after its last failure, and a read stalled
	// on it may have ended late).
	peerHit := func(what string, within time.Duration) {
		t.Helper()
		rangeRead(t, reader.cl, uri, 0, length)
		deadline := time.Now().Add(within)
		for {
			got, s := rangeRead(t, reader.cl, uri, 0, length)
			if !bytes.Equal(got, data[:length]) {
				t.Fatalf("%s: read on non-owner %s returned other bytes", what, reader.ID)
			}
			if s.PeerHitBytes == length {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: read on non-owner %s (owners %v): %+v, want %d peer-hit bytes", what, reader.ID, owners, s, length)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	peerHit("before the partition", 0)
	t.Logf("block 0: owners %v, non-owner %s reads it from a peer", owners, reader.ID)

	// 2. Cut the link: each side drops the other's nodes. Meanwhile every
	// node reads the whole object again and again (one goroutine each, so
	// a read stalled on an unreachable peer delays no other node's); none
	// may fail or return other bytes.
	stop := make(chan struct{})
	stats := make([]partReads, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stats[i].run(nodes[id].cl, uri, size, sum, stop)
		}()
	}
	stopReads := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopReads)
	cut := time.Now()
	nsA.IP(t, "link", "set", vA, "down")
	detect := waitAll("partition", partitionDetectBound, func(n *partNode) uint64 { return sideRing[n.side].Epoch })
	t.Logf("link down: each node reports its side's ring after %v", detect)
	// Hold the partition past GossipToTheDeadTime, so each side has
	// forgotten the other's nodes, not just marked them dead.
	time.Sleep(partitionHold)
	stopReads()
	t.Logf("partition held %v", time.Since(cut).Round(time.Millisecond))
	for i, id := range ids {
		st := &stats[i]
		t.Logf("reads on %s (side %s) during the partition: %d, slowest %v; first: %+v", id, nodes[id].side, st.n,
			st.slowest.Round(time.Millisecond), st.first)
		if st.err != nil {
			t.Errorf("read on %s (side %s) during the partition: %v", id, nodes[id].side, st.err)
		}
		if st.n == 0 {
			t.Errorf("no read on %s finished during the partition", id)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// 3. Heal: one ring again, and the non-owner reads from a peer again.
	nsA.IP(t, "link", "set", vA, "up")
	heal := waitAll("heal", partitionHealBound, func(*partNode) uint64 { return full.Epoch })
	t.Logf("link up: nodes report the full ring after %v", heal)
	peerHit("after the heal", node.DefaultPeerBackoff+time.Second)
}
