package scheduler_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/membership/membershiptest"
	"github.com/locuscache/locus/pkg/ring"
	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// ownerOnlyNode is a cache node announcing replication 1 (a task is
// DATA_LOCAL only on its block's owner) with the given rack and slots.
func ownerOnlyNode(id, rack string, slots int) membership.NodeMeta {
	m := membershiptest.CacheNode(id)
	m.Rack, m.Slots, m.Replication = rack, slots, 1
	return m
}

// waitQueued polls GET /v1/ring until node has n queued tasks waiting for it.
func waitQueued(t *testing.T, c *schedulertest.Client, node string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := c.Ring(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range r.Members {
			if m.Node == node && m.Waiting == n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %d tasks waiting for %s after 10s: %+v", n, node, r.Members)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type placed struct {
	p   schedapi.Placement
	err error
}

// placedOnNewOwner waits up to 10s for the placement of task t on ch and
// checks it went to n2, the block's owner on the ring of epoch, as
// DATA_LOCAL; stuck describes the failure when it does not come. It
// returns the placement.
func placedOnNewOwner(t *testing.T, ch <-chan placed, epoch uint64, stuck string) schedapi.Placement {
	t.Helper()
	var got placed
	select {
	case got = <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal(stuck)
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	if p := got.p; p.Node != "n2" || p.Owner != "n2" || p.Locality != "DATA_LOCAL" || p.RingEpoch != epoch {
		t.Errorf("got t on %s (owner %s) %s at ring epoch %x, want on n2 (owner n2) DATA_LOCAL at the new ring's epoch %x",
			p.Node, p.Owner, p.Locality, p.RingEpoch, epoch)
	}
	return got.p
}

// placeAsync places one task in the background.
func placeAsync(c *schedulertest.Client, req schedapi.PlaceRequest) <-chan placed {
	ch := make(chan placed, 1)
	go func() {
		p, err := c.Place(context.Background(), req)
		ch <- placed{p, err}
	}()
	return ch
}

// TestQueuedTaskFollowsJoin runs the scheduler against real memberlist
// members on loopback. A task waits (delay scheduling, a long locality
// wait) for the one slot of n1, the owner of its block; then n2 joins and
// the new ring gives the block to n2. The task must run on n2 at once,
// DATA_LOCAL, with n2 as owner and the new ring's epoch, not keep waiting
// for n1, which no longer owns the block.
func TestQueuedTaskFollowsJoin(t *testing.T) {
	n1, n2 := ownerOnlyNode("n1", "r1", 1), ownerOnlyNode("n2", "r2", 1)
	ms := membershiptest.Start(t, n1)
	s := schedulertest.Start(t, scheduler.Config{Join: []string{ms[0].GossipAddr()}})
	c := schedulertest.NewClient(s.HTTPAddr())
	waitRing(t, c, 1, 5*time.Second)
	ctx := context.Background()

	after := membershiptest.View(t, n1, n2)
	uri := ownedBy(t, after, "n2", 1)[0]
	busy, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "busy", Split: split("s3://bucket/busy"), WaitMS: -1})
	if err != nil || busy.Node != "n1" {
		t.Fatalf("place busy: %+v, %v; want it on n1", busy, err)
	}
	const wait = 60_000 // ms: the task does not step down during the test
	ch := placeAsync(c, schedapi.PlaceRequest{Job: "j", Task: "t", Split: split(uri), WaitMS: wait})
	waitQueued(t, c, "n1", 1)

	m2 := membershiptest.NewAlone(t, n2)
	if _, err := m2.Join([]string{ms[0].GossipAddr()}); err != nil {
		t.Fatal(err)
	}
	p := placedOnNewOwner(t, ch, after.Epoch, "task t still queued 10s after n2 joined and took over its block (it waits for n1, the old owner)")
	if p.WaitedMS >= wait {
		t.Errorf("t waited %d ms, want less than its locality wait %d ms", p.WaitedMS, wait)
	}
	cnt, err := c.Counters(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	if cnt.DataLocalTasks != 2 || cnt.RackLocalTasks != 0 || cnt.OtherLocalTasks != 0 {
		t.Errorf("got counters data %d rack %d other %d, want 2 0 0", cnt.DataLocalTasks, cnt.RackLocalTasks, cnt.OtherLocalTasks)
	}
}

// TestQueuedTaskFollowsDeadOwner: a task waits for n1, the owner of its
// block, and n1 crashes. The new ring gives the block to n2 (busy); the
// task must wait for n2, within its original locality wait, and run there
// DATA_LOCAL once n2 frees a slot, rather than end its wait because its
// old owner is gone and take n3's free slot in the dead owner's rack.
func TestQueuedTaskFollowsDeadOwner(t *testing.T) {
	n1, n2, n3 := ownerOnlyNode("n1", "r1", 1), ownerOnlyNode("n2", "r2", 1), ownerOnlyNode("n3", "r1", 1)
	before, after := membershiptest.View(t, n1, n2, n3), membershiptest.View(t, n2, n3)
	var uri string
	for _, u := range ownedBy(t, before, "n1", 200) {
		key, err := ring.PlacementKey(u, 0, 1<<20, membership.DefaultBlockSize)
		if err != nil {
			t.Fatal(err)
		}
		if after.Ring.Owner(key).ID == "n2" {
			uri = u
			break
		}
	}
	if uri == "" {
		t.Fatal("no URI owned by n1, then by n2 once n1 is gone")
	}
	ms := membershiptest.Start(t, n1, n2, n3)
	s := schedulertest.Start(t, scheduler.Config{Join: []string{ms[0].GossipAddr()}})
	c := schedulertest.NewClient(s.HTTPAddr())
	waitRing(t, c, 3, 5*time.Second)
	ctx := context.Background()

	for _, node := range []string{"n1", "n2"} {
		p, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "busy-" + node, Split: split(ownedBy(t, before, node, 1)[0]), WaitMS: -1})
		if err != nil || p.Node != node {
			t.Fatalf("place busy-%s: %+v, %v; want it on %s", node, p, err, node)
		}
	}
	const wait = 60_000 // ms: the task does not step down during the test
	ch := placeAsync(c, schedapi.PlaceRequest{Job: "j", Task: "t", Split: split(uri), WaitMS: wait})
	waitQueued(t, c, "n1", 1)

	if err := ms[0].Shutdown(); err != nil { // n1 crashes
		t.Fatal(err)
	}
	waitRing(t, c, 2, 10*time.Second)
	select {
	case got := <-ch:
		t.Fatalf("t placed %+v (err %v) when its owner died, want it waiting for n2, its block's new owner", got.p, got.err)
	default:
	}
	waitQueued(t, c, "n2", 1)
	if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "j", Task: "busy-n2", LocalHitBytes: 1}); err != nil {
		t.Fatal(err)
	}
	placedOnNewOwner(t, ch, after.Epoch, "t still queued 10s after n2 freed its slot")
}

