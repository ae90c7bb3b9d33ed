package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/ring"
	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// ownedBy returns n URIs whose first block's owner on v is node.
func ownedBy(t *testing.T, v *membership.View, node string, n int) []string {
	t.Helper()
	var out []string
	for i := 0; len(out) < n && i < 100000; i++ {
		uri := fmt.Sprintf("s3://bucket/%s/part-%05d.parquet", node, i)
		key, err := ring.PlacementKey(uri, 0, 1<<20, membership.DefaultBlockSize)
		if err != nil {
			t.Fatal(err)
		}
		if v.Ring.Owner(key).ID == node {
			out = append(out, uri)
		}
	}
	if len(out) < n {
		t.Fatalf("found only %d URIs owned by %s", len(out), node)
	}
	return out
}

// outcome is a fake cache outcome for a task, varied by locality so the
// per-locality hit ratios differ.
func outcome(loc string, i int) (local, peer, miss int64) {
	switch loc {
	case "DATA_LOCAL":
		return int64(1000 + i), 0, int64(i % 7)
	case "RACK_LOCAL":
		return 0, int64(500 + i), int64(100 + i)
	}
	return 0, int64(i), int64(1000)
}

// TestPlaceCompleteCounters places and completes tasks through the JSON
// API and checks the job's and the global counters against what the
// answers said: tasks per locality, bytes by source, hit ratios.
func TestPlaceCompleteCounters(t *testing.T) {
	views := threeNodes(t)
	_, c := startWith(t, views, nil)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	type sum struct{ tasks, local, peer, miss int64 }
	want := map[string]*sum{"DATA_LOCAL": {}, "RACK_LOCAL": {}, "OTHER_LOCAL": {}}
	for round := 0; round < 10; round++ {
		// Six tasks fill the six slots; waits of -1 let them go anywhere
		// at once, so some run off their owner.
		var ps []schedapi.Placement
		for i := 0; i < 6; i++ {
			p, err := c.Place(ctx, schedapi.PlaceRequest{
				Job: "q1", Task: fmt.Sprintf("r%d-t%d", round, i),
				Split:  schedapi.Split{URI: fmt.Sprintf("s3://bkt/f%d", rng.IntN(1000)), Offset: 0, Length: 1 << 20},
				WaitMS: -1,
			})
			if err != nil {
				t.Fatal(err)
			}
			if p.Node == "" || p.Address == "" || p.Owner == "" || p.RingEpoch == 0 {
				t.Fatalf("incomplete placement %+v", p)
			}
			if p.Node == p.Owner && p.Locality != "DATA_LOCAL" {
				t.Errorf("task on its owner %s is %s", p.Node, p.Locality)
			}
			ps = append(ps, p)
		}
		for i, p := range ps {
			l, pe, m := outcome(p.Locality, i)
			r, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "q1", Task: p.Task, LocalHitBytes: l, PeerHitBytes: pe, MissBytes: m, DurationMS: 5})
			if err != nil {
				t.Fatal(err)
			}
			if r.Locality != p.Locality {
				t.Errorf("complete says %s, place said %s", r.Locality, p.Locality)
			}
			s := want[p.Locality]
			s.tasks++
			s.local += l
			s.peer += pe
			s.miss += m
		}
	}
	for _, job := range []string{"q1", ""} {
		got, err := c.Counters(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		check := func(name string, got, want int64) {
			if got != want {
				t.Errorf("job %q: %s = %d, want %d", job, name, got, want)
			}
		}
		check("DATA_LOCAL_TASKS", got.DataLocalTasks, want["DATA_LOCAL"].tasks)
		check("RACK_LOCAL_TASKS", got.RackLocalTasks, want["RACK_LOCAL"].tasks)
		check("OTHER_LOCAL_TASKS", got.OtherLocalTasks, want["OTHER_LOCAL"].tasks)
		check("completed", got.Completed, 60)
		check("running", got.Running, 0)
		var all sum
		for loc, st := range map[string]schedapi.LocalityStats{"DATA_LOCAL": got.ByLocality.DataLocal, "RACK_LOCAL": got.ByLocality.RackLocal, "OTHER_LOCAL": got.ByLocality.OtherLocal} {
			w := want[loc]
			check(loc+" local bytes", st.LocalHitBytes, w.local)
			check(loc+" peer bytes", st.PeerHitBytes, w.peer)
			check(loc+" miss bytes", st.MissBytes, w.miss)
			check(loc+" bytes", st.Bytes, w.local+w.peer+w.miss)
			ratio := 0.0
			if b := w.local + w.peer + w.miss; b > 0 {
				ratio = float64(w.local+w.peer) / float64(b)
			}
			if st.HitRatio != ratio {
				t.Errorf("job %q: %s hit ratio %v, want %v", job, loc, st.HitRatio, ratio)
			}
			all.local += w.local
			all.peer += w.peer
			all.miss += w.miss
		}
		if r := float64(all.local+all.peer) / float64(all.local+all.peer+all.miss); got.HitRatio != r {
			t.Errorf("job %q: hit ratio %v, want %v", job, got.HitRatio, r)
		}
		if got.HitRatioByLocality.DataLocal != got.ByLocality.DataLocal.HitRatio {
			t.Errorf("hit_ratio_by_locality disagrees with by_locality")
		}
	}
	if want["DATA_LOCAL"].tasks == 0 {
		t.Errorf("no DATA_LOCAL task at all: %+v", want)
	}
}

