package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// haPair starts two schedulers on one etcd and the same (fake) cluster,
// and returns them leader first.
func haPair(t *testing.T, e *schedulertest.Etcd, views scheduler.Membership, mod func(i int, cfg *scheduler.Config)) [2]*scheduler.Scheduler {
	t.Helper()
	var ss [2]*scheduler.Scheduler
	for i := range ss {
		cfg := scheduler.Config{
			NodeID:     fmt.Sprintf("sched-%d", i),
			Membership: views,
			Etcd:       scheduler.EtcdConfig{Endpoints: e.Endpoints, SessionTTL: 2 * time.Second, Prefix: "/" + t.Name() + "/"},
		}
		if mod != nil {
			mod(i, &cfg)
		}
		ss[i] = schedulertest.Start(t, cfg)
		if i == 0 {
			waitLeader(t, ss[:1], 10*time.Second)
		}
	}
	return ss
}

// waitLeader waits until one of ss leads and the others know it.
func waitLeader(t *testing.T, ss []*scheduler.Scheduler, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		leader := -1
		for i, s := range ss {
			if s.IsLeader() {
				leader = i
			}
		}
		if leader >= 0 {
			known := true
			for _, s := range ss {
				if l, ok := s.Leader(); !ok || l.HTTP != ss[leader].HTTPAddr() {
					known = false
				}
			}
			if known {
				return leader
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader known to all within %v", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHAFailover: the leader places and persists, the follower answers 503
// naming it (and serves counters from etcd); when the leader shuts down
// the follower takes over at once with the same counters.
func TestHAFailover(t *testing.T) {
	e := schedulertest.StartEtcd(t)
	t.Logf("etcd: %s", e.Kind)
	views := threeNodes(t)
	ss := haPair(t, e, views, nil)
	waitLeader(t, ss[:], 10*time.Second)
	leader, follower := ss[0], ss[1]
	if !leader.IsLeader() || follower.IsLeader() {
		t.Fatal("the first scheduler should lead")
	}
	lc, fc := schedulertest.NewClient(leader.HTTPAddr()), schedulertest.NewClient(follower.HTTPAddr())
	ctx := context.Background()

	// The follower refuses to place, naming the leader.
	_, err := fc.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "x", Split: split("s3://bkt/u")})
	var se *schedulertest.StatusError
	if statusOf(err) != 503 || !asStatus(err, &se) || se.Body.Leader != leader.HTTPAddr() || se.Header.Get("X-Locus-Leader") != leader.HTTPAddr() {
		t.Fatalf("follower place: %v (%+v), want 503 naming %s", err, se, leader.HTTPAddr())
	}
	if code := get(t, fc.Base+"/readyz"); code != 503 {
		t.Errorf("follower /readyz %d, want 503", code)
	}
	if code := get(t, lc.Base+"/readyz"); code != 200 {
		t.Errorf("leader /readyz %d, want 200", code)
	}
	if _, err := fc.Ring(ctx); err != nil {
		t.Errorf("follower ring: %v", err)
	}

	// The leader places 6 tasks and completes 4.
	var tasks []schedapi.BatchTask
	for i := 0; i < 6; i++ {
		tasks = append(tasks, schedapi.BatchTask{Task: fmt.Sprint("t", i), Split: split(fmt.Sprint("s3://bkt/", i))})
	}
	resp, err := lc.PlaceBatch(ctx, schedapi.PlaceBatchRequest{Job: "j", WaitMS: -1, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range resp.Placements[:4] {
		if _, err := lc.Complete(ctx, schedapi.CompleteRequest{Job: "j", Task: p.Task, LocalHitBytes: int64(100 * (i + 1)), MissBytes: 10}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := lc.Counters(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	// The follower reads the same counters from etcd, at once: every call
	// was persisted before it was answered.
	fromEtcd, err := fc.Counters(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	if !sameCounters(before, fromEtcd, false) {
		t.Errorf("follower's counters %+v differ from the leader's %+v", fromEtcd, before)
	}
	var jobs struct{ Jobs []string }
	if err := fc.Do(ctx, "GET", "/v1/jobs", nil, &jobs); err != nil || len(jobs.Jobs) != 1 || jobs.Jobs[0] != "j" {
		t.Errorf("follower's job list %v %v, want [j]", jobs.Jobs, err)
	}

	// Failover: the leader shuts down; the follower leads within 10 s.
	stopped := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if err := leader.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	waitLeader(t, ss[1:], 10*time.Second)
	t.Logf("follower leads %v after the leader's shutdown", time.Since(stopped))
	after, err := fc.Counters(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	if !sameCounters(before, after, true) {
		t.Errorf("after failover %+v, before %+v", after, before)
	}
	// The two tasks that were running are lost: completing them is refused.
	if _, err := fc.Complete(ctx, schedapi.CompleteRequest{Job: "j", Task: resp.Placements[5].Task, Bytes: 1}); statusOf(err) != 400 || codeOf(err) != schedapi.CodeNotFound {
		t.Errorf("complete of a task of the old leader: %v, want 400 not_found", err)
	}
	// The new leader counted the old term's running tasks lost when it
	// loaded the counters; it persists that although job j has not
	// changed since, so a follower (reading etcd) agrees with it.
	third := schedulertest.Start(t, scheduler.Config{
		NodeID: "sched-2", Membership: views,
		Etcd: scheduler.EtcdConfig{Endpoints: e.Endpoints, SessionTTL: 2 * time.Second, Prefix: "/" + t.Name() + "/"},
	})
	tc := schedulertest.NewClient(third.HTTPAddr())
	for _, job := range []string{"j", ""} {
		want, err := fc.Counters(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		var got schedapi.JobCounters
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if got, err = tc.Counters(ctx, job); err == nil && sameCounters(want, got, false) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("job %q: the new follower reads %+v (%v) from etcd, the new leader serves %+v", job, got, err, want)
				break
			}
		}
	}
	// The new leader places.
	if _, err := fc.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "new", Split: split("s3://bkt/u")}); err != nil {
		t.Errorf("new leader place: %v", err)
	}
}

func asStatus(err error, se **schedulertest.StatusError) bool {
	e, ok := err.(*schedulertest.StatusError)
	if ok {
		*se = e
	}
	return ok
}

func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// sameCounters compares job counters across a failover: with failover,
// tasks running before are lost after.
func sameCounters(a, b schedapi.JobCounters, failover bool) bool {
	if failover {
		a.Lost += a.Running
		a.Running = 0
		for _, l := range []*schedapi.LocalityStats{&a.ByLocality.DataLocal, &a.ByLocality.RackLocal, &a.ByLocality.OtherLocal} {
			l.Lost += l.Running
			l.Running = 0
		}
	}
	a.Queued, b.Queued = 0, 0
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestHAForwardAndConfig: a follower with Forward proxies mutating calls
// to the leader; the cluster config in etcd (written by the first leader
// from its flags) overrides the flags of every scheduler and changes
// apply live. A replication there that differs from the cache nodes' is
// not used for placement: the nodes' is.
func TestHAForwardAndConfig(t *testing.T) {
	e := schedulertest.StartEtcd(t)
	views := threeNodes(t)
	ss := haPair(t, e, views, func(i int, cfg *scheduler.Config) {
		cfg.Etcd.Forward = true
		if i == 0 {
			cfg.LocalityWait = 1500 * time.Millisecond
			cfg.Replication = 1 // differs from the nodes' 2
		} else {
			cfg.LocalityWait = 7 * time.Second // overridden by etcd
			cfg.Replication = 3
		}
	})
	waitLeader(t, ss[:], 10*time.Second)
	fc := schedulertest.NewClient(ss[1].HTTPAddr())
	ctx := context.Background()
	p, err := fc.Place(ctx, schedapi.PlaceRequest{Job: "f", Task: "t", Split: split("s3://bkt/u")})
	if err != nil {
		t.Fatalf("forwarded place: %v", err)
	}
	if _, err := fc.Complete(ctx, schedapi.CompleteRequest{Job: "f", Task: p.Task, Bytes: 5}); err != nil {
		t.Fatalf("forwarded complete: %v", err)
	}
	if code := get(t, fc.Base+"/readyz"); code != 200 {
		t.Errorf("forwarding follower /readyz %d, want 200", code)
	}
	// The second scheduler started with replication 3 and a 7s wait; etcd
	// says what the first leader wrote.
	if st := ss[1].Settings(); st.Replication != 1 || st.LocalityWait != 1500*time.Millisecond {
		t.Errorf("follower settings %+v, want etcd's replication 1, wait 1.5s", st)
	}
	for i, s := range ss {
		if r, rr := s.Replication(), s.Ring().Replication; r != 2 || rr != 2 {
			t.Errorf("scheduler %d places with replication %d (ring says %d), want the nodes' 2 over etcd's 1", i, r, rr)
		}
	}
	cli := e.Client(t)
	if _, err := cli.Put(ctx, "/"+t.Name()+"/config", `{"replication":3,"locality_wait":"0s"}`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, s := range ss {
		for st := s.Settings(); st.Replication != 3 || st.LocalityWait != scheduler.NoLocalityWait; st = s.Settings() {
			if time.Now().After(deadline) {
				t.Fatalf("settings %+v, want replication 3 and no wait", st)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if r := s.Replication(); r != 2 {
			t.Errorf("placing with replication %d after etcd said 3, want the nodes' 2", r)
		}
	}
	// A block size in etcd overrides the flags (0 here: the nodes'); one
	// that differs from the nodes' stops placement with a reason rather
	// than computing wrong placement keys.
	if _, err := cli.Put(ctx, "/"+t.Name()+"/config", `{"replication":3,"locality_wait":"0s","block_size":67108864}`); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for _, s := range ss {
		for s.Settings().BlockSize != 64<<20 {
			if time.Now().After(deadline) {
				t.Fatalf("settings %+v, want etcd's block size 64 MiB", s.Settings())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if _, err := fc.Place(ctx, schedapi.PlaceRequest{Job: "f", Task: "t2", Split: split("s3://bkt/u")}); err == nil || !strings.Contains(err.Error(), "block size") {
		t.Errorf("place with etcd's 64 MiB block size against the nodes' 128 MiB: err %v, want one naming the block size", err)
	}
	// An invalid config is ignored.
	if _, err := cli.Put(ctx, "/"+t.Name()+"/config", `{"replication":99}`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if st := ss[0].Settings(); st.Replication != 3 {
		t.Errorf("invalid config applied: %+v", st)
	}
}

// TestHAEtcdDown: when etcd fails, the leader cannot persist: calls that
// changed counters answer 503 instead of claiming a durable result, and
// the leader steps down when its session expires.
func TestHAEtcdDown(t *testing.T) {
	e := schedulertest.StartEtcd(t)
	views := threeNodes(t)
	ss := haPair(t, e, views, func(i int, cfg *scheduler.Config) { cfg.Etcd.OpTimeout = time.Second })
	waitLeader(t, ss[:], 10*time.Second)
	c := schedulertest.NewClient(ss[0].HTTPAddr())
	ctx := context.Background()
	p, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "t", Split: split("s3://bkt/u")})
	if err != nil {
		t.Fatal(err)
	}
	e.Stop()
	// A placement that cannot be persisted is a 503 and holds no slot
	// (else a retry of the same task would get 409 and the slot would
	// never be freed).
	inUse := func() int {
		n := 0
		for _, m := range ss[0].Ring().Members {
			n += m.SlotsInUse
		}
		return n
	}
	if _, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "t-down", Split: split("s3://bkt/u2")}); statusOf(err) != 503 {
		t.Fatalf("place with etcd down: %v, want 503", err)
	}
	if n := inUse(); n != 1 {
		t.Errorf("%d slots in use after a placement that was not persisted, want 1 (task t's)", n)
	}
	start := time.Now()
	_, err = c.Complete(ctx, schedapi.CompleteRequest{Job: "j", Task: p.Task, Bytes: 1})
	if statusOf(err) != 503 {
		t.Fatalf("complete with etcd down: %v, want 503", err)
	}
	t.Logf("complete answered %v after %v", err, time.Since(start))
	deadline := time.Now().Add(10 * time.Second)
	for ss[0].IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("still the leader 10 s after etcd went down")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "t2", Split: split("s3://bkt/u")}); statusOf(err) != 503 {
		t.Errorf("place after stepping down: %v, want 503", err)
	}
	// Neither scheduler names a leader it cannot know of: the deposed one
	// would name itself, the follower the deposed one. Each re-reads the
	// leader every session TTL (2 s here) and gives up on etcd after its
	// call timeout (1 s).
	deadline = time.Now().Add(15 * time.Second)
	for i, s := range ss {
		var ready bool
		var reason string
		for {
			if ready, reason = s.Ready(); !ready && strings.Contains(reason, "no leader known (etcd unreachable") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("scheduler %d with etcd down: ready %v, %q; want not ready, no leader known", i, ready, reason)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// TestCompleteBatchUnknownOnFreshLeader: a complete batch whose
// tasks are all unknown, sent to a leader that has changed no counter in
// its term yet, must answer 200 with a per-task not_found (as it does
// standalone and after any other call), not 503 not_leader from the leader
// itself (was: it waited for its term's start to be persisted, which it
// takes for an earlier term's change).
func TestCompleteBatchUnknownOnFreshLeader(t *testing.T) {
	e := schedulertest.StartEtcd(t)
	s := schedulertest.Start(t, scheduler.Config{
		NodeID:     "sched-0",
		Membership: threeNodes(t),
		Etcd:       scheduler.EtcdConfig{Endpoints: e.Endpoints, SessionTTL: 2 * time.Second, Prefix: "/" + t.Name() + "/"},
	})
	waitLeader(t, []*scheduler.Scheduler{s}, 10*time.Second)
	c := schedulertest.NewClient(s.HTTPAddr())
	ctx := context.Background()
	cr, err := c.CompleteBatch(ctx, schedapi.CompleteBatchRequest{Job: "j", Tasks: []schedapi.CompleteTask{{Task: "nope", Bytes: 1}}})
	if err != nil {
		t.Fatalf("complete batch of an unknown task on the leader: %v (status %d, code %q); want 200 with a per-task not_found", err, statusOf(err), codeOf(err))
	}
	if len(cr.Results) != 1 || cr.Results[0].Code != schedapi.CodeNotFound {
		t.Errorf("results %+v, want one not_found", cr.Results)
	}
}