// laggingViews is a Membership whose View (what a request computes its
// preference lists on) returns a pinned older View once stale is set,
// while the membership loop gets the current ones: a request that read the
// View just before a newer one was applied to the placer.
type laggingViews struct {
	*schedulertest.Views
	mu      sync.Mutex
	stale   *membership.View
	applied chan *membership.View // each View the loop applied
	last    *membership.View
}

func (l *laggingViews) View() *membership.View {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stale != nil {
		return l.stale
	}
	return l.Views.View()
}

func (l *laggingViews) WaitFor(ctx context.Context, cond func(*membership.View) bool) (*membership.View, error) {
	// The loop calls WaitFor again only once it applied the View it got last.
	l.mu.Lock()
	if l.last != nil {
		select {
		case l.applied <- l.last:
		default:
		}
	}
	l.mu.Unlock()
	v, err := l.Views.WaitFor(ctx, cond)
	l.mu.Lock()
	l.last = v
	l.mu.Unlock()
	return v, err
}

// TestQueuedTaskUsesAppliedRing: a request computes its task's preference
// list on the View it read, but the placer may already have applied a
// newer ring (whose re-keying the task missed, not being queued yet). The
// task must be queued with the applied ring's list: it waits for, and runs
// DATA_LOCAL on, its block's owner on that ring.
func TestQueuedTaskUsesAppliedRing(t *testing.T) {
	n1 := schedulertest.Replication(schedulertest.Node("n1", "r1", 1), 1)
	n2 := schedulertest.Replication(schedulertest.Node("n2", "r2", 1), 1)
	views := &laggingViews{Views: schedulertest.NewViews(t, n1), applied: make(chan *membership.View, 8)}
	old := views.Views.View()
	_, c := startWith(t, views, nil)
	ctx := context.Background()
	if err := views.Views.Set(n1, n2); err != nil {
		t.Fatal(err)
	}
	cur := views.Views.View()
	for deadline := time.After(10 * time.Second); ; {
		select {
		case v := <-views.applied:
			if v != cur {
				continue
			}
		case <-deadline:
			t.Fatal("the scheduler did not apply the two-node View within 10s")
		}
		break
	}
	for _, node := range []string{"n1", "n2"} {
		p, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "busy-" + node, Split: split(ownedBy(t, cur, node, 1)[0]), WaitMS: -1})
		if err != nil || p.Node != node {
			t.Fatalf("place busy-%s: %+v, %v; want it on %s", node, p, err, node)
		}
	}
	views.mu.Lock()
	views.stale = old // requests now read the one-node View
	views.mu.Unlock()
	ch := placeAsync(c, schedapi.PlaceRequest{Job: "j", Task: "t", Split: split(ownedBy(t, cur, "n2", 1)[0]), WaitMS: 60_000})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		cnt, err := c.Counters(ctx, "j") // GET /v1/ring would show the stale View
		if err != nil {
			t.Fatal(err)
		}
		if cnt.Queued == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("t not queued after 10s: %+v", cnt)
		}
	}
	if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "j", Task: "busy-n2", LocalHitBytes: 1}); err != nil {
		t.Fatal(err)
	}
	placedOnNewOwner(t, ch, cur.Epoch, "t still queued 10s after n2, its block's owner, freed its slot")
}

