package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// TestFailover runs two scheduler processes on one etcd (Debian's
// etcd-server when installed, else an embedded one) next to three member
// processes. The leader places and completes tasks; it is killed with
// SIGKILL; the other scheduler serves within 10 s with the same counters
// (the tasks that were running are counted lost). The default
// --etcd-session-ttl (5s) is used.
func TestFailover(t *testing.T) {
	e := schedulertest.StartEtcd(t)
	t.Logf("etcd: %s", e.Kind)
	cl := fakeCluster(t)
	bin := schedulertest.BuildScheduler(t)
	args := []string{"--etcd-endpoints=" + strings.Join(e.Endpoints, ","), "--etcd-prefix=/failover/"}
	s1 := schedulertest.StartProcess(t, bin, schedulertest.ProcessOptions{ID: "s1", Join: []string{cl.gossip[0]}, Args: args})
	c1 := s1.Client()
	waitRing(t, c1, func(r schedapi.RingStatus) bool { return r.Leader }, "s1 leads")
	s2 := schedulertest.StartProcess(t, bin, schedulertest.ProcessOptions{ID: "s2", Join: []string{cl.gossip[0]}, Args: args})
	c2 := s2.Client()
	waitRing(t, c2, func(r schedapi.RingStatus) bool { return !r.Leader && r.LeaderHTTP == s1.HTTPAddr }, "s2 follows s1")
	waitAlive(t, c1, 3, 10*time.Second)
	waitAlive(t, c2, 3, 10*time.Second)
	ctx := context.Background()

	_, err := c2.Place(ctx, schedapi.PlaceRequest{Job: "etl", Task: "x", Split: sp("s3://lake/x")})
	var se *schedulertest.StatusError
	if !errors.As(err, &se) || se.Code != 503 || se.Body.Leader != s1.HTTPAddr {
		t.Fatalf("follower place: %v, want 503 naming %s", err, s1.HTTPAddr)
	}

	var tasks []schedapi.BatchTask
	for i := 0; i < 12; i++ {
		tasks = append(tasks, schedapi.BatchTask{Task: fmt.Sprint("t", i), Split: sp(fmt.Sprint("s3://lake/f", i))})
	}
	resp, err := c1.PlaceBatch(ctx, schedapi.PlaceBatchRequest{Job: "etl", WaitMS: -1, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	var done []schedapi.CompleteTask
	for i, pl := range resp.Placements[:8] {
		done = append(done, schedapi.CompleteTask{Task: pl.Task, LocalHitBytes: int64(1000 * i), PeerHitBytes: 7, MissBytes: 100})
	}
	if _, err := c1.CompleteBatch(ctx, schedapi.CompleteBatchRequest{Job: "etl", Tasks: done}); err != nil {
		t.Fatal(err)
	}
	before, err := c1.Counters(ctx, "etl")
	if err != nil {
		t.Fatal(err)
	}
	beforeAll, err := c1.Counters(ctx, "")
	if err != nil {
		t.Fatal(err)
	}

	killed := time.Now()
	s1.Kill()
	var served time.Duration
	for i := 0; ; i++ {
		_, err := c2.Place(ctx, schedapi.PlaceRequest{Job: "after", Task: fmt.Sprint("a", i), Split: sp("s3://lake/after")})
		if err == nil {
			served = time.Since(killed)
			break
		}
		if !errors.As(err, &se) || se.Code != 503 {
			t.Fatalf("s2 during failover: %v", err)
		}
		if time.Since(killed) > 15*time.Second {
			t.Fatalf("s2 does not serve 15 s after the leader was killed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("leader killed (SIGKILL); the follower placed a task %v later", served.Round(time.Millisecond))
	if served > 10*time.Second {
		t.Errorf("failover took %v, want within 10 s", served)
	}
	after, err := c2.Counters(ctx, "etl")
	if err != nil {
		t.Fatal(err)
	}
	// The 4 tasks running on the old leader are lost; nothing else changed.
	want := before
	want.Lost += want.Running
	want.Running = 0
	for _, l := range []*schedapi.LocalityStats{&want.ByLocality.DataLocal, &want.ByLocality.RackLocal, &want.ByLocality.OtherLocal} {
		l.Lost += l.Running
		l.Running = 0
	}
	if a, b := js(want), js(after); a != b {
		t.Errorf("counters after failover:\n got %s\nwant %s", b, a)
	}
	if after.Lost != 4 || after.Completed != 8 {
		t.Errorf("lost %d completed %d, want 4 and 8", after.Lost, after.Completed)
	}
	afterAll, err := c2.Counters(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if afterAll.Completed != beforeAll.Completed || afterAll.Bytes != beforeAll.Bytes || afterAll.DataLocalTasks < beforeAll.DataLocalTasks {
		t.Errorf("global counters after failover %+v, before %+v", afterAll, beforeAll)
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func waitRing(t *testing.T, c *schedulertest.Client, cond func(schedapi.RingStatus) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		r, err := c.Ring(context.Background())
		if err == nil && cond(r) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true after 15s: %s (%+v, %v)", what, r, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
