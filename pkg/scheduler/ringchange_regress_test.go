package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// awaitApplied waits until the scheduler's membership loop applied v.
func awaitApplied(t *testing.T, views *laggingViews, v *membership.View) {
	t.Helper()
	for deadline := time.After(10 * time.Second); ; {
		select {
		case got := <-views.applied:
			if got == v {
				return
			}
		case <-deadline:
			t.Fatal("the scheduler did not apply the View within 10s")
		}
	}
}

// staleReplication starts a scheduler over n1 (r1) and n2 (r2), each
// with one slot, whose cache nodes go from replication 1 to 2 (same ring);
// it places "busy" on n1 (uri[0], a block n1 owns), then makes requests
// read the replication-1 View while the placer has the replication-2 one
// applied. It returns the client, the applied View and two URIs of blocks
// n1 owns.
func staleReplication(t *testing.T) (*schedulertest.Client, *membership.View, []string) {
	t.Helper()
	n1 := schedulertest.Node("n1", "r1", 1)
	n2 := schedulertest.Node("n2", "r2", 1)
	views := &laggingViews{Views: schedulertest.NewViews(t, schedulertest.OwnerOnly(n1, n2)...), applied: make(chan *membership.View, 8)}
	old := views.Views.View() // replication 1
	_, c := startWith(t, views, nil)
	awaitApplied(t, views, old)
	// The cache nodes restart with replication 2 (same members).
	if err := views.Views.Set(schedulertest.Replication(n1, 2), schedulertest.Replication(n2, 2)); err != nil {
		t.Fatal(err)
	}
	cur := views.Views.View()
	awaitApplied(t, views, cur)
	uri := ownedBy(t, cur, "n1", 2)
	busy, err := c.Place(context.Background(), schedapi.PlaceRequest{Job: "j", Task: "busy", Split: split(uri[0]), WaitMS: -1})
	if err != nil || busy.Node != "n1" {
		t.Fatalf("place busy: %+v, %v; want it on n1", busy, err)
	}
	views.mu.Lock()
	views.stale = old // requests now read the replication-1 View
	views.mu.Unlock()
	return c, cur, uri
}

