package node_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/node"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/readpath"
	"github.com/locuscache/locus/pkg/ring"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// observer joins the cluster as an observer member, to watch states and
// compute owners as the nodes do.
func observer(t *testing.T, seed string) *membership.Membership {
	t.Helper()
	m, err := membership.New(membership.Config{
		Meta:     membership.NodeMeta{ID: "test-observer", Role: membership.RoleObserver},
		BindAddr: "127.0.0.1:0",
		Tuning:   membership.LoopbackTuning(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown() })
	if _, err := m.Join([]string{seed}); err != nil {
		t.Fatal(err)
	}
	return m
}

func waitView(t *testing.T, m *membership.Membership, what string, cond func(*membership.View) bool) *membership.View {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	v, err := m.WaitFor(ctx, cond)
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	return v
}

// waitEpoch waits until the node behind cl reports the ring epoch want.
func waitEpoch(t *testing.T, cl cachev1.CacheServiceClient, id string, want uint64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := cl.Ping(ctx, &cachev1.PingRequest{})
		cancel()
		if err == nil && r.GetRingEpoch() == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never reported ring epoch %016x (last: %v, %v)", id, want, r.GetRingEpoch(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOwnerKilled runs three cachenode processes and SIGKILLs the owner of
// a block while a node outside the block's preference list reads it.
//
// With --replication=1 the reads on the non-owner are peer hits; after the
// kill they still succeed, from the origin (owner_unavailable) until
// gossip drops the dead node, then through the new owner.
//
// With --replication=2 (the default) the reader is the one node outside
// the list; after the kill it reads through the list's second node at
// once: no byte is owner_unavailable, and the second read is a peer hit
// (while the ring still lists the dead owner).
func TestOwnerKilled(t *testing.T) {
	for _, repl := range []int{1, 2} {
		t.Run(fmt.Sprintf("replication=%d", repl), func(t *testing.T) { testOwnerKilled(t, repl) })
	}
}

func testOwnerKilled(t *testing.T, repl int) {
	gw := origintest.StartVersityGW(t)
	const size = 4 << 20
	data := randBytes(5, size)
	gw.Put(t, "kill.bin", data)
	uri := gw.URI("kill.bin")
	bin := nodetest.BuildCachenode(t)
	args := []string{"--block-size=1MiB", "--page-size=64KiB", "--memory-size=64MiB", "--peer-idle-timeout=2s"}
	if repl != node.DefaultReplication {
		args = append(args, fmt.Sprintf("--replication=%d", repl))
	}
	procs := map[string]*nodetest.Process{}
	var seed string
	for i := range 3 {
		o := nodetest.ProcessOptions{ID: fmt.Sprintf("p%d", i), IP: fmt.Sprintf("127.0.0.%d", i+1), VersityGW: gw, Args: args}
		if seed != "" {
			o.Join = []string{seed}
		}
		p := nodetest.StartProcess(t, bin, o)
		procs[p.ID] = p
		seed = p.GossipAddr
	}
	obs := observer(t, seed)
	v := waitView(t, obs, "3 cache members", func(v *membership.View) bool { return v.CacheMembers() == 3 })
	if got := v.Replication(); got != repl {
		t.Fatalf("the nodes announce replication %d, want %d", got, repl)
	}
	// Every node must see the ring the observer sees (the reader's
	// view decides whether it is in the list) before the reads.
	for _, p := range procs {
		waitEpoch(t, nodetest.Dial(t, p.GRPCAddr, nil), p.ID, v.Epoch)
	}
	list := v.Ring.Owners(ring.BlockKey(uri, 0), repl)
	owner := procs[list[0].ID]
	var reader *nodetest.Process
	for _, p := range procs {
		if !slices.ContainsFunc(list, func(n ring.Node) bool { return n.ID == p.ID }) {
			reader = p
		}
	}
	cl := nodetest.Dial(t, reader.GRPCAddr, nil)
	const length = 512 << 10 // inside block 0
	rangeRead(t, cl, uri, 0, length)
	got, s := rangeRead(t, cl, uri, 0, length)
	if !bytes.Equal(got, data[:length]) || s.PeerHitBytes != length {
		t.Fatalf("second read on non-owner %s (owner %s): %+v, want a peer hit", reader.ID, owner.ID, s)
	}
	ping := func() uint64 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := cl.Ping(ctx, &cachev1.PingRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetRingEpoch()
	}
	before := ping()
	owner.Kill()
	got, s = rangeRead(t, cl, uri, 0, length)
	after := ping()
	if !bytes.Equal(got, data[:length]) {
		t.Fatal("read after the kill: bytes differ")
	}
	switch {
	case repl == 1 && after == before && s.Misses[readpath.OwnerUnavailable].Bytes != length:
		t.Fatalf("read right after the kill, ring unchanged: %+v, want owner_unavailable misses", s)
	case repl > 1 && s.Misses[readpath.OwnerUnavailable].Bytes != 0:
		t.Fatalf("read right after the kill: %+v, want no owner_unavailable miss (the list's second node serves)", s)
	}
	t.Logf("read right after the kill: %+v (ring changed meanwhile: %v)", s, after != before)
	if repl > 1 {
		got, s = rangeRead(t, cl, uri, 0, length)
		if !bytes.Equal(got, data[:length]) || s.Misses[readpath.OwnerUnavailable].Bytes != 0 {
			t.Fatalf("second read after the kill: %+v", s)
		}
		if ping() == before && s.PeerHitBytes != length {
			t.Fatalf("second read after the kill, ring unchanged: %+v, want a peer hit from %s", s, list[1].ID)
		}
	}
	// Keep reading while gossip notices; every read succeeds.
	start := time.Now()
	for ping() == before {
		if time.Since(start) > 15*time.Second {
			t.Fatal("the dead owner was never dropped from the ring")
		}
		got, _ = rangeRead(t, cl, uri, 0, length)
		if !bytes.Equal(got, data[:length]) {
			t.Fatal("bytes differ while the owner is dead")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("ring dropped the dead owner after %v", time.Since(start).Round(time.Millisecond))
	got, s = rangeRead(t, cl, uri, 0, size)
	if !bytes.Equal(got, data) || s.Misses[readpath.OwnerUnavailable].Bytes != 0 {
		t.Fatalf("after the ring changed: %+v", s)
	}
}

// TestDrainAndWarmRestart: SIGTERM makes /readyz answer 503 and the
// member's state draining (seen by another member), lets the read in flight
// finish, and exits 0; restarted on the same cache directory the node
// serves the same range as local hits.
func TestDrainAndWarmRestart(t *testing.T) {
	gw := origintest.StartVersityGW(t)
	const size = 40 << 20
	data := randBytes(6, size)
	gw.Put(t, "drain.bin", data)
	uri := gw.URI("drain.bin")
	bin := nodetest.BuildCachenode(t)
	dir := t.TempDir()
	opts := nodetest.ProcessOptions{ID: "d0", VersityGW: gw, CacheDir: dir, CacheSize: "128MiB", Args: []string{"--drain-timeout=20s"}}
	t0 := time.Now()
	p := nodetest.StartProcess(t, bin, opts)
	t.Logf("node started after %v (build included)", time.Since(t0).Round(time.Millisecond))
	obs := observer(t, p.GossipAddr)
	waitView(t, obs, "the node", func(v *membership.View) bool { return v.CacheMembers() == 1 })

	cl := nodetest.Dial(t, p.GRPCAddr, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stream, err := cl.ReadRange(ctx, &cachev1.ReadRangeRequest{Uri: uri, Offset: 0, Length: size})
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	buf := append([]byte(nil), first.GetChunk().GetData()...)
	// The read is in flight (the client stopped receiving). Drain.
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, err := p.Readyz()
		if err == nil && code == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d (%v) 5s after SIGTERM", code, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitView(t, obs, "state draining", func(v *membership.View) bool {
		m, ok := v.Member("d0")
		return ok && m.State == membership.StateDraining
	})
	time.Sleep(300 * time.Millisecond)
	select {
	case <-p.Exited():
		t.Fatalf("the node exited with a read in flight:\n%s", p.Logs())
	default:
	}
	var sum *cachev1.ReadSummary
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("in-flight read failed during the drain after %d bytes: %v", len(buf), err)
		}
		if c := m.GetChunk(); c != nil {
			buf = append(buf, c.GetData()...)
		}
		if s := m.GetSummary(); s != nil {
			sum = s
		}
	}
	if sum == nil || !bytes.Equal(buf, data) {
		t.Fatalf("in-flight read: %d bytes, summary %v", len(buf), sum)
	}
	t.Logf("in-flight read finished at %v", time.Since(t0).Round(time.Millisecond))
	code, err := p.Wait(30 * time.Second)
	if err != nil || code != 0 {
		t.Fatalf("exit code %d, %v:\n%s", code, err, p.Logs())
	}
	waitView(t, obs, "the node gone", func(v *membership.View) bool { return v.CacheMembers() == 0 })

	t.Logf("exited at %v", time.Since(t0).Round(time.Millisecond))
	opts.GossipAddr, opts.GRPCAddr, opts.HTTPAddr = "", "", ""
	p2 := nodetest.StartProcess(t, bin, opts)
	cl2 := nodetest.Dial(t, p2.GRPCAddr, nil)
	got, s := rangeRead(t, cl2, uri, 0, size)
	if !bytes.Equal(got, data) {
		t.Fatal("bytes differ after the restart")
	}
	if s.LocalHitBytes != size {
		t.Fatalf("first read after the restart: %+v, want all local hits (warm cache)", s)
	}
}
