package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/ring"
	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// cluster is three cache nodes running as processes. They announce
// replication 1 (owner-only preference lists): the placement checks below
// count tasks run off their owner.
type cluster struct {
	ids, racks []string
	gossip     []string
	grpc       []string // the gRPC addresses they announce
	kill       func(i int)
}

// fakeCluster runs three gossip members as child processes
// (schedulertest.StartMember): the scheduler only sees gossip, so for
// placement they are cache nodes.
func fakeCluster(t *testing.T) cluster {
	c := cluster{ids: []string{"n1", "n2", "n3"}, racks: []string{"r1", "r1", "r2"}}
	var ms []*schedulertest.Member
	for i, id := range c.ids {
		o := schedulertest.MemberOptions{Rack: c.racks[i], Slots: 4, Replication: 1, GRPCAddr: fmt.Sprintf("127.0.0.1:%d", 17070+i)}
		if i > 0 {
			o.Join = []string{ms[0].GossipAddr}
		}
		m := schedulertest.StartMember(t, id, o)
		ms = append(ms, m)
		c.gossip = append(c.gossip, m.GossipAddr)
		c.grpc = append(c.grpc, o.GRPCAddr)
	}
	c.kill = func(i int) { ms[i].Kill() }
	return c
}

// realCluster runs three cmd/cachenode daemons (file origin, RAM cache).
func realCluster(t *testing.T) cluster {
	bin := nodetest.BuildCachenode(t)
	c := cluster{ids: []string{"n1", "n2", "n3"}, racks: []string{"r1", "r1", "r2"}}
	var ps []*nodetest.Process
	for i, id := range c.ids {
		o := nodetest.ProcessOptions{ID: id, FileRoot: t.TempDir(),
			Args: []string{"--rack=" + c.racks[i], "--slots=4", "--memory-size=16MiB", "--replication=1", "--log-level=info"}}
		if i > 0 {
			o.Join = []string{ps[0].GossipAddr}
		}
		p := nodetest.StartProcess(t, bin, o)
		ps = append(ps, p)
		c.gossip = append(c.gossip, p.GossipAddr)
		c.grpc = append(c.grpc, p.GRPCAddr)
	}
	c.kill = func(i int) { ps[i].Kill() }
	return c
}

