package scheduler_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/testproc"
	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/placement"
	"github.com/locuscache/locus/pkg/placement/placementtest"
	"github.com/locuscache/locus/pkg/ring"
	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// listed returns n URIs whose first block's preference list of length
// repl on v starts with owner, and the second node of each list.
func listed(t *testing.T, v *membership.View, owner string, repl, n int) (uris, second []string) {
	t.Helper()
	for i := 0; len(uris) < n && i < 100000; i++ {
		uri := fmt.Sprintf("s3://bucket/%s/r%d-%05d.parquet", owner, repl, i)
		key, err := ring.PlacementKey(uri, 0, 1<<20, membership.DefaultBlockSize)
		if err != nil {
			t.Fatal(err)
		}
		if l := v.Ring.Owners(key, repl); l[0].ID == owner {
			uris = append(uris, uri)
			if repl > 1 {
				second = append(second, l[1].ID)
			}
		}
	}
	if len(uris) < n {
		t.Fatalf("found only %d URIs owned by %s", len(uris), owner)
	}
	return uris, second
}

// TestReplicationFromNodes: the scheduler places with the replication the
// cache nodes announce, whatever its own setting says; a setting that
// differs is logged once as a warning. With the nodes' default (2) a task
// whose owner is busy runs DATA_LOCAL on the second node of its list at
// once; with owner-only nodes (1) it waits for its owner and steps down
// the ladder.
func TestReplicationFromNodes(t *testing.T) {
	ctx := context.Background()
	nodes := []membership.Member{schedulertest.Node("n1", "r1", 1), schedulertest.Node("n2", "r1", 1), schedulertest.Node("n3", "r2", 1)}
	for _, tc := range []struct {
		name       string
		nodes      int // the replication the nodes announce
		configured int // Config.Replication
		warn       bool
	}{
		{"nodes' default", membership.DefaultReplication, 0, false},
		{"flag agrees", 2, 2, false},
		{"flag 1, nodes 2: the nodes win", 2, 1, true},
		{"owner-only nodes", 1, 0, false},
		{"flag 2, nodes 1: the nodes win", 1, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := make([]membership.Member, len(nodes))
			for i, m := range nodes {
				ms[i] = schedulertest.Replication(m, tc.nodes)
			}
			views := schedulertest.NewViews(t, ms...)
			var logs testproc.SyncBuffer
			s, c := startWith(t, views, func(cfg *scheduler.Config) {
				cfg.Replication = tc.configured
				cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			})
			if got := s.Replication(); got != tc.nodes {
				t.Errorf("Replication() = %d, want the nodes' %d", got, tc.nodes)
			}
			r, err := c.Ring(ctx)
			if err != nil || r.Replication != tc.nodes {
				t.Errorf("GET /v1/ring: replication %d (%v), want the nodes' %d", r.Replication, err, tc.nodes)
			}
			if st := s.Settings(); st.Replication != tc.configured {
				t.Errorf("Settings().Replication = %d, want the configured %d", st.Replication, tc.configured)
			}

			uris, second := listed(t, views.View(), "n1", tc.nodes, 2)
			a, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "a", Split: split(uris[0]), WaitMS: 300})
			if err != nil || a.Node != "n1" || a.Locality != "DATA_LOCAL" {
				t.Fatalf("a: %+v %v, want n1 DATA_LOCAL", a, err)
			}
			start := time.Now()
			b, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "b", Split: split(uris[1]), WaitMS: 300})
			d := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if tc.nodes > 1 {
				if b.Node != second[1] || b.Locality != "DATA_LOCAL" || d > 250*time.Millisecond {
					t.Errorf("b: %s %s after %v, want DATA_LOCAL at once on %s, the second node of its list", b.Node, b.Locality, d, second[1])
				}
			} else if b.Locality == "DATA_LOCAL" || d < 300*time.Millisecond {
				t.Errorf("b: %s %s after %v, want a step down the ladder after the 300ms wait (owner-only lists)", b.Node, b.Locality, d)
			}

			warned := strings.Count(logs.String(), "differs from the cache nodes'")
			switch {
			case tc.warn && warned != 1:
				t.Errorf("%d warnings, want exactly one; logs:\n%s", warned, logs.String())
			case !tc.warn && warned != 0:
				t.Errorf("warned although the replication agrees; logs:\n%s", logs.String())
			}
			if tc.warn && !strings.Contains(logs.String(), fmt.Sprintf("configured=%d nodes=%d", tc.configured, tc.nodes)) {
				t.Errorf("the warning does not name both values; logs:\n%s", logs.String())
			}
		})
	}
}