// TestQueuedUntilComplete: a task waiting for its owner's only slot gets
// it as soon as the running task completes, DATA_LOCAL. (Owner-only
// preference lists: the nodes announce replication 1.)
func TestQueuedUntilComplete(t *testing.T) {
	views := schedulertest.NewViews(t, schedulertest.OwnerOnly(schedulertest.Node("n1", "r1", 1), schedulertest.Node("n2", "r2", 1))...)
	_, c := startWith(t, views, nil)
	ctx := context.Background()
	uris := ownedBy(t, views.View(), "n1", 2)
	a, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "a", Split: split(uris[0]), WaitMS: 5000})
	if err != nil || a.Node != "n1" || a.Locality != "DATA_LOCAL" {
		t.Fatalf("a: %+v %v", a, err)
	}
	got := make(chan schedapi.Placement, 1)
	go func() {
		b, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "b", Split: split(uris[1]), WaitMS: 5000})
		if err != nil {
			t.Error(err)
		}
		got <- b
	}()
	time.Sleep(150 * time.Millisecond)
	select {
	case b := <-got:
		t.Fatalf("b placed while n1 was busy: %+v", b)
	default:
	}
	cnt, _ := c.Counters(ctx, "j")
	if cnt.Queued != 1 {
		t.Errorf("queued = %d, want 1", cnt.Queued)
	}
	done := time.Now()
	if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "j", Task: "a", Bytes: 1}); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		if b.Node != "n1" || b.Locality != "DATA_LOCAL" {
			t.Errorf("b: %+v, want n1 DATA_LOCAL", b)
		}
		if d := time.Since(done); d > time.Second {
			t.Errorf("b placed %v after the slot freed", d)
		}
		if b.WaitedMS < 100 {
			t.Errorf("b waited %d ms, want >= 150", b.WaitedMS)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("b not placed after a completed")
	}
}

// TestLocalityLadder: a task whose owner is busy steps down to its
// owner's rack after its wait, and to another rack after twice its wait.
// (Owner-only preference lists: the nodes announce replication 1.)
func TestLocalityLadder(t *testing.T) {
	views := schedulertest.NewViews(t, schedulertest.OwnerOnly(
		schedulertest.Node("n1", "r1", 1), schedulertest.Node("n2", "r1", 1), schedulertest.Node("n3", "r2", 1))...)
	_, c := startWith(t, views, nil)
	ctx := context.Background()
	uris := ownedBy(t, views.View(), "n1", 3)
	const wait = 200
	place := func(task, uri string) (schedapi.Placement, time.Duration) {
		t.Helper()
		start := time.Now()
		p, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: task, Split: split(uri), WaitMS: wait})
		if err != nil {
			t.Fatal(err)
		}
		return p, time.Since(start)
	}
	a, d := place("a", uris[0])
	if a.Locality != "DATA_LOCAL" || d > 100*time.Millisecond {
		t.Fatalf("a: %+v after %v", a, d)
	}
	b, d := place("b", uris[1])
	if b.Node != "n2" || b.Locality != "RACK_LOCAL" || d < wait*time.Millisecond || d > 2*wait*time.Millisecond+500*time.Millisecond {
		t.Errorf("b: %s %s after %v, want n2 RACK_LOCAL after about %dms", b.Node, b.Locality, d, wait)
	}
	c3, d := place("c", uris[2])
	if c3.Node != "n3" || c3.Locality != "OTHER_LOCAL" || d < 2*wait*time.Millisecond || d > 2*wait*time.Millisecond+500*time.Millisecond {
		t.Errorf("c: %s %s after %v, want n3 OTHER_LOCAL after about %dms", c3.Node, c3.Locality, d, 2*wait)
	}
	cnt, err := c.Counters(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	if cnt.DataLocalTasks != 1 || cnt.RackLocalTasks != 1 || cnt.OtherLocalTasks != 1 {
		t.Errorf("counters %d/%d/%d, want 1/1/1", cnt.DataLocalTasks, cnt.RackLocalTasks, cnt.OtherLocalTasks)
	}
}

