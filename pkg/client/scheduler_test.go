package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/ring"
	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// threeNodes: n1 and n2 on rack r1, n3 on r2, two slots each.
func threeNodes(t *testing.T) *schedulertest.Views {
	return schedulertest.NewViews(t,
		schedulertest.Node("n1", "r1", 2), schedulertest.Node("n2", "r1", 2), schedulertest.Node("n3", "r2", 2))
}

func startScheduler(t *testing.T, views scheduler.Membership, mod func(*scheduler.Config)) *scheduler.Scheduler {
	t.Helper()
	cfg := scheduler.Config{Membership: views}
	if mod != nil {
		mod(&cfg)
	}
	return schedulertest.Start(t, cfg)
}

func newSched(t *testing.T, cfg client.SchedulerConfig) *client.Scheduler {
	t.Helper()
	s, err := client.NewScheduler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func sp(uri string) client.Split { return client.Split{URI: uri, Offset: 0, Length: 1 << 20} }

// TestSchedulerCalls: every call against a real scheduler, and the errors
// carry the status's sentinel and the server's message.
func TestSchedulerCalls(t *testing.T) {
	views := threeNodes(t)
	s := startScheduler(t, views, func(c *scheduler.Config) { c.AuthToken = "sekrit" })
	sc := newSched(t, client.SchedulerConfig{URL: "http://" + s.HTTPAddr(), Token: "sekrit"})
	ctx := context.Background()

	p, err := sc.Place(ctx, "job1", "t1", sp("s3://bkt/k1"), client.NoWait)
	if err != nil {
		t.Fatal(err)
	}
	owner := views.View().Ring.Owner(mustKey(t, "s3://bkt/k1")).ID
	if !p.Placed() || p.Task != "t1" || p.Locality != "DATA_LOCAL" || p.Node != owner || p.Owner != owner ||
		p.Address != owner+".test:7070" || p.HTTPAddress != owner+".test:7080" || p.RingEpoch != views.View().Epoch {
		t.Errorf("placement %+v; want t1 DATA_LOCAL on its owner %s with its addresses and epoch", p, owner)
	}

	_, err = sc.Place(ctx, "job1", "t1", sp("s3://bkt/k1"), client.NoWait)
	var se *client.SchedulerError
	if !errors.Is(err, client.ErrConflict) || !errors.As(err, &se) || se.Status != http.StatusConflict || !strings.Contains(se.Message, "already") {
		t.Errorf("placing t1 twice: %v; want a 409 wrapping ErrConflict with the server's message", err)
	}
	_, err = sc.Place(ctx, "job1", "t2", client.Split{URI: "s3://bkt/k", Offset: -1, Length: 5}, client.NoWait)
	if !errors.Is(err, client.ErrBadRequest) || !strings.Contains(err.Error(), "negative split offset -1") {
		t.Errorf("negative offset: %v; want ErrBadRequest naming the offset", err)
	}
	if !errors.Is(err, scheduler.ErrBadRequest) {
		t.Errorf("the client's sentinels are the scheduler's: errors.Is(%v, scheduler.ErrBadRequest) is false", err)
	}

	noToken := newSched(t, client.SchedulerConfig{URL: s.HTTPAddr()}) // bare host:port
	if _, err := noToken.Place(ctx, "job1", "t3", sp("s3://bkt/k3"), client.NoWait); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("no token: %v; want ErrUnauthorized", err)
	}
	if _, err := noToken.Ring(ctx); err != nil {
		t.Errorf("reads need no token: %v", err)
	}

	loc, err := sc.Complete(ctx, "job1", "t1", client.CompleteInfo{LocalHit: 700, PeerHit: 200, Miss: 124, Duration: 15 * time.Millisecond})
	if err != nil || loc != "DATA_LOCAL" {
		t.Fatalf("Complete: %q, %v; want DATA_LOCAL", loc, err)
	}
	if _, err := sc.Complete(ctx, "job1", "t1", client.CompleteInfo{}); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("completing twice: %v; want ErrNotFound", err)
	}
	_, err = sc.Complete(ctx, "nope", "t1", client.CompleteInfo{})
	if !errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrBadRequest) || !errors.As(err, &se) ||
		se.Status != http.StatusBadRequest || se.Code != schedapi.CodeNotFound {
		t.Errorf("unknown job: %v; want ErrNotFound (not ErrBadRequest) from a 400 with code not_found", err)
	}
	if _, err := sc.Complete(ctx, "job1", "t1", client.CompleteInfo{Bytes: 1, Miss: 2}); !errors.Is(err, client.ErrBadRequest) {
		t.Errorf("bytes below the sum: %v; want ErrBadRequest", err)
	}

	jc, err := sc.JobCounters(ctx, "job1")
	if err != nil {
		t.Fatal(err)
	}
	if jc.DataLocalTasks != 1 || jc.Completed != 1 || jc.Bytes != 1024 || jc.LocalHitBytes != 700 || jc.PeerHitBytes != 200 || jc.MissBytes != 124 {
		t.Errorf("counters %+v; want 1 data-local task, 1024 bytes (700 local, 200 peer, 124 miss)", jc)
	}
	if want := 900.0 / 1024; jc.HitRatio != want || jc.HitRatioByLocality.DataLocal != want {
		t.Errorf("hit ratio %v (data-local %v), want %v", jc.HitRatio, jc.HitRatioByLocality.DataLocal, want)
	}
	all, err := sc.JobCounters(ctx, "")
	if err != nil || all.Completed != 1 {
		t.Errorf("all jobs: %+v, %v", all, err)
	}
	if _, err := sc.JobCounters(ctx, "no/such job"); !errors.Is(err, client.ErrNotFound) || !errors.As(err, &se) || se.Status != http.StatusBadRequest {
		t.Errorf("unknown job counters: %v; want ErrNotFound from a 400", err)
	}
	jobs, err := sc.Jobs(ctx)
	if err != nil || len(jobs) != 1 || jobs[0] != "job1" {
		t.Errorf("Jobs = %v, %v; want [job1]", jobs, err)
	}
	r, err := sc.Ring(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cache := 0
	for _, m := range r.Members {
		if m.Role == "cache" {
			cache++
		}
	}
	if cache != 3 || r.Epoch != views.View().Epoch || r.Replication != 2 {
		t.Errorf("ring %+v; want 3 cache members, epoch %d, replication 2 (the nodes')", r, views.View().Epoch)
	}
}

