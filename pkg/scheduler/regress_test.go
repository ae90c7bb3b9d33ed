package scheduler_test

// Regression and edge-case tests from an adversarial review of the
// placement service (2026-11-30).

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/membership/membershiptest"
	"github.com/locuscache/locus/pkg/ring"
	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// TestForgottenJobKeyDeletedFromEtcd: when the placer forgets an idle job
// under placement.Config.MaxJobs, the next flush deletes its counters key
// in etcd, so followers (which read etcd) stop serving it and the prefix
// does not grow by a key per job ever run. Was: only a job that was dirty
// in the same flush window had its key deleted, and a forgotten job is the
// longest idle, never dirty. Fixed: the placer reports the jobs it forgets
// (Placer.TakeForgotten) and the scheduler marks them dirty.
func TestForgottenJobKeyDeletedFromEtcd(t *testing.T) {
	e := schedulertest.StartEtcd(t)
	views := threeNodes(t)
	ss := haPair(t, e, views, func(i int, cfg *scheduler.Config) {
		cfg.Placement.MaxJobs = 2
	})
	waitLeader(t, ss[:], 10*time.Second)
	lc, fc := schedulertest.NewClient(ss[0].HTTPAddr()), schedulertest.NewClient(ss[1].HTTPAddr())
	ctx := context.Background()
	const jobs = 5
	for i := 1; i <= jobs; i++ {
		job := fmt.Sprint("j", i)
		p, err := lc.Place(ctx, schedapi.PlaceRequest{Job: job, Task: "t", Split: split("s3://bkt/" + job), WaitMS: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lc.Complete(ctx, schedapi.CompleteRequest{Job: job, Task: p.Task, LocalHitBytes: 10}); err != nil {
			t.Fatal(err)
		}
	}
	// The leader keeps the last two jobs only.
	if _, err := lc.Counters(ctx, "j1"); codeOf(err) != schedapi.CodeNotFound {
		t.Fatalf("leader GET /v1/jobs/j1: %v, want not_found (forgotten under MaxJobs=2)", err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	prefix := "/" + t.Name() + "/counters/jobs/"
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range resp.Kvs {
		k, _ := url.PathUnescape(string(kv.Key[len(prefix):]))
		keys = append(keys, k)
	}
	if len(keys) > 2 {
		t.Errorf("etcd holds the counters of %d jobs %v; the leader keeps 2 (MaxJobs): the forgotten jobs' keys were never deleted", len(keys), keys)
	}
	if c, err := fc.Counters(ctx, "j1"); err == nil {
		t.Errorf("follower GET /v1/jobs/j1 answers counters (completed %d) that the leader has forgotten (leader: not_found)", c.Completed)
	}
}

// staleStartViews is a Membership on which a newer View is published right
// after Start reads the current one (a gossip change during Start), and
// whose View returns only once the scheduler's membership loop has picked
// the newer View up: the interleaving that makes Start apply a stale View.
type staleStartViews struct {
	*schedulertest.Views
	next   []membership.Member
	once   sync.Once
	mu     sync.Mutex
	newer  *membership.View
	seen   chan struct{}
	seenOK sync.Once
}

func (r *staleStartViews) View() *membership.View {
	v := r.Views.View()
	r.once.Do(func() {
		if err := r.Views.Set(r.next...); err != nil {
			panic(err)
		}
		r.mu.Lock()
		r.newer = r.Views.View()
		r.mu.Unlock()
		select {
		case <-r.seen: // the membership loop returned the newer View
		case <-time.After(5 * time.Second):
		}
		time.Sleep(100 * time.Millisecond) // and applied it
	})
	return v
}

func (r *staleStartViews) WaitFor(ctx context.Context, cond func(*membership.View) bool) (*membership.View, error) {
	v, err := r.Views.WaitFor(ctx, cond)
	r.mu.Lock()
	newer := r.newer
	r.mu.Unlock()
	if err == nil && newer != nil && v == newer {
		r.seenOK.Do(func() { close(r.seen) })
	}
	return v, err
}

// TestStartDoesNotApplyStaleView: a membership change that lands while a
// standalone scheduler starts is not overwritten by the View Start read
// before it. Was: Start applied its View after starting the membership
// loop, which could already have applied a newer one (and then waited for
// a View other than it), so a node that had left stayed in the placer and
// took tasks. Fixed: Start applies the first View before the loop starts.
func TestStartDoesNotApplyStaleView(t *testing.T) {
	n1, n2 := schedulertest.Node("n1", "r1", 2), schedulertest.Node("n2", "r1", 2)
	views := &staleStartViews{
		Views: schedulertest.NewViews(t, n1, n2),
		next:  []membership.Member{n1}, // n2 left
		seen:  make(chan struct{}),
	}
	_, c := startWith(t, views, func(cfg *scheduler.Config) { cfg.MaxQueueWait = 300 * time.Millisecond })
	ctx := context.Background()
	if r, err := c.Ring(ctx); err != nil || len(r.Members) != 1 {
		t.Fatalf("ring %+v %v, want n1 only", r, err)
	}
	for i := 0; i < 3; i++ {
		p, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: fmt.Sprint("t", i), Split: split(fmt.Sprint("s3://bkt/", i)), WaitMS: -1})
		if i < 2 {
			if err != nil || p.Node != "n1" {
				t.Fatalf("task %d: %+v %v, want n1", i, p, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("task %d placed on %s (%s), a node that left before the scheduler served; want 503 (n1 is full)", i, p.Node, p.Locality)
		} else if statusOf(err) != 503 {
			t.Errorf("task %d: %v, want 503", i, err)
		}
	}
}

// TestFastRestartLosesTasks: a cache node killed and restarted on the same
// gossip address faster than the failure detector notices has its old
// process's running tasks reported lost and its slots freed, as a slower
// restart does (TestGossipNodeCrash). Was: the restart looked like a
// metadata update, and the tasks stayed running with their slots leaked.
// Fixed: members announce a Boot drawn at process start
// (membership.NodeMeta.Boot); a changed Boot removes the node from the
// placer, its tasks lost, before it is added back.
func TestFastRestartLosesTasks(t *testing.T) {
	metas := []membership.NodeMeta{membershiptest.CacheNode("n1"), membershiptest.CacheNode("n2")}
	ms := membershiptest.Start(t, metas...)
	s := schedulertest.Start(t, scheduler.Config{Join: []string{ms[0].GossipAddr()}, MaxQueueWait: time.Second})
	c := schedulertest.NewClient(s.HTTPAddr())
	waitRing(t, c, 2, 5*time.Second)
	ctx := context.Background()
	placeAllNow(t, c, "j", 8) // 2 nodes x 4 slots
	// kill -9 n2 and restart it at once on the same address, with 2 slots.
	addr := ms[1].GossipAddr()
	if err := ms[1].Shutdown(); err != nil {
		t.Fatal(err)
	}
	meta := membershiptest.CacheNode("n2")
	meta.Slots = 2
	cfg := membershiptest.Config(meta)
	cfg.BindAddr = addr
	var m2 *membership.Membership
	var err error
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m2, err = membership.New(cfg); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restart n2 on %s: %v", addr, err)
		}
	}
	t.Cleanup(func() { _ = m2.Shutdown() })
	if _, err := m2.Join([]string{ms[0].GossipAddr()}); err != nil {
		t.Fatalf("restarted n2 joins: %v", err)
	}
	// Wait until the scheduler sees the restarted n2 (2 slots), then give
	// the failure detector time (LoopbackTuning declares a dead node in
	// 1-3 s) to have said anything it would say.
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, err := c.Ring(ctx)
		if err != nil {
			t.Fatal(err)
		}
		seen := false
		for _, m := range r.Members {
			if m.Node == "n2" && m.Slots == 2 {
				seen = true
			}
		}
		if seen {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scheduler does not see the restarted n2: %+v", r.Members)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	cnt, err := c.Counters(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := c.Ring(ctx)
	var n2 schedapi.RingMember
	for _, m := range r.Members {
		if m.Node == "n2" {
			n2 = m
		}
	}
	if cnt.Lost != 4 || cnt.Running != 4 || n2.SlotsInUse != 0 {
		t.Errorf("after n2's restart: job lost %d running %d, n2 slots %d in use %d; want lost 4 (the old process's tasks), running 4 (n1's), n2 0 in use",
			cnt.Lost, cnt.Running, n2.Slots, n2.SlotsInUse)
	}
}

// TestAPIEdgeCases: edge cases that hold (passing).
func TestAPIEdgeCases(t *testing.T) {
	views := threeNodes(t) // n1 r1 2, n2 r1 2, n3 r2 2
	_, c := startWith(t, views, func(cfg *scheduler.Config) { cfg.MaxQueueWait = 200 * time.Millisecond })
	ctx := context.Background()
	v := views.View()
	const bs = membership.DefaultBlockSize

	t.Run("straddling split is placed by the block holding most bytes", func(t *testing.T) {
		// [bs-10, 2bs+5): 10 bytes of block 0, all of block 1, 5 of block 2.
		sp := schedapi.Split{URI: "s3://bkt/straddle", Offset: bs - 10, Length: bs + 15}
		p, err := c.Place(ctx, schedapi.PlaceRequest{Job: "edge", Task: "straddle", Split: sp, WaitMS: -1})
		if err != nil {
			t.Fatal(err)
		}
		if want := v.Ring.Owner(ring.BlockKey(sp.URI, 1)).ID; p.Owner != want {
			t.Errorf("owner %s, want %s (block 1's)", p.Owner, want)
		}
		// Split mostly in block 2 (last).
		sp2 := schedapi.Split{URI: "s3://bkt/straddle", Offset: 2*bs - 3, Length: 10}
		p2, err := c.Place(ctx, schedapi.PlaceRequest{Job: "edge", Task: "straddle2", Split: sp2, WaitMS: -1})
		if err != nil {
			t.Fatal(err)
		}
		if want := v.Ring.Owner(ring.BlockKey(sp2.URI, 2)).ID; p2.Owner != want {
			t.Errorf("owner %s, want %s (block 2's)", p2.Owner, want)
		}
		// DATA_LOCAL exactly when the node is in the block's preference list.
		for _, pp := range []schedapi.Placement{p, p2} {
			blk := int64(1)
			if pp.Task == "straddle2" {
				blk = 2
			}
			owners := v.Ring.Owners(ring.BlockKey("s3://bkt/straddle", blk), 2)
			in := false
			for _, o := range owners {
				in = in || o.ID == pp.Node
			}
			if in != (pp.Locality == "DATA_LOCAL") {
				t.Errorf("%s on %s (%s), preference list %v", pp.Task, pp.Node, pp.Locality, owners)
			}
		}
		for _, task := range []string{"straddle", "straddle2"} {
			if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "edge", Task: task}); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("largest offset that does not overflow", func(t *testing.T) {
		sp := schedapi.Split{URI: "s3://bkt/huge", Offset: math.MaxInt64 - 1, Length: 1}
		p, err := c.Place(ctx, schedapi.PlaceRequest{Job: "edge", Task: "huge", Split: sp, WaitMS: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "edge", Task: p.Task}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("double completion and completion of a lost task", func(t *testing.T) {
		p, err := c.Place(ctx, schedapi.PlaceRequest{Job: "dbl", Task: "t", Split: split("s3://bkt/d"), WaitMS: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "dbl", Task: p.Task, LocalHitBytes: 7}); err != nil {
			t.Fatal(err)
		}
		before, _ := c.Counters(ctx, "dbl")
		_, err = c.Complete(ctx, schedapi.CompleteRequest{Job: "dbl", Task: p.Task, LocalHitBytes: 7})
		if statusOf(err) != 400 || codeOf(err) != schedapi.CodeNotFound {
			t.Errorf("second complete: %v, want 400 not_found", err)
		}
		after, _ := c.Counters(ctx, "dbl")
		if after.Completed != before.Completed || after.Bytes != before.Bytes || after.Completed != 1 || after.Bytes != 7 {
			t.Errorf("counters moved on a double completion: %+v -> %+v", before, after)
		}
	})

	t.Run("zero-byte tasks give ratio 0, not NaN", func(t *testing.T) {
		p, err := c.Place(ctx, schedapi.PlaceRequest{Job: "zero", Task: "t", Split: split("s3://bkt/z"), WaitMS: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "zero", Task: p.Task}); err != nil {
			t.Fatal(err)
		}
		raw, err := c.DoRaw(ctx, "GET", "/v1/jobs/zero", nil)
		if err != nil {
			t.Fatal(err)
		}
		var jc schedapi.JobCounters
		if err := json.Unmarshal(raw, &jc); err != nil {
			t.Fatalf("%v: %s", err, raw)
		}
		if jc.HitRatio != 0 || jc.HitRatioByLocality.DataLocal != 0 || jc.Completed != 1 {
			t.Errorf("zero-byte job: %s", raw)
		}
	})

	t.Run("odd job and task names round-trip", func(t *testing.T) {
		names := []string{"作业/α β", "a%2Fb", "x/../y", "q?x=1#frag", "\u2028\u2029 \x00\x1f\"<&>", "a//b/"}
		for i, job := range names {
			task := job + "-task"
			p, err := c.Place(ctx, schedapi.PlaceRequest{Job: job, Task: task, Split: split(fmt.Sprint("s3://bkt/n", i)), WaitMS: -1})
			if err != nil {
				t.Fatalf("place job %q: %v", job, err)
			}
			if p.Task != task {
				t.Errorf("answer task %q, want %q", p.Task, task)
			}
			if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: job, Task: task, MissBytes: 3}); err != nil {
				t.Fatalf("complete job %q: %v", job, err)
			}
			jc, err := c.Counters(ctx, job) // path-escaped
			if err != nil || jc.Job != job || jc.Completed != 1 || jc.MissBytes != 3 {
				t.Errorf("GET /v1/jobs/{%q}: %+v %v", job, jc, err)
			}
		}
	})

	t.Run("negative wait_ms places anywhere at once", func(t *testing.T) {
		// Fill the owner's preference list, then a task for the same block
		// with wait_ms -1000 goes elsewhere at once.
		uri := ownedBy(t, v, "n3", 1)[0]
		var ps []schedapi.Placement
		for i := 0; i < 2; i++ {
			p, err := c.Place(ctx, schedapi.PlaceRequest{Job: "neg", Task: fmt.Sprint("fill", i), Split: split(uri), WaitMS: -1})
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
		start := time.Now()
		p, err := c.Place(ctx, schedapi.PlaceRequest{Job: "neg", Task: "x", Split: split(uri), WaitMS: -1000})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("wait_ms -1000 waited %v", d)
		}
		ps = append(ps, p)
		for _, p := range ps {
			if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "neg", Task: p.Task}); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("batch of 100k tasks with 6 slots", func(t *testing.T) {
		const n = 100000
		tasks := make([]schedapi.BatchTask, n)
		for i := range tasks {
			tasks[i] = schedapi.BatchTask{Task: fmt.Sprint("b", i), Split: split(fmt.Sprint("s3://bkt/big/", i%1000))}
		}
		start := time.Now()
		resp, err := c.PlaceBatch(ctx, schedapi.PlaceBatchRequest{Job: "big", WaitMS: -1, Tasks: tasks})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("100k-task batch answered in %v", time.Since(start))
		placed := 0
		var done []schedapi.CompleteTask
		for i, p := range resp.Placements {
			if p.Task != tasks[i].Task {
				t.Fatalf("placement %d is %q, want %q", i, p.Task, tasks[i].Task)
			}
			if p.Placed() {
				placed++
				done = append(done, schedapi.CompleteTask{Task: p.Task, LocalHitBytes: 1})
			} else if p.Error == "" {
				t.Fatalf("task %s neither placed nor deferred", p.Task)
			}
		}
		if placed != 6 {
			t.Errorf("%d placed, want 6 (every slot)", placed)
		}
		cnt, err := c.Counters(ctx, "big")
		if err != nil {
			t.Fatal(err)
		}
		if cnt.Queued != 0 || cnt.Running != 6 || cnt.DataLocalTasks+cnt.RackLocalTasks+cnt.OtherLocalTasks != 6 {
			t.Errorf("counters after the batch: %+v", cnt)
		}
		if _, err := c.CompleteBatch(ctx, schedapi.CompleteBatchRequest{Job: "big", Tasks: done}); err != nil {
			t.Fatal(err)
		}
	})

	// Every slot is free again and the global counters add up.
	g, err := c.Counters(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if g.Running != 0 || g.Queued != 0 || g.Lost != 0 || g.DataLocalTasks+g.RackLocalTasks+g.OtherLocalTasks != g.Completed {
		t.Errorf("global counters do not add up: %+v", g)
	}
	r, _ := c.Ring(ctx)
	for _, m := range r.Members {
		if m.SlotsInUse != 0 {
			t.Errorf("%s has %d slots in use at the end", m.Node, m.SlotsInUse)
		}
	}
}