// TestBatchDeferral: a batch larger than the free slots returns at once
// with the rest deferred; resubmitted after completions they are placed.
// A batch whose tasks wait for locality while slots are free waits for
// them.
func TestBatchDeferral(t *testing.T) {
	ctx := context.Background()
	t.Run("no free slot", func(t *testing.T) {
		views := schedulertest.NewViews(t, schedulertest.Node("n1", "r1", 3))
		_, c := startWith(t, views, nil)
		tasks := make([]schedapi.BatchTask, 5)
		for i := range tasks {
			tasks[i] = schedapi.BatchTask{Task: fmt.Sprint("t", i), Split: split(fmt.Sprint("s3://bkt/", i))}
		}
		start := time.Now()
		resp, err := c.PlaceBatch(ctx, schedapi.PlaceBatchRequest{Job: "j", Tasks: tasks})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("batch took %v, want at once (no free slot left)", d)
		}
		var placed, deferred []string
		for i, p := range resp.Placements {
			if p.Task != tasks[i].Task {
				t.Fatalf("placement %d is for %q, want %q (request order)", i, p.Task, tasks[i].Task)
			}
			if p.Placed() {
				placed = append(placed, p.Task)
			} else {
				if p.Error != scheduler.DeferredNoSlot {
					t.Errorf("deferred %s: error %q", p.Task, p.Error)
				}
				deferred = append(deferred, p.Task)
			}
		}
		if len(placed) != 3 || len(deferred) != 2 {
			t.Fatalf("placed %v deferred %v, want 3 and 2", placed, deferred)
		}
		cnt, _ := c.Counters(ctx, "j")
		if cnt.Queued != 0 || cnt.Running != 3 {
			t.Errorf("queued %d running %d, want 0 and 3", cnt.Queued, cnt.Running)
		}
		var done []schedapi.CompleteTask
		for _, id := range placed {
			done = append(done, schedapi.CompleteTask{Task: id, Bytes: 1, LocalHitBytes: 1})
		}
		cr, err := c.CompleteBatch(ctx, schedapi.CompleteBatchRequest{Job: "j", Tasks: done})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range cr.Results {
			if r.Status != 200 || r.Locality != "DATA_LOCAL" {
				t.Errorf("complete %+v", r)
			}
		}
		var again []schedapi.BatchTask
		for _, tk := range tasks {
			for _, id := range deferred {
				if tk.Task == id {
					again = append(again, tk)
				}
			}
		}
		resp, err = c.PlaceBatch(ctx, schedapi.PlaceBatchRequest{Job: "j", Tasks: again})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range resp.Placements {
			if !p.Placed() {
				t.Errorf("resubmitted %s not placed: %s", p.Task, p.Error)
			}
		}
	})
	t.Run("free slots off the owner: wait for the ladder", func(t *testing.T) {
		// Owner-only lists (replication 1): n2 is off the owner.
		views := schedulertest.NewViews(t, schedulertest.OwnerOnly(schedulertest.Node("n1", "r1", 1), schedulertest.Node("n2", "r1", 1))...)
		_, c := startWith(t, views, nil)
		uris := ownedBy(t, views.View(), "n1", 2)
		start := time.Now()
		resp, err := c.PlaceBatch(ctx, schedapi.PlaceBatchRequest{Job: "j", WaitMS: 200, Tasks: []schedapi.BatchTask{
			{Task: "a", Split: split(uris[0])}, {Task: "b", Split: split(uris[1])},
		}})
		if err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		locs := map[string]int{}
		for _, p := range resp.Placements {
			if !p.Placed() {
				t.Fatalf("%s deferred: %s", p.Task, p.Error)
			}
			locs[p.Locality]++
		}
		if locs["DATA_LOCAL"] != 1 || locs["RACK_LOCAL"] != 1 {
			t.Errorf("localities %v, want one DATA_LOCAL and one RACK_LOCAL", locs)
		}
		if d < 200*time.Millisecond || d > 2*time.Second {
			t.Errorf("batch returned after %v, want after the 200ms wait", d)
		}
	})
}