func mustKey(t *testing.T, uri string) string {
	t.Helper()
	k, err := ring.PlacementKey(uri, 0, 1<<20, membership.DefaultBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestSchedulerBatch: PlaceBatch defers what does not fit, CompleteBatch
// answers per task, and the deferred tasks place once slots are free.
func TestSchedulerBatch(t *testing.T) {
	s := startScheduler(t, threeNodes(t), nil)
	sc := newSched(t, client.SchedulerConfig{URL: "http://" + s.HTTPAddr() + "/"})
	ctx := context.Background()

	var tasks []client.BatchTask
	for i := range 8 {
		tasks = append(tasks, client.BatchTask{Task: fmt.Sprintf("t%d", i), Split: sp(fmt.Sprintf("s3://bkt/%d", i))})
	}
	ps, err := sc.PlaceBatch(ctx, "stage", tasks, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var placed []client.CompletedTask
	var deferred []client.BatchTask
	for i, p := range ps {
		if p.Task != tasks[i].Task {
			t.Fatalf("placements[%d] is %q, want %q: request order", i, p.Task, tasks[i].Task)
		}
		if p.Placed() {
			placed = append(placed, client.CompletedTask{Task: p.Task, CompleteInfo: client.CompleteInfo{LocalHit: 10}})
		} else {
			if !strings.HasPrefix(p.Error, "deferred") {
				t.Errorf("unplaced %s has error %q, want \"deferred: ...\"", p.Task, p.Error)
			}
			deferred = append(deferred, tasks[i])
		}
	}
	if len(placed) != 6 || len(deferred) != 2 {
		t.Fatalf("%d placed, %d deferred; want 6 and 2 (3 nodes x 2 slots)", len(placed), len(deferred))
	}
	res, err := sc.CompleteBatch(ctx, "stage", append(placed, client.CompletedTask{Task: deferred[0].Task}))
	if err != nil || len(res) != 7 {
		t.Fatalf("CompleteBatch: %v, %v", res, err)
	}
	for i, r := range res[:6] {
		if r.Status != http.StatusOK || r.Locality == "" || r.Task != placed[i].Task {
			t.Errorf("results[%d] = %+v; want %s completed", i, r, placed[i].Task)
		}
	}
	if r := res[6]; r.Status != http.StatusBadRequest || r.Code != schedapi.CodeNotFound || r.Error == "" {
		t.Errorf("completing a deferred task: %+v; want 400, code not_found, an error", r)
	}
	ps, err = sc.PlaceBatch(ctx, "stage", deferred, client.NoWait)
	if err != nil || len(ps) != 2 || !ps[0].Placed() || !ps[1].Placed() {
		t.Fatalf("resubmitting the deferred tasks: %+v, %v; want both placed", ps, err)
	}
	if _, err := sc.PlaceBatch(ctx, "stage", nil, client.NoWait); !errors.Is(err, client.ErrBadRequest) {
		t.Errorf("empty batch: %v; want ErrBadRequest", err)
	}
	if _, err := sc.CompleteBatch(ctx, "stage", []client.CompletedTask{{Task: "x", CompleteInfo: client.CompleteInfo{Miss: -1}}}); !errors.Is(err, client.ErrBadRequest) {
		t.Errorf("negative miss bytes: %v; want ErrBadRequest", err)
	}
}

// TestSchedulerUnavailable: no cache node (503, ErrNoNode), nobody
// listening, and a call that outlives SchedulerConfig.Timeout.
func TestSchedulerUnavailable(t *testing.T) {
	ctx := context.Background()
	empty := startScheduler(t, schedulertest.NewViews(t), nil)
	sc := newSched(t, client.SchedulerConfig{URL: "http://" + empty.HTTPAddr()})
	_, err := sc.Place(ctx, "j", "t", sp("s3://bkt/k"), client.NoWait)
	if !errors.Is(err, client.ErrNoNode) || !errors.Is(err, client.ErrSchedulerUnavailable) || errors.Is(err, client.ErrNotLeader) {
		t.Errorf("no cache node: %v; want ErrNoNode (and ErrSchedulerUnavailable)", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	sc = newSched(t, client.SchedulerConfig{URL: "http://" + dead})
	if _, err := sc.Ring(ctx); !errors.Is(err, client.ErrSchedulerUnavailable) {
		t.Errorf("nobody listening: %v; want ErrSchedulerUnavailable", err)
	}

	// One node with one slot, taken: the next Place queues at the
	// scheduler, and the client gives up after its Timeout.
	views := schedulertest.NewViews(t, schedulertest.Node("n1", "r1", 1))
	s := startScheduler(t, views, nil)
	sc = newSched(t, client.SchedulerConfig{URL: "http://" + s.HTTPAddr(), Timeout: 300 * time.Millisecond})
	if _, err := sc.Place(ctx, "j", "t1", sp("s3://bkt/1"), client.NoWait); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = sc.Place(ctx, "j", "t2", sp("s3://bkt/2"), client.NoWait)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("queued past the timeout: %v after %v; want context.DeadlineExceeded after about 300ms", err, time.Since(start))
	}
}

// TestSchedulerFollowLeader: a follower of an HA pair (etcd) answers 503
// naming the leader; the client reports ErrNotLeader with the leader's
// address, or with FollowLeader resends the call there and stays.
func TestSchedulerFollowLeader(t *testing.T) {
	e := schedulertest.StartEtcd(t)
	views := threeNodes(t)
	var ss [2]*scheduler.Scheduler
	for i := range ss {
		ss[i] = startScheduler(t, views, func(c *scheduler.Config) {
			c.NodeID = fmt.Sprintf("sched-%d", i)
			c.Etcd = scheduler.EtcdConfig{Endpoints: e.Endpoints, SessionTTL: 2 * time.Second, Prefix: "/" + t.Name() + "/"}
		})
		if i == 0 {
			waitFor(t, 10*time.Second, "sched-0 leads", func() bool { return ss[0].IsLeader() })
		}
	}
	waitFor(t, 10*time.Second, "the follower knows the leader", func() bool {
		l, ok := ss[1].Leader()
		return ok && l.HTTP == ss[0].HTTPAddr()
	})
	ctx := context.Background()

	plain := newSched(t, client.SchedulerConfig{URL: "http://" + ss[1].HTTPAddr()})
	_, err := plain.Place(ctx, "j", "t1", sp("s3://bkt/1"), client.NoWait)
	var se *client.SchedulerError
	if !errors.Is(err, client.ErrNotLeader) || !errors.As(err, &se) || se.Leader != ss[0].HTTPAddr() {
		t.Fatalf("place on the follower: %v; want ErrNotLeader naming %s", err, ss[0].HTTPAddr())
	}
	if errors.Is(err, client.ErrNoNode) {
		t.Errorf("a not-leader answer also matches ErrNoNode: %v", err)
	}

	follow := newSched(t, client.SchedulerConfig{URL: "http://" + ss[1].HTTPAddr(), FollowLeader: true})
	p, err := follow.Place(ctx, "j", "t1", sp("s3://bkt/1"), client.NoWait)
	if err != nil || !p.Placed() {
		t.Fatalf("place with FollowLeader: %+v, %v", p, err)
	}
	if got, want := follow.URL(), "http://"+ss[0].HTTPAddr(); got != want {
		t.Errorf("URL() after the redirect = %s, want the leader %s", got, want)
	}
	if _, err := follow.Complete(ctx, "j", "t1", client.CompleteInfo{Miss: 10}); err != nil {
		t.Errorf("complete after the redirect: %v", err)
	}
}

// TestSchedulerFollowLeaderAfterFailover: a FollowLeader client that a
// follower sent to the leader goes back to its configured URL when that
// leader is gone, and finds the new leader there. Was: it kept sending
// every call to the old leader's address (connection refused) for good,
// although the scheduler it was configured with had taken over.
func TestSchedulerFollowLeaderAfterFailover(t *testing.T) {
	e := schedulertest.StartEtcd(t)
	views := threeNodes(t)
	var ss [2]*scheduler.Scheduler
	for i := range ss {
		ss[i] = startScheduler(t, views, func(c *scheduler.Config) {
			c.NodeID = fmt.Sprintf("sched-%d", i)
			c.Etcd = scheduler.EtcdConfig{Endpoints: e.Endpoints, SessionTTL: 2 * time.Second, Prefix: "/" + t.Name() + "/"}
		})
		if i == 0 {
			waitFor(t, 10*time.Second, "sched-0 leads", func() bool { return ss[0].IsLeader() })
		}
	}
	waitFor(t, 10*time.Second, "the follower knows the leader", func() bool {
		l, ok := ss[1].Leader()
		return ok && l.HTTP == ss[0].HTTPAddr()
	})
	ctx := context.Background()
	home := "http://" + ss[1].HTTPAddr()
	follow := newSched(t, client.SchedulerConfig{URL: home, FollowLeader: true, Timeout: 5 * time.Second})
	if _, err := follow.Place(ctx, "j", "t1", sp("s3://bkt/1"), client.NoWait); err != nil {
		t.Fatalf("place with FollowLeader: %v", err)
	}
	if got, want := follow.URL(), "http://"+ss[0].HTTPAddr(); got != want {
		t.Fatalf("URL() after the redirect = %s, want the leader %s", got, want)
	}
	// The leader stops (it resigns: the follower takes over at once) and
	// its address answers no more.
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := ss[0].Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "sched-1 leads", func() bool { return ss[1].IsLeader() })
	for i := range 2 {
		if _, err := follow.Place(ctx, "j", fmt.Sprint("t2-", i), sp("s3://bkt/2"), client.NoWait); err != nil {
			t.Errorf("place %d after the followed leader stopped: %v; want it placed by the new leader at the configured URL %s", i, err, home)
		}
	}
	if got := follow.URL(); got != home {
		t.Errorf("URL() after the followed leader stopped = %s, want the configured %s", got, home)
	}
}

// TestSchedulerRedirectLoop: a server that always names another server as
// leader, which names the first back, is followed MaxLeaderHops times and
// then reported.
func TestSchedulerRedirectLoop(t *testing.T) {
	var a, b *httptest.Server
	hops := 0
	handler := func(other **httptest.Server) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			hops++
			leader := strings.TrimPrefix((*other).URL, "http://")
			w.Header().Set("X-Locus-Leader", leader)
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `{"error":"not the leader: the leader is x at %s","leader":%q}`, leader, leader)
		}
	}
	a = httptest.NewServer(handler(&b))
	defer a.Close()
	b = httptest.NewServer(handler(&a))
	defer b.Close()
	sc := newSched(t, client.SchedulerConfig{URL: a.URL, FollowLeader: true})
	_, err := sc.Place(context.Background(), "j", "t", sp("s3://bkt/k"), client.NoWait)
	if !errors.Is(err, client.ErrNotLeader) || hops != client.MaxLeaderHops+1 {
		t.Errorf("redirect loop: %v after %d requests; want ErrNotLeader after %d", err, hops, client.MaxLeaderHops+1)
	}
}