// TestReplicationWithoutNodes: before any cache node announces one, the
// configured replication is in use, else DefaultReplication.
func TestReplicationWithoutNodes(t *testing.T) {
	for _, tc := range []struct{ configured, want int }{{0, scheduler.DefaultReplication}, {3, 3}} {
		s, c := startWith(t, schedulertest.NewViews(t), func(cfg *scheduler.Config) { cfg.Replication = tc.configured })
		r, err := c.Ring(context.Background())
		if err != nil || r.Replication != tc.want || s.Replication() != tc.want {
			t.Errorf("configured %d: ring replication %d, Replication() %d (%v), want %d", tc.configured, r.Replication, s.Replication(), err, tc.want)
		}
	}
	if scheduler.DefaultReplication != membership.DefaultReplication {
		t.Errorf("DefaultReplication %d, want the nodes' default %d", scheduler.DefaultReplication, membership.DefaultReplication)
	}
	if placementtest.DefaultReplication != membership.DefaultReplication {
		t.Errorf("the placement acceptance simulates replication %d, the cluster default is %d", placementtest.DefaultReplication, membership.DefaultReplication)
	}
	if membership.MaxReplication != placement.MaxPrefer {
		t.Errorf("membership.MaxReplication %d != placement.MaxPrefer %d: a node could announce a list the placer refuses", membership.MaxReplication, placement.MaxPrefer)
	}
}

// TestStandaloneWarnsOfOtherSchedulers: a standalone scheduler that sees
// another scheduler (an observer serving an HTTP API) in the gossip warns
// once per set of them: both would book the same slots. A plain observer
// (locusctl) is not a scheduler.
func TestStandaloneWarnsOfOtherSchedulers(t *testing.T) {
	nodes := []membership.Member{schedulertest.Node("n1", "r1", 2), schedulertest.Node("n2", "r2", 2)}
	observer := func(id, http string) membership.Member {
		return membership.Member{NodeMeta: membership.NodeMeta{ID: id, Role: membership.RoleObserver, HTTPAddr: http}}
	}
	views := schedulertest.NewViews(t, append(nodes, observer("locusctl-1", ""))...)
	var logs testproc.SyncBuffer
	startWith(t, views, func(cfg *scheduler.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	const warning = "other schedulers share this cluster"
	time.Sleep(100 * time.Millisecond)
	if strings.Contains(logs.String(), warning) {
		t.Fatalf("warned with only a locusctl observer:\n%s", logs.String())
	}
	if err := views.Set(append(nodes, observer("locusctl-1", ""), observer("sched-2", "127.0.0.9:8080"))...); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), warning) {
		if time.Now().After(deadline) {
			t.Fatalf("no warning 5s after a second scheduler joined:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "sched-2 at 127.0.0.9:8080") {
		t.Errorf("the warning does not name the other scheduler:\n%s", logs.String())
	}
	// The same set again (another view change): no second warning.
	if err := views.Set(append(nodes[:1], observer("locusctl-1", ""), observer("sched-2", "127.0.0.9:8080"))...); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := strings.Count(logs.String(), warning); n != 1 {
		t.Errorf("%d warnings for one set of other schedulers, want 1:\n%s", n, logs.String())
	}
}