// TestNodeLeaves: the running tasks of a node that leaves the membership
// are reported lost (counters, /v1/lost), their completion is refused, and
// new tasks never go to it; a draining node takes no new task but its
// running tasks complete.
func TestNodeLeaves(t *testing.T) {
	n1, n2, n3 := schedulertest.Node("n1", "r1", 4), schedulertest.Node("n2", "r1", 4), schedulertest.Node("n3", "r2", 4)
	views := schedulertest.NewViews(t, n1, n2, n3)
	_, c := startWith(t, views, func(cfg *scheduler.Config) { cfg.MaxQueueWait = 200 * time.Millisecond })
	ctx := context.Background()
	var tasks []schedapi.BatchTask
	for i := 0; i < 12; i++ {
		tasks = append(tasks, schedapi.BatchTask{Task: fmt.Sprint("t", i), Split: split(fmt.Sprint("s3://bkt/x", i))})
	}
	resp, err := c.PlaceBatch(ctx, schedapi.PlaceBatchRequest{Job: "j", WaitMS: -1, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	onN2 := map[string]bool{}
	for _, p := range resp.Placements {
		if !p.Placed() {
			t.Fatalf("%s deferred", p.Task)
		}
		if p.Node == "n2" {
			onN2[p.Task] = true
		}
	}
	if len(onN2) == 0 {
		t.Fatal("nothing on n2")
	}
	if err := views.Set(n1, n3); err != nil {
		t.Fatal(err)
	}
	// The View is applied asynchronously: wait for the counters.
	deadline := time.Now().Add(5 * time.Second)
	for {
		cnt, err := c.Counters(ctx, "j")
		if err != nil {
			t.Fatal(err)
		}
		if cnt.Lost == int64(len(onN2)) {
			if cnt.Running != int64(12-len(onN2)) {
				t.Errorf("running %d, want %d", cnt.Running, 12-len(onN2))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lost %d, want %d", cnt.Lost, len(onN2))
		}
		time.Sleep(10 * time.Millisecond)
	}
	lost, err := c.Lost(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) != len(onN2) {
		t.Errorf("/v1/lost lists %d tasks, want %d", len(lost), len(onN2))
	}
	for _, l := range lost {
		if !onN2[l.Task] || l.Node != "n2" {
			t.Errorf("lost %+v was not on n2", l)
		}
	}
	for task := range onN2 {
		if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "j", Task: task, Bytes: 1}); statusOf(err) != 400 || codeOf(err) != schedapi.CodeNotFound {
			t.Errorf("complete of lost %s: %v, want 400 not_found", task, err)
		}
	}
	// New tasks avoid n2; n1 drains: they avoid it too.
	if err := views.Set(schedulertest.Draining(n1), n3); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	for i := 0; i < 20; i++ {
		p, err := c.Place(ctx, schedapi.PlaceRequest{Job: "k", Task: fmt.Sprint(i), Split: split(fmt.Sprint("s3://bkt/y", i)), WaitMS: -1})
		if statusOf(err) == 503 {
			break // n3 is full
		}
		if err != nil {
			t.Fatal(err)
		}
		if p.Node != "n3" {
			t.Errorf("task placed on %s, want n3 (n2 left, n1 draining)", p.Node)
		}
	}
	for _, p := range resp.Placements {
		if p.Node == "n1" {
			if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "j", Task: p.Task, Bytes: 1}); err != nil {
				t.Errorf("complete on draining n1: %v", err)
			}
		}
	}
	ring, err := c.Ring(ctx)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, m := range ring.Members {
		states[m.Node] = m.State
	}
	if states["n1"] != "draining" || states["n3"] != "alive" || states["n2"] != "" {
		t.Errorf("ring states %v", states)
	}
}