// TestSchedulerNonJSONError: an error answer that is not the scheduler's
// JSON (a proxy's page) keeps its status and the start of its body.
func TestSchedulerNonJSONError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
	}))
	defer srv.Close()
	sc := newSched(t, client.SchedulerConfig{URL: srv.URL})
	_, err := sc.JobCounters(context.Background(), "j")
	var se *client.SchedulerError
	if !errors.As(err, &se) || se.Status != http.StatusBadGateway || !strings.Contains(se.Message, "bad gateway") || !errors.Is(err, client.ErrSchedulerUnavailable) {
		t.Errorf("502 from a proxy: %v; want a SchedulerError 502 with the body, wrapping ErrSchedulerUnavailable", err)
	}
}

// TestPlaceTimeoutCoversBothWaits: a Place may take a data-local wait
// and then a rack-local wait before the scheduler answers, so the call's
// bound is Timeout plus twice the wait (a slow answer inside it arrives).
func TestPlaceTimeoutCoversBothWaits(t *testing.T) {
	const timeout, wait, answerAfter = 100 * time.Millisecond, 400 * time.Millisecond, 700 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(answerAfter) // between Timeout+wait (500ms) and Timeout+2*wait (900ms)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"job":"j","task":"t","node":"n1","address":"127.0.0.1:1","locality":"RACK_LOCAL","owner":"n2","ring_epoch":1}`)
	}))
	defer srv.Close()
	sc := newSched(t, client.SchedulerConfig{URL: srv.URL, Timeout: timeout})
	if _, err := sc.Place(context.Background(), "j", "t", sp("s3://bkt/k"), wait); err != nil {
		t.Fatalf("Place answered after %v with Timeout %v and wait %v: %v; want the answer", answerAfter, timeout, wait, err)
	}
}

