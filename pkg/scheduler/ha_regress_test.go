package scheduler_test

// Regression tests from an adversarial review of the scheduler's etcd
// side (leader election, fencing, shutdown) and of its membership: each
// failed before its fix.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/membership/membershiptest"
	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// deleteLeaderKey starts an HA pair and deletes the leader's election key
// without revoking its lease (what `etcdctl del` of the key, or of the
// election prefix, does), so the follower's campaign wins while the old
// leader's session stays healthy. It returns the pair, the old leader
// first, once the follower leads.
func deleteLeaderKey(t *testing.T) [2]*scheduler.Scheduler {
	t.Helper()
	e := schedulertest.StartEtcd(t)
	ss := haPair(t, e, threeNodes(t), nil) // SessionTTL 2s
	waitLeader(t, ss[:], 10*time.Second)
	cli := e.Client(t)
	ctx := context.Background()
	resp, err := cli.Get(ctx, "/"+t.Name()+"/election/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("leader key: %v %v", resp, err)
	}
	if _, err := cli.Delete(ctx, string(resp.Kvs[0].Key)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !ss[1].IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("the follower did not take over after the leader's key was deleted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return ss
}

// TestDeposedLeaderStepsDown: once another scheduler holds the
// leadership (the old leader's election key was deleted, its session
// healthy), the old leader stops claiming it without any call reaching it.
// Was: ha.lead stepped down only when its session ended or a fenced write
// failed, so an idle deposed leader kept IsLeader() true and /readyz 200
// indefinitely: two leaders. Fixed: watchOwnKey.
func TestDeposedLeaderStepsDown(t *testing.T) {
	ss := deleteLeaderKey(t)
	// Three session TTLs, no traffic.
	deadline := time.Now().Add(6 * time.Second)
	for ss[0].IsLeader() {
		if time.Now().After(deadline) {
			ready, why := ss[0].Ready()
			l, _ := ss[0].Leader()
			t.Fatalf("6 s after sched-1 took over, sched-0 still claims the leadership: IsLeader=true, Ready=%v %q, Leader()=%+v; sched-1 IsLeader=%v",
				ready, why, l, ss[1].IsLeader())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDeposedLeaderNamesNewLeader: a call that reaches a deposed leader
// gets 503 not_leader naming the new leader. Was: the error was built
// while IsLeader was still true, so it named the scheduler itself, which
// notLeader then blanked ("no leader is elected right now", no leader
// field, no X-Locus-Leader header). Fixed: notLeader uses the leader etcd
// names.
func TestDeposedLeaderNamesNewLeader(t *testing.T) {
	ss := deleteLeaderKey(t)
	time.Sleep(500 * time.Millisecond) // let sched-0's watchLeader read the new leader
	c := schedulertest.NewClient(ss[0].HTTPAddr())
	_, err := c.Place(context.Background(), schedapi.PlaceRequest{Job: "j", Task: "x", Split: split("s3://bkt/u")})
	var se *schedulertest.StatusError
	if !asStatus(err, &se) || se.Code != 503 {
		t.Fatalf("place on the deposed leader: %v, want 503", err)
	}
	if se.Body.Leader != ss[1].HTTPAddr() {
		t.Errorf("503 from the deposed leader names leader %q (%q), want sched-1 at %s", se.Body.Leader, se.Body.Error, ss[1].HTTPAddr())
	}
}

// TestShutdownHonoursContextWithEtcdDown: with etcd down, a follower's
// Shutdown returns about when its context ends. Was: 3.0 s for a 0.5 s
// context: after closing the client it waited without a bound for the
// session's lease revoke, which etcd's retry interceptor repeats 100 times
// 25 ms apart. Fixed: the session's context ends with shutdown's.
func TestShutdownHonoursContextWithEtcdDown(t *testing.T) {
	e := schedulertest.StartEtcd(t)
	ss := haPair(t, e, threeNodes(t), func(i int, cfg *scheduler.Config) {
		cfg.Etcd.SessionTTL = 8 * time.Second
		cfg.Etcd.OpTimeout = time.Second
	})
	waitLeader(t, ss[:], 10*time.Second)
	e.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := ss[1].Shutdown(ctx) // the follower
	took := time.Since(start)
	t.Logf("follower Shutdown with a 0.5 s context: %v after %v", err, took)
	if took > 1500*time.Millisecond {
		t.Errorf("Shutdown with a 0.5 s context took %v", took)
	}
}

// TestSchedulerRefusesMisfitNode: a 64 MiB cache node that joins a
// 128 MiB cluster through the scheduler's gossip address stays out of the
// scheduler's /v1/ring, and the cluster block size stays 128 MiB. Was:
// the scheduler's observer member declares no block size and checked
// peers against its own metadata only, so it listed the misfit as an
// alive cache node with a third of the ring, and (its id sorting first)
// took its 64 MiB for every placement key. Fixed: membership checks an
// observer's peers against the cluster's values (delegate.reference).
func TestSchedulerRefusesMisfitNode(t *testing.T) {
	ms := membershiptest.Start(t, membershiptest.CacheNode("n1"), membershiptest.CacheNode("n2"))
	s := schedulertest.Start(t, scheduler.Config{Join: []string{ms[0].GossipAddr()}})
	c := schedulertest.NewClient(s.HTTPAddr())
	waitRing(t, c, 2, 5*time.Second)

	meta := membershiptest.CacheNode("0misfit")
	meta.BlockSize = 64 << 20
	misfit := membershiptest.NewAlone(t, meta)
	_, joinErr := misfit.Join([]string{s.GossipAddr()})
	t.Logf("misfit Join through the scheduler: %v", joinErr)
	time.Sleep(1500 * time.Millisecond)

	r, err := c.Ring(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range r.Members {
		if m.Node == "0misfit" {
			t.Errorf("/v1/ring lists the refused 64 MiB node: %+v", m)
		}
	}
	if r.BlockSize != membership.DefaultBlockSize {
		t.Errorf("/v1/ring block size %d, want the cluster's %d", r.BlockSize, membership.DefaultBlockSize)
	}
}

// TestFollowerWithoutRingNamesLeader: a follower whose gossip shows no
// cache node yet answers a placement with 503 not_leader naming the
// leader, as any follower does, so clients go to the leader. Was: it
// answered 503 no_node ("no cache node in the cluster"), which reads as a
// cluster without nodes and does not say where to go. Fixed: the
// leadership is checked before the View's errors.
func TestFollowerWithoutRingNamesLeader(t *testing.T) {
	e := schedulertest.StartEtcd(t)
	ss := haPair(t, e, schedulertest.NewViews(t), nil)
	leader := waitLeader(t, ss[:], 10*time.Second)
	follower := ss[1-leader]
	ctx := context.Background()
	req := schedapi.PlaceRequest{Job: "j", Task: "x", Split: split("s3://bkt/u")}
	for _, tc := range []struct {
		name   string
		s      *scheduler.Scheduler
		code   string
		leader string
	}{
		{"follower", follower, schedapi.CodeNotLeader, ss[leader].HTTPAddr()},
		{"leader", ss[leader], schedapi.CodeNoNode, ""},
	} {
		c := schedulertest.NewClient(tc.s.HTTPAddr())
		_, err := c.Place(ctx, req)
		var se *schedulertest.StatusError
		if !asStatus(err, &se) || se.Code != 503 || se.Body.Code != tc.code || se.Body.Leader != tc.leader {
			t.Errorf("place on the %s with no cache node: %v (%+v), want 503 %s naming leader %q", tc.name, err, se, tc.code, tc.leader)
		}
		_, err = c.PlaceBatch(ctx, schedapi.PlaceBatchRequest{Job: "j", Tasks: []schedapi.BatchTask{{Task: "y", Split: split("s3://bkt/u")}}})
		if !asStatus(err, &se) || se.Code != 503 || se.Body.Code != tc.code || se.Body.Leader != tc.leader {
			t.Errorf("batch on the %s with no cache node: %v (%+v), want 503 %s naming leader %q", tc.name, err, se, tc.code, tc.leader)
		}
	}
}

// TestForwardedBodyTooLarge: a body over --max-body-bytes sent without a
// Content-Length (chunked) to a follower that forwards to the leader is a
// 413 too_large, as it is on the leader. Was: the follower's proxy failed
// reading it and answered 503 unavailable with Retry-After, so a client
// retried a request that can never succeed.
func TestForwardedBodyTooLarge(t *testing.T) {
	e := schedulertest.StartEtcd(t)
	ss := haPair(t, e, threeNodes(t), func(i int, cfg *scheduler.Config) {
		cfg.Etcd.Forward = true
		cfg.MaxBodyBytes = 1 << 10
	})
	leader := waitLeader(t, ss[:], 10*time.Second)
	body := `{"job":"j","task":"t","split":{"uri":"s3://bkt/` + strings.Repeat("x", 4000) + `","offset":0,"length":1}}`
	for i, s := range ss {
		// io.MultiReader hides the length: the client sends it chunked.
		req, err := http.NewRequest("POST", "http://"+s.HTTPAddr()+"/v1/place", io.MultiReader(strings.NewReader(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var er schedapi.ErrorResponse
		_ = json.Unmarshal(raw, &er)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || er.Code != schedapi.CodeTooLarge {
			t.Errorf("scheduler %d (leader %v): HTTP %d %s, want 413 too_large", i, i == leader, resp.StatusCode, raw)
		}
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			t.Errorf("scheduler %d: Retry-After %q on a request that cannot succeed", i, ra)
		}
	}
}

// TestForwardingFollowerServesLeaderState: a follower that forwards to the
// leader answers GET /v1/ring with the leader's slot use and queue, and
// GET /v1/lost with the leader's lost tasks. Was: it answered from its own
// state, which has no placer, so every node showed slots_in_use 0 and
// waiting 0 and no task was ever lost, while the follower is /readyz 200
// and a load balancer sends it half the reads (locusctl ring status, the
// status page).
func TestForwardingFollowerServesLeaderState(t *testing.T) {
	e := schedulertest.StartEtcd(t)
	views := threeNodes(t)
	ss := haPair(t, e, views, func(i int, cfg *scheduler.Config) { cfg.Etcd.Forward = true })
	leader := waitLeader(t, ss[:], 10*time.Second)
	ctx := context.Background()
	lc := schedulertest.NewClient(ss[leader].HTTPAddr())
	ps := placeAllNow(t, lc, "j", 4)
	onN3 := 0
	for _, p := range ps {
		if p.Node == "n3" {
			onN3++
		}
	}
	// n3 leaves: its tasks are lost.
	if err := views.Set(schedulertest.Node("n1", "r1", 2), schedulertest.Node("n2", "r1", 2)); err != nil {
		t.Fatal(err)
	}
	wantLost, wantUsed := onN3, len(ps)-onN3
	deadline := time.Now().Add(5 * time.Second)
	for len(ss[leader].Lost("j")) != wantLost {
		if time.Now().After(deadline) {
			t.Fatalf("leader lists %d lost tasks, want %d", len(ss[leader].Lost("j")), wantLost)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i, s := range ss {
		c := schedulertest.NewClient(s.HTTPAddr())
		r, err := c.Ring(ctx)
		if err != nil {
			t.Fatalf("scheduler %d (leader %v): GET /v1/ring: %v", i, i == leader, err)
		}
		used := 0
		for _, m := range r.Members {
			used += m.SlotsInUse
		}
		if used != wantUsed {
			t.Errorf("scheduler %d (leader %v): GET /v1/ring: %d slots in use, want the leader's %d", i, i == leader, used, wantUsed)
		}
		lost, err := c.Lost(ctx, "j")
		if err != nil || len(lost) != wantLost {
			t.Errorf("scheduler %d (leader %v): GET /v1/lost: %d tasks (%v), want the leader's %d", i, i == leader, len(lost), err, wantLost)
		}
	}
}

// TestForwardingFollowerNotReadyOnBlockSizeMismatch: when the cluster
// config in etcd names another block size than the cache nodes', the
// leader is not ready (every placement is a 503) and neither is a
// follower that forwards to it. Was: the forwarding follower stayed
// /readyz 200 "forwarding to the leader", so a load balancer kept sending
// it calls that all failed.
func TestForwardingFollowerNotReadyOnBlockSizeMismatch(t *testing.T) {
	e := schedulertest.StartEtcd(t)
	ss := haPair(t, e, threeNodes(t), func(i int, cfg *scheduler.Config) { cfg.Etcd.Forward = true })
	leader := waitLeader(t, ss[:], 10*time.Second)
	if _, err := e.Client(t).Put(context.Background(), "/"+t.Name()+"/config", `{"block_size":67108864}`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, s := range ss {
		for s.Settings().BlockSize != 64<<20 {
			if time.Now().After(deadline) {
				t.Fatalf("settings %+v, want etcd's block size 64 MiB", s.Settings())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for i, s := range ss {
		if ok, why := s.Ready(); ok {
			t.Errorf("scheduler %d (leader %v): ready (%s) with etcd's 64 MiB block size against the nodes' 128 MiB; want not ready", i, i == leader, why)
		}
		if code := get(t, "http://"+s.HTTPAddr()+"/readyz"); code != http.StatusServiceUnavailable {
			t.Errorf("scheduler %d (leader %v): /readyz %d, want 503", i, i == leader, code)
		}
	}
}