// ownedBy returns n URIs whose placement key's owner is node, computed on
// a ring of the cluster's members (the ring depends only on their ids and
// racks, so the scheduler computes the same).
func (c cluster) ownedBy(t *testing.T, node, tag string, n int) []string {
	t.Helper()
	var ms []membership.Member
	for i, id := range c.ids {
		ms = append(ms, membership.Member{NodeMeta: membership.NodeMeta{ID: id, Rack: c.racks[i], GRPCAddr: c.grpc[i]}})
	}
	v, err := membership.NewView(ms, ring.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := 0; len(out) < n; i++ {
		uri := fmt.Sprintf("s3://lake/%s/%s-%d.parquet", tag, node, i)
		key, _ := ring.PlacementKey(uri, 0, 64<<20, membership.DefaultBlockSize)
		if v.Ring.Owner(key).ID == node {
			out = append(out, uri)
		}
	}
	return out
}

func waitAlive(t *testing.T, c *schedulertest.Client, n int, timeout time.Duration) schedapi.RingStatus {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r, err := c.Ring(context.Background())
		alive := 0
		if err == nil {
			for _, m := range r.Members {
				if m.Role == "cache" && m.State == "alive" {
					alive++
				}
			}
			if alive == n {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("scheduler sees %d alive cache nodes after %v, want %d (%v)", alive, timeout, n, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sp(uri string) schedapi.Split { return schedapi.Split{URI: uri, Offset: 0, Length: 64 << 20} }

// TestIntegration runs the scheduler binary and three cache nodes as
// processes on loopback: placements and completions through the JSON API
// give matching counters (and metrics); a node killed with SIGKILL has its
// running tasks reported lost, and new tasks avoid it, within 5 s. It runs
// once with gossip-only member processes and once with real cmd/cachenode
// daemons.
func TestIntegration(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(*testing.T) cluster
	}{{"members", fakeCluster}, {"cachenodes", realCluster}} {
		t.Run(tc.name, func(t *testing.T) { integration(t, tc.start(t)) })
	}
}

func integration(t *testing.T, cl cluster) {
	bin := schedulertest.BuildScheduler(t)
	p := schedulertest.StartProcess(t, bin, schedulertest.ProcessOptions{ID: "sched", Join: []string{cl.gossip[0]}})
	c := p.Client()
	ctx := context.Background()
	r := waitAlive(t, c, 3, 10*time.Second)
	if r.Replication != 1 {
		t.Errorf("scheduler places with replication %d, want the nodes' 1", r.Replication)
	}
	addr := map[string]string{}
	for i, id := range cl.ids {
		addr[id] = cl.grpc[i]
	}
	for _, m := range r.Members {
		if m.Role == "cache" && m.Address != addr[m.Node] {
			t.Errorf("ring says %s is at %s, want %s", m.Node, m.Address, addr[m.Node])
		}
	}

	// Place and complete: 5 rounds of a 12-task batch (every slot), with
	// wait_ms -1. Six tasks prefer n1 (4 slots), so two run off their
	// owner: one in n1's rack (n2), one elsewhere (n3).
	type sum struct{ tasks, local, peer, miss int64 }
	want := map[string]*sum{"DATA_LOCAL": {}, "RACK_LOCAL": {}, "OTHER_LOCAL": {}}
	for round := 0; round < 5; round++ {
		var tasks []schedapi.BatchTask
		for i := 0; i < 12; i++ {
			owner := 0
			if i >= 6 {
				owner = 1 + i%2
			}
			uri := cl.ownedBy(t, cl.ids[owner], fmt.Sprint("r", round, "-", i), 1)[0]
			tasks = append(tasks, schedapi.BatchTask{Task: fmt.Sprintf("r%d-t%d", round, i), Split: sp(uri)})
		}
		resp, err := c.PlaceBatch(ctx, schedapi.PlaceBatchRequest{Job: "etl", WaitMS: -1, Tasks: tasks})
		if err != nil {
			t.Fatal(err)
		}
		var done []schedapi.CompleteTask
		for i, pl := range resp.Placements {
			if !pl.Placed() {
				t.Fatalf("%s deferred: %s", pl.Task, pl.Error)
			}
			if pl.Address != addr[pl.Node] {
				t.Errorf("%s: address %s, want %s", pl.Node, pl.Address, addr[pl.Node])
			}
			local, peer, miss := int64(0), int64(0), int64(1000+i)
			switch pl.Locality {
			case "DATA_LOCAL":
				local = 4000 + int64(i)
			case "RACK_LOCAL":
				peer = 2000
			}
			s := want[pl.Locality]
			s.tasks++
			s.local += local
			s.peer += peer
			s.miss += miss
			done = append(done, schedapi.CompleteTask{Task: pl.Task, LocalHitBytes: local, PeerHitBytes: peer, MissBytes: miss, DurationMS: 10})
		}
		// Half through the batch call, half one by one (DESIGN's call).
		cr, err := c.CompleteBatch(ctx, schedapi.CompleteBatchRequest{Job: "etl", Tasks: done[:6]})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range cr.Results {
			if x.Status != 200 {
				t.Errorf("complete %+v", x)
			}
		}
		for _, d := range done[6:] {
			if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "etl", Task: d.Task, LocalHitBytes: d.LocalHitBytes, PeerHitBytes: d.PeerHitBytes, MissBytes: d.MissBytes, DurationMS: d.DurationMS}); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := c.Counters(ctx, "etl")
	if err != nil {
		t.Fatal(err)
	}
	if got.DataLocalTasks != want["DATA_LOCAL"].tasks || got.RackLocalTasks != want["RACK_LOCAL"].tasks || got.OtherLocalTasks != want["OTHER_LOCAL"].tasks {
		t.Errorf("counters %d/%d/%d, want %d/%d/%d", got.DataLocalTasks, got.RackLocalTasks, got.OtherLocalTasks,
			want["DATA_LOCAL"].tasks, want["RACK_LOCAL"].tasks, want["OTHER_LOCAL"].tasks)
	}
	for loc, st := range map[string]schedapi.LocalityStats{"DATA_LOCAL": got.ByLocality.DataLocal, "RACK_LOCAL": got.ByLocality.RackLocal, "OTHER_LOCAL": got.ByLocality.OtherLocal} {
		w := want[loc]
		if st.LocalHitBytes != w.local || st.PeerHitBytes != w.peer || st.MissBytes != w.miss || st.Completed != w.tasks {
			t.Errorf("%s: %+v, want %+v", loc, st, *w)
		}
	}
	if got.DataLocalTasks != 50 || got.RackLocalTasks != 5 || got.OtherLocalTasks != 5 {
		t.Errorf("counters %d/%d/%d, want 50/5/5 (the matching places 10 of 12 per round on their owner)", got.DataLocalTasks, got.RackLocalTasks, got.OtherLocalTasks)
	}
	if got.Completed != 60 || got.Running != 0 {
		t.Errorf("completed %d running %d", got.Completed, got.Running)
	}
	t.Logf("60 tasks: DATA_LOCAL %d, RACK_LOCAL %d, OTHER_LOCAL %d; hit ratio %.3f (DATA_LOCAL %.3f)",
		got.DataLocalTasks, got.RackLocalTasks, got.OtherLocalTasks, got.HitRatio, got.HitRatioByLocality.DataLocal)
	metrics := scrape(t, "http://"+p.HTTPAddr+"/metrics")
	for _, line := range []string{
		fmt.Sprintf(`locus_tasks_placed_total{locality="DATA_LOCAL"} %d`, got.DataLocalTasks),
		fmt.Sprintf(`locus_task_bytes_total{locality="DATA_LOCAL",source="local"} %d`, got.ByLocality.DataLocal.LocalHitBytes),
		`locus_ring_members{state="alive"} 3`,
		`locus_slots{state="free"} 12`,
	} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}

	// Kill n2 while two tasks run on it; keep placing tasks that prefer
	// it, each completed at once, and measure when the scheduler notices.
	victim := 1
	vid := cl.ids[victim]
	var running []string
	for i, uri := range cl.ownedBy(t, vid, "kill", 2) {
		pl, err := c.Place(ctx, schedapi.PlaceRequest{Job: "kill", Task: fmt.Sprint("held", i), Split: sp(uri), WaitMS: 5000})
		if err != nil || pl.Node != vid || pl.Locality != "DATA_LOCAL" {
			t.Fatalf("held%d: %+v %v", i, pl, err)
		}
		running = append(running, pl.Task)
	}
	probes := cl.ownedBy(t, vid, "probe", 400)
	killed := time.Now()
	cl.kill(victim)
	var lostAt, lastOnVictim time.Duration
	avoidedSince := time.Duration(-1)
	for i := 0; ; i++ {
		now := time.Since(killed)
		pl, err := c.Place(ctx, schedapi.PlaceRequest{Job: "probe", Task: fmt.Sprint("p", i), Split: sp(probes[i%len(probes)]), WaitMS: -1})
		if err != nil {
			t.Fatal(err)
		}
		if pl.Node == vid {
			lastOnVictim, avoidedSince = now, -1
		} else if avoidedSince < 0 {
			avoidedSince = now
		}
		if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "probe", Task: pl.Task, Bytes: 1}); err != nil {
			// A probe placed on the victim just before the scheduler
			// declared it dead is lost, so its completion is unknown.
			var se *schedulertest.StatusError
			if !(pl.Node == vid && errors.As(err, &se) && se.Code == http.StatusBadRequest && se.Body.Code == schedapi.CodeNotFound) {
				t.Fatal(err)
			}
		}
		if lostAt == 0 {
			cnt, err := c.Counters(ctx, "kill")
			if err != nil {
				t.Fatal(err)
			}
			if cnt.Lost == 2 {
				lostAt = time.Since(killed)
			}
		}
		if lostAt > 0 && avoidedSince >= 0 && time.Since(killed)-avoidedSince > time.Second {
			break
		}
		if time.Since(killed) > 10*time.Second {
			t.Fatalf("10 s after the kill: lost at %v, last placement on %s at %v", lostAt, vid, lastOnVictim)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%s killed (SIGKILL): its 2 running tasks reported lost after %v; last placement on it %v after the kill, none since %v",
		vid, lostAt.Round(time.Millisecond), lastOnVictim.Round(time.Millisecond), avoidedSince.Round(time.Millisecond))
	if lostAt > 5*time.Second {
		t.Errorf("lost tasks reported %v after the kill, want within 5 s", lostAt)
	}
	if avoidedSince > 5*time.Second {
		t.Errorf("new tasks avoided %s only %v after the kill, want within 5 s", vid, avoidedSince)
	}
	lost, err := c.Lost(ctx, "kill")
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) != 2 || lost[0].Node != vid {
		t.Errorf("/v1/lost: %+v", lost)
	}
	for _, task := range running {
		_, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "kill", Task: task, Bytes: 1})
		var se *schedulertest.StatusError
		if !errors.As(err, &se) || se.Code != http.StatusBadRequest || se.Body.Code != schedapi.CodeNotFound {
			t.Errorf("complete of lost %s: %v, want 400 with code not_found", task, err)
		}
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