// TestSchedulerErrorCodes: an error answer maps to its sentinel by its
// code, else by its status, so answers of schedulers from before the code
// field (a 404 for an unknown job) read the same; the 404 of an endpoint
// the scheduler does not have is not ErrNotFound.
func TestSchedulerErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		is     []error
		isNot  []error
	}{
		{"not found", 400, `{"error":"not found: job \"j\"","code":"not_found"}`, []error{client.ErrNotFound}, []error{client.ErrBadRequest}},
		{"bad request", 400, `{"error":"bad request: x","code":"bad_request"}`, []error{client.ErrBadRequest}, []error{client.ErrNotFound}},
		{"older scheduler: 404", 404, `{"error":"not found: job \"j\""}`, []error{client.ErrNotFound}, []error{client.ErrBadRequest}},
		{"older scheduler: 400", 400, `{"error":"bad request: x"}`, []error{client.ErrBadRequest}, []error{client.ErrNotFound}},
		{"no such endpoint", 404, `{"error":"no such endpoint: GET /v1/jobs/j","code":"no_endpoint"}`, nil, []error{client.ErrNotFound, client.ErrBadRequest}},
		{"conflict", 409, `{"error":"conflict: x","code":"conflict"}`, []error{client.ErrConflict}, nil},
		{"no node", 503, `{"error":"no node available: x","code":"no_node"}`, []error{client.ErrNoNode, client.ErrSchedulerUnavailable}, []error{client.ErrNotLeader}},
		{"not leader", 503, `{"error":"not the leader, and no leader is elected right now","code":"not_leader"}`, []error{client.ErrNotLeader, client.ErrSchedulerUnavailable}, []error{client.ErrNoNode}},
		{"unavailable", 503, `{"error":"scheduler unavailable: x","code":"unavailable"}`, []error{client.ErrSchedulerUnavailable}, []error{client.ErrNoNode, client.ErrNotLeader}},
		{"a later scheduler's code", 400, `{"error":"x","code":"from_the_future"}`, []error{client.ErrBadRequest}, []error{client.ErrNotFound}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				fmt.Fprintln(w, tc.body)
			}))
			defer srv.Close()
			sc := newSched(t, client.SchedulerConfig{URL: srv.URL})
			_, err := sc.JobCounters(context.Background(), "j")
			var se *client.SchedulerError
			if !errors.As(err, &se) || se.Status != tc.status {
				t.Fatalf("got %v, want a SchedulerError %d", err, tc.status)
			}
			for _, want := range tc.is {
				if !errors.Is(err, want) {
					t.Errorf("%v: not %v", err, want)
				}
			}
			for _, not := range tc.isNot {
				if errors.Is(err, not) {
					t.Errorf("%v: is %v", err, not)
				}
			}
		})
	}
}