// TestQueuedBatchTaskFollowsJoin is TestQueuedTaskFollowsJoin for a task
// of a batch (PlaceBatch keeps waiting while some node, here n3, has a
// free slot): the joining n2 takes over its block and runs it DATA_LOCAL.
func TestQueuedBatchTaskFollowsJoin(t *testing.T) {
	n1, n2, n3 := ownerOnlyNode("n1", "r1", 1), ownerOnlyNode("n2", "r2", 1), ownerOnlyNode("n3", "r3", 1)
	before, after := membershiptest.View(t, n1, n3), membershiptest.View(t, n1, n2, n3)
	var uri string
	for _, u := range ownedBy(t, after, "n2", 200) {
		key, err := ring.PlacementKey(u, 0, 1<<20, membership.DefaultBlockSize)
		if err != nil {
			t.Fatal(err)
		}
		if before.Ring.Owner(key).ID == "n1" {
			uri = u
			break
		}
	}
	if uri == "" {
		t.Fatal("no URI owned by n1, then by n2 once it joins")
	}
	ms := membershiptest.Start(t, n1, n3)
	s := schedulertest.Start(t, scheduler.Config{Join: []string{ms[0].GossipAddr()}})
	c := schedulertest.NewClient(s.HTTPAddr())
	waitRing(t, c, 2, 5*time.Second)
	ctx := context.Background()
	busy, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "busy", Split: split(ownedBy(t, before, "n1", 1)[0]), WaitMS: -1})
	if err != nil || busy.Node != "n1" {
		t.Fatalf("place busy: %+v, %v; want it on n1", busy, err)
	}
	ch := make(chan schedapi.PlaceBatchResponse, 1)
	errc := make(chan error, 1)
	go func() {
		r, err := c.PlaceBatch(ctx, schedapi.PlaceBatchRequest{Job: "j", WaitMS: 60_000, Tasks: []schedapi.BatchTask{{Task: "t", Split: split(uri)}}})
		ch <- r
		errc <- err
	}()
	waitQueued(t, c, "n1", 1)
	m2 := membershiptest.NewAlone(t, n2)
	if _, err := m2.Join([]string{ms[0].GossipAddr()}); err != nil {
		t.Fatal(err)
	}
	var r schedapi.PlaceBatchResponse
	select {
	case r = <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("batch task t still queued 10s after n2 joined and took over its block")
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if len(r.Placements) != 1 {
		t.Fatalf("got %+v, want one placement", r)
	}
	if p := r.Placements[0]; p.Node != "n2" || p.Owner != "n2" || p.Locality != "DATA_LOCAL" || p.RingEpoch != after.Epoch {
		t.Errorf("got t on %s (owner %s) %s at ring epoch %x (error %q), want on n2 (owner n2) DATA_LOCAL at epoch %x",
			p.Node, p.Owner, p.Locality, p.RingEpoch, p.Error, after.Epoch)
	}
}