// TestPlaceUsesAppliedReplication: a request computes its task's
// preference list on the View it read before taking the lock; Place
// recomputes the list when the applied View's ring differs
// (appliedRingLocked), but with the replication of the stale View, and not
// at all when only the replication changed (same ring). The placer's
// queued tasks were re-keyed with the applied View's replication
// (applyView re-keys when replOf changes), so a task arriving with a stale
// View must get that replication too: here 2, so its list is [n1 n2] and,
// n1 being busy, it runs at once on n2, DATA_LOCAL (doc.go: "Tasks ... get
// their preference lists again from the new ring"; Replication: "placement
// uses ... the cache nodes'").
//
// Was (found by a review): it was queued with the one-node list [n1] of
// the old replication and waited for n1 (the 60s locality wait) while n2,
// in its block's list on the applied View, had a free slot; nothing
// re-keyed it until the next ring or replication change. Fixed:
// appliedRingLocked compares the replication too, and Place and
// PlaceBatch recompute the lists with the applied View's replication.
func TestPlaceUsesAppliedReplication(t *testing.T) {
	c, cur, uri := staleReplication(t)
	ch := placeAsync(c, schedapi.PlaceRequest{Job: "j", Task: "t", Split: split(uri[1]), WaitMS: 60_000})
	var got placed
	select {
	case got = <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("t (block owned by the busy n1) still queued 5s later: it was queued with the stale View's replication 1 ([n1]), " +
			"while on the applied View (replication 2) its list is [n1 n2] and n2 has a free slot")
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	if p := got.p; p.Node != "n2" || p.Owner != "n1" || p.Locality != "DATA_LOCAL" || p.RingEpoch != cur.Epoch {
		t.Errorf("got t on %s (owner %s) %s at epoch %x, want on n2 (owner n1) DATA_LOCAL at epoch %x", p.Node, p.Owner, p.Locality, p.RingEpoch, cur.Epoch)
	}
}

// TestPlaceBatchUsesAppliedReplication is
// TestPlaceUsesAppliedReplication for PlaceBatch, which recomputes
// its lists the same way (appliedRingLocked, then ownerIDs with the stale
// View's repl): the task must run at once on n2, in its list on the applied
// View (replication 2), not wait for the busy n1.
func TestPlaceBatchUsesAppliedReplication(t *testing.T) {
	c, cur, uri := staleReplication(t)
	ctx := context.Background()
	type answer struct {
		r   schedapi.PlaceBatchResponse
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		r, err := c.PlaceBatch(ctx, schedapi.PlaceBatchRequest{Job: "j", WaitMS: 60_000, Tasks: []schedapi.BatchTask{{Task: "t", Split: split(uri[1])}}})
		ch <- answer{r, err}
	}()
	var got answer
	select {
	case got = <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("batch task t still queued 5s later: queued with the stale View's replication 1 ([n1]) while its list on the applied View is [n1 n2] and n2 is free")
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	if len(got.r.Placements) != 1 {
		t.Fatalf("got %+v, want one placement", got.r)
	}
	if p := got.r.Placements[0]; p.Node != "n2" || p.Owner != "n1" || p.Locality != "DATA_LOCAL" || p.RingEpoch != cur.Epoch {
		t.Errorf("got t on %s (owner %s) %s at epoch %x (error %q), want on n2 (owner n1) DATA_LOCAL at epoch %x", p.Node, p.Owner, p.Locality, p.RingEpoch, p.Error, cur.Epoch)
	}
}

// TestFastRestartKeepsLocalityWait: a cache node that restarts under
// its id faster than the failure detector notices (a new Boot in one View)
// keeps its ring ranges: the ring, its epoch and every block's owner are
// unchanged, and its cache survives the restart (DESIGN: pkg/cache has
// "restart recovery"). A task waiting for it (its only preferred node)
// must keep waiting for it until its own locality wait ends, as the commit
// promises for a task whose owner changes ("waits for the new owner until
// its original deadline instead of going RACK_LOCAL at once").
//
// Was (found by a review): applyView removed the node (its tasks lost, and
// the placer ended the data-local wait of the tasks that only prefer it)
// and added it back, so t2, 60s from the end of its data-local wait, took
// n3's free slot RACK_LOCAL at once while n1, its block's owner, was alive.
// Fixed: placement.Placer.RestartNode loses the old process's tasks and
// keeps the node's waiters waiting.
func TestFastRestartKeepsLocalityWait(t *testing.T) {
	n1 := schedulertest.Replication(schedulertest.Node("n1", "r1", 1), 1)
	n3 := schedulertest.Replication(schedulertest.Node("n3", "r1", 1), 1)
	n1.Boot = 1
	views := &laggingViews{Views: schedulertest.NewViews(t, n1, n3), applied: make(chan *membership.View, 8)}
	first := views.Views.View()
	_, c := startWith(t, views, nil)
	awaitApplied(t, views, first)
	ctx := context.Background()
	busy, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "busy", Split: split(ownedBy(t, first, "n1", 1)[0]), WaitMS: -1})
	if err != nil || busy.Node != "n1" {
		t.Fatalf("place busy: %+v, %v; want it on n1", busy, err)
	}
	uris := ownedBy(t, first, "n1", 3)
	ch1 := placeAsync(c, schedapi.PlaceRequest{Job: "j", Task: "t1", Split: split(uris[1]), WaitMS: 60_000})
	waitQueued(t, c, "n1", 1)
	ch2 := placeAsync(c, schedapi.PlaceRequest{Job: "j", Task: "t2", Split: split(uris[2]), WaitMS: 60_000})
	waitQueued(t, c, "n1", 2)

	n1.Boot = 2 // n1 restarts: same id, rack, slots; same ring
	if err := views.Views.Set(n1, n3); err != nil {
		t.Fatal(err)
	}
	restarted := views.Views.View()
	if restarted.Epoch != first.Epoch {
		t.Fatalf("epoch changed across the restart: %x -> %x", first.Epoch, restarted.Epoch)
	}
	var got placed
	select {
	case got = <-ch1: // t1, the oldest waiter, takes n1's freed slot
	case <-time.After(10 * time.Second):
		t.Fatal("t1 not placed 10s after n1 restarted and freed its slot")
	}
	if got.err != nil || got.p.Node != "n1" || got.p.Locality != "DATA_LOCAL" {
		t.Fatalf("t1: %+v, %v; want it on n1 DATA_LOCAL", got.p, got.err)
	}
	cnt, err := c.Counters(ctx, "j") // after the settle that placed t1
	if err != nil {
		t.Fatal(err)
	}
	if cnt.RackLocalTasks != 0 || cnt.Queued != 1 {
		select {
		case g := <-ch2:
			t.Errorf("t2 placed on %s %s (owner %s) %d ms after it was queued, when n1 restarted; want it still waiting for n1, its block's owner on the unchanged ring, until its 60s locality wait ends",
				g.p.Node, g.p.Locality, g.p.Owner, g.p.WaitedMS)
		case <-time.After(5 * time.Second):
			t.Errorf("counters rack-local %d queued %d after n1 restarted; want 0 rack-local, t2 still queued", cnt.RackLocalTasks, cnt.Queued)
		}
	}
}