// TestCompleteBatchOlderScheduler: batch results of a scheduler from
// before the code field get the code of their status.
func TestCompleteBatchOlderScheduler(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, `{"results":[{"task":"a","locality":"DATA_LOCAL","status":200},{"task":"b","error":"not found: x","status":404},{"task":"c","error":"conflict: x","status":409},{"task":"d","error":"not found: x","code":"not_found","status":400}]}`)
	}))
	defer srv.Close()
	sc := newSched(t, client.SchedulerConfig{URL: srv.URL})
	res, err := sc.CompleteBatch(context.Background(), "j", []client.CompletedTask{{Task: "a"}, {Task: "b"}, {Task: "c"}, {Task: "d"}})
	if err != nil || len(res) != 4 {
		t.Fatalf("CompleteBatch: %+v, %v", res, err)
	}
	for i, want := range []string{"", schedapi.CodeNotFound, schedapi.CodeConflict, schedapi.CodeNotFound} {
		if res[i].Code != want {
			t.Errorf("results[%d] = %+v; want code %q", i, res[i], want)
		}
	}
}

func TestSchedulerConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg client.SchedulerConfig
		ok  bool
	}{
		{client.SchedulerConfig{URL: "http://127.0.0.1:8080"}, true},
		{client.SchedulerConfig{URL: "127.0.0.1:8080"}, true},
		{client.SchedulerConfig{URL: "https://sched.example:8443/"}, true},
		{client.SchedulerConfig{URL: ""}, false},
		{client.SchedulerConfig{URL: "ftp://host:21"}, false},
		{client.SchedulerConfig{URL: "http://"}, false},
		{client.SchedulerConfig{URL: "http://h:1/?x=1"}, false},
		{client.SchedulerConfig{URL: "http://h:1", Token: " tok"}, false},
		{client.SchedulerConfig{URL: "http://h:1", Token: "a\nb"}, false},
		{client.SchedulerConfig{URL: "http://h:1", MaxResponseBytes: -1}, false},
	} {
		_, err := client.NewScheduler(tc.cfg)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, client.ErrInvalidSchedulerConfig)) {
			t.Errorf("NewScheduler(%+v) = %v; want ok=%v", tc.cfg, err, tc.ok)
		}
	}
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPlaceReadComplete is the executor's loop end to end: three real
// cache nodes on two racks, the scheduler in their gossip, a task placed,
// its split read through the placed node, and completed with the read's
// summary; a second run of the same split is a cache hit.
func TestPlaceReadComplete(t *testing.T) {
	store := origintest.NewMemStore()
	data := bytes.Repeat([]byte("locus-"), 400_000) // 2.4 MB: 3 blocks of 1 MiB
	uri := "s3://lake/t/part-0.bin"
	store.Put(uri, data)
	c := nodetest.Start(t, nodetest.Options{N: 3, Origin: store, Racks: []string{"r1", "r1", "r2"}})
	s := schedulertest.Start(t, scheduler.Config{Join: []string{c.Nodes[0].GossipAddr()}, BlockSize: nodetest.DefaultBlockSize})
	sc := newSched(t, client.SchedulerConfig{URL: s.HTTPAddr()})
	ctx := context.Background()
	waitFor(t, 10*time.Second, "the scheduler sees 3 cache nodes", func() bool {
		r, err := sc.Ring(ctx)
		return err == nil && len(r.Members) == 4 && r.Epoch == c.Nodes[0].View().Epoch
	})
	cl, err := client.New(client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	split := client.Split{URI: uri, Offset: 1 << 20, Length: 1 << 20} // block 1
	for run, wantHit := range []bool{false, true} {
		job := fmt.Sprintf("run%d", run)
		p, err := sc.Place(ctx, job, "t0", split, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if p.Locality != "DATA_LOCAL" || p.Node != c.Owner(uri, split.Offset).ID() {
			t.Errorf("%s: placed %s on %s, want DATA_LOCAL on the block's owner %s", job, p.Locality, p.Node, c.Owner(uri, split.Offset).ID())
		}
		var buf bytes.Buffer
		start := time.Now()
		sum, err := cl.ReadSplit(ctx, p.Address, split, &buf)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), data[split.Offset:split.Offset+split.Length]) {
			t.Fatalf("%s: read the wrong bytes", job)
		}
		if _, err := sc.Complete(ctx, job, "t0", client.InfoFromSummary(sum, time.Since(start))); err != nil {
			t.Fatal(err)
		}
		jc, err := sc.JobCounters(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		if wantHit && (jc.HitRatio != 1 || jc.LocalHitBytes != split.Length) || !wantHit && jc.MissBytes != split.Length {
			t.Errorf("%s: counters %+v; want the split's %d bytes all %s", job, jc, split.Length, map[bool]string{true: "local hits", false: "misses"}[wantHit])
		}
	}
}

// TestSchedulerAddressIsACacheNode: pointed at a cache node's HTTP address
// (its S3 gateway answers with XML), the client says so instead of passing
// the XML on as the scheduler's error.
func TestSchedulerAddressIsACacheNode(t *testing.T) {
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: origintest.NewMemStore()})
	sc, err := client.NewScheduler(client.SchedulerConfig{URL: c.HTTPURL(0)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sc.Ring(context.Background())
	if err == nil || !strings.Contains(err.Error(), "is this a cache node's --http-addr") {
		t.Fatalf("Ring from a cache node's address: %v; want an error saying it is not the scheduler", err)
	}
}

// TestOwnTimeoutIsSchedulerUnavailable: a call that ran out of the
// client's own bound (Timeout plus the waits it knows of) fails wrapping
// ErrSchedulerUnavailable and context.DeadlineExceeded, and says which
// setting to raise; a call whose caller gave up stays the caller's error
// alone. Was: a bare context.DeadlineExceeded, neither ErrNoNode nor
// ErrSchedulerUnavailable, as when a scheduler with a long --locality-wait
// kept a DefaultWait Place past the 60 s default (found by a review).
func TestOwnTimeoutIsSchedulerUnavailable(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	sc := newSched(t, client.SchedulerConfig{URL: srv.URL, Timeout: 100 * time.Millisecond})
	_, err := sc.Place(context.Background(), "j", "t", sp("s3://bkt/k"), client.DefaultWait)
	if !errors.Is(err, client.ErrSchedulerUnavailable) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "Timeout") {
		t.Errorf("Place past the client's Timeout: %v; want ErrSchedulerUnavailable and context.DeadlineExceeded, naming Timeout", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	sc = newSched(t, client.SchedulerConfig{URL: srv.URL, Timeout: time.Minute})
	_, err = sc.Place(ctx, "j", "t", sp("s3://bkt/k"), client.DefaultWait)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, client.ErrSchedulerUnavailable) {
		t.Errorf("Place past the caller's deadline: %v; want context.DeadlineExceeded alone", err)
	}
}
