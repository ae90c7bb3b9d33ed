package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// TestDrainedNodeLeavingKeepsItsTasks: a cache node that drains (SIGTERM)
// waits only for the reads in flight, then leaves the gossip; the tasks
// placed on it that already read their splits are still running at their
// executors. They complete normally afterwards: the completion is
// recorded with its bytes (nothing lost), and once none runs the node is
// gone from the ring. Was: the leave lost them, so each completion got
// 400 not_found and the job's counters dropped bytes the nodes had
// served (a reviewer's real cluster: every task on a drained node whose
// executor was still computing when the node left).
func TestDrainedNodeLeavingKeepsItsTasks(t *testing.T) {
	n1, n2 := schedulertest.Node("n1", "r1", 2), schedulertest.Node("n2", "r2", 2)
	views := schedulertest.NewViews(t, n1, n2)
	_, c := startWith(t, views, nil)
	ctx := context.Background()
	ps := placeAllNow(t, c, "j", 4) // two on each node
	ringState := func() map[string]schedapi.RingMember {
		r, err := c.Ring(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]schedapi.RingMember{}
		for _, m := range r.Members {
			out[m.Node] = m
		}
		return out
	}
	await := func(what string, cond func(map[string]schedapi.RingMember) bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(ringState()); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: ring %v", what, ringState())
			}
		}
	}
	if err := views.Set(schedulertest.Draining(n1), n2); err != nil {
		t.Fatal(err)
	}
	await("n1 draining", func(r map[string]schedapi.RingMember) bool { return r["n1"].State == "draining" })
	// Its reads done, n1 leaves; its two tasks are still running.
	if err := views.Set(n2); err != nil {
		t.Fatal(err)
	}
	await("n1 left", func(r map[string]schedapi.RingMember) bool { return r["n1"].State != "draining" })

	// n2's tasks complete one by one, n1's in one batch.
	var want int64
	var batch []schedapi.CompleteTask
	for _, p := range ps {
		if p.Node == "n1" {
			batch = append(batch, schedapi.CompleteTask{Task: p.Task, LocalHitBytes: 100})
			continue
		}
		if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "j", Task: p.Task, LocalHitBytes: 100}); err != nil {
			t.Errorf("complete of %s (placed on %s): %v", p.Task, p.Node, err)
			continue
		}
		want += 100
	}
	resp, err := c.CompleteBatch(ctx, schedapi.CompleteBatchRequest{Job: "j", Tasks: batch})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		if r.Error != "" {
			t.Errorf("complete of %s (placed on the drained n1): %s, want it recorded", r.Task, r.Error)
			continue
		}
		want += 100
	}
	cnt, err := c.Counters(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	if cnt.Lost != 0 || cnt.Completed != 4 || cnt.Running != 0 || cnt.Bytes != 400 || want != 400 {
		t.Errorf("counters: lost %d, completed %d, running %d, bytes %d; want 0, 4, 0, 400", cnt.Lost, cnt.Completed, cnt.Running, cnt.Bytes)
	}
	if m, ok := ringState()["n1"]; ok {
		t.Errorf("the drained n1 is still in the ring with no task left: %+v", m)
	}
	// No new task goes to it.
	for i := 0; i < 2; i++ {
		p, err := c.Place(ctx, schedapi.PlaceRequest{Job: "k", Task: "x" + string(rune('0'+i)), Split: split("s3://bkt/z"), WaitMS: -1})
		if err != nil {
			t.Fatal(err)
		}
		if p.Node != "n2" {
			t.Errorf("task placed on %s, want n2 (n1 left)", p.Node)
		}
	}
}

// TestDrainedNodeRejoiningFreesItsSlots: a drained node that left with
// tasks running and joins again (a restart) starts with every slot free:
// the tasks still counted on it are lost, as for any restart, and never
// hold its slots for good.
func TestDrainedNodeRejoiningFreesItsSlots(t *testing.T) {
	n1, n2 := schedulertest.Node("n1", "r1", 2), schedulertest.Node("n2", "r2", 2)
	views := schedulertest.NewViews(t, n1, n2)
	s, c := startWith(t, views, nil)
	ctx := context.Background()
	placeAllNow(t, c, "j", 4)
	used := func(id string) (int, bool) {
		for _, m := range s.Ring().Members {
			if m.Node == id {
				return m.SlotsInUse, true
			}
		}
		return 0, false
	}
	for _, step := range [][]membership.Member{{schedulertest.Draining(n1), n2}, {n2}, {n1, n2}} {
		if err := views.Set(step...); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if u, ok := used("n1"); !ok || u != 0 {
		t.Fatalf("rejoined n1: %d slots in use (listed %v), want 0", u, ok)
	}
	cnt, err := c.Counters(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	if cnt.Lost != 2 || cnt.Running != 2 {
		t.Errorf("counters: lost %d, running %d; want 2 (n1's, from before its restart) and 2 (n2's)", cnt.Lost, cnt.Running)
	}
}