// TestConcurrentClients hammers the API from several goroutines (run with
// -race): placements never exceed slots and the counters add up.
func TestConcurrentClients(t *testing.T) {
	views := schedulertest.NewViews(t, schedulertest.Node("n1", "r1", 3), schedulertest.Node("n2", "r1", 3), schedulertest.Node("n3", "r2", 3))
	s, c := startWith(t, views, func(cfg *scheduler.Config) { cfg.LocalityWait = 5 * time.Millisecond })
	ctx := context.Background()
	const workers, per = 8, 25
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				p, err := c.Place(ctx, schedapi.PlaceRequest{Job: fmt.Sprint("job", w%3), Task: id, Split: split(fmt.Sprint("s3://bkt/", i%17))})
				if err != nil {
					t.Error(err)
					return
				}
				for _, m := range s.Ring().Members {
					if m.SlotsInUse > m.Slots {
						t.Errorf("%s: %d slots in use of %d", m.Node, m.SlotsInUse, m.Slots)
					}
				}
				if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: fmt.Sprint("job", w%3), Task: p.Task, LocalHitBytes: 1}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	g, err := c.Counters(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if g.Completed != workers*per || g.Running != 0 || g.Queued != 0 {
		t.Errorf("completed %d running %d queued %d, want %d 0 0", g.Completed, g.Running, g.Queued, workers*per)
	}
	if g.DataLocalTasks+g.RackLocalTasks+g.OtherLocalTasks != workers*per {
		t.Errorf("placed %d, want %d", g.DataLocalTasks+g.RackLocalTasks+g.OtherLocalTasks, workers*per)
	}
}

// TestCancelledRequestHoldsNoSlot: a Place or PlaceBatch whose caller has
// already gone (its context ended, as when an HTTP client disconnects
// while the call waits for the scheduler's lock) is not answered with a
// placement nobody will see: it returns the context's error and holds no
// slot (the task, if it was placed, is counted lost, "request cancelled").
func TestCancelledRequestHoldsNoSlot(t *testing.T) {
	s, _ := startWith(t, threeNodes(t), nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if p, err := s.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "t1", Split: split("s3://bkt/1"), WaitMS: -1}); !errors.Is(err, context.Canceled) {
		t.Errorf("Place with a cancelled context: %+v, %v; want context.Canceled", p, err)
	}
	if r, err := s.PlaceBatch(ctx, schedapi.PlaceBatchRequest{Job: "j", WaitMS: -1, Tasks: []schedapi.BatchTask{
		{Task: "t2", Split: split("s3://bkt/2")}, {Task: "t3", Split: split("s3://bkt/3")},
	}}); !errors.Is(err, context.Canceled) {
		t.Errorf("PlaceBatch with a cancelled context: %+v, %v; want context.Canceled", r, err)
	}
	c, err := s.JobCounters(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Running != 0 || c.Queued != 0 {
		t.Errorf("running %d queued %d after cancelled calls, want 0 and 0", c.Running, c.Queued)
	}
	for _, m := range s.Ring().Members {
		if m.SlotsInUse != 0 {
			t.Errorf("node %s has %d slots in use, want 0", m.Node, m.SlotsInUse)
		}
	}
	// The task ids are free again.
	if _, err := s.Place(context.Background(), schedapi.PlaceRequest{Job: "j", Task: "t1", Split: split("s3://bkt/1"), WaitMS: -1}); err != nil {
		t.Errorf("Place of t1 again: %v", err)
	}

	// A caller that leaves while the call runs (after the first look at its
	// context): the placement made is released and counted lost.
	if p, err := s.Place(&leavingCtx{Context: context.Background()}, schedapi.PlaceRequest{Job: "k", Task: "t", Split: split("s3://bkt/1"), WaitMS: -1}); !errors.Is(err, context.Canceled) {
		t.Errorf("Place whose caller left: %+v, %v; want context.Canceled", p, err)
	}
	if r, err := s.PlaceBatch(&leavingCtx{Context: context.Background()}, schedapi.PlaceBatchRequest{Job: "k", WaitMS: -1, Tasks: []schedapi.BatchTask{
		{Task: "b1", Split: split("s3://bkt/2")}, {Task: "b2", Split: split("s3://bkt/3")},
	}}); !errors.Is(err, context.Canceled) {
		t.Errorf("PlaceBatch whose caller left: %+v, %v; want context.Canceled", r, err)
	}
	if c, err := s.JobCounters(context.Background(), "k"); err != nil || c.Running != 0 || c.Lost != 3 {
		t.Errorf("job k: running %d lost %d (%v), want 0 running and 3 lost", c.Running, c.Lost, err)
	}
	if lost := s.Lost("k"); len(lost) != 3 || lost[0].Reason != "request cancelled" {
		t.Errorf("lost log of k: %+v, want 3 tasks, request cancelled", lost)
	}
}

// leavingCtx is a context whose caller leaves after its first Err check.
type leavingCtx struct {
	context.Context
	checked bool
}

func (c *leavingCtx) Err() error {
	if !c.checked {
		c.checked = true
		return nil
	}
	return context.Canceled
}
