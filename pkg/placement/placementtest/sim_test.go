package placementtest

import (
	"flag"
	"fmt"
	"testing"
	"time"
)

var sweep = flag.Bool("sweep", false, "run the simulation sweep (TestSimSweep) and print its table")

// TestSimAcceptance is the placement acceptance on the seed's cluster shape
// (24 nodes x 12 slots, 4 racks), a sequential stream of 100 scan stages of
// 8 fact tables and a hot set, log-normal task times (median 1.5s), a 3s
// locality wait and the cluster's default replication: preference lists of
// DefaultReplication = 2 (owner + one replica), which the cache nodes
// announce and the scheduler follows. The targets: >= 99.9% DATA_LOCAL with
// tasks <= slots, >= 97% at 2x oversubscription. At every event the
// simulator checks, on its own books, that no task waits while a slot it
// may use is free, and every 8th event the placer's invariants (Verify;
// every 64th under the race detector).
//
// Why the cluster default is 2 (as Trino's file-system cache,
// fs.cache.preferred-hosts-count = 2): with owner-only preference lists
// (replication 1) the same workload cannot reach the targets with realistic
// task times: 99.55% (tasks <= slots) and 91.65% (2x, 1.5s median tasks)
// DATA_LOCAL, where 2 reaches 100% and 98.9%. A hot node's queue beyond
// what it can start within the 3s wait must step down whatever the placer
// does, since task times are not known in advance (TestSimReplicationOne
// logs the owner-only figures, on 60 stages; the -sweep table shows shorter
// tasks or longer waits closing the gap). The cost of 2 is that a hot block
// may be cached on both nodes of its list: on this workload the simulated
// cache hit ratio is 0.857 against 0.879 (tasks <= slots) and 0.927 against
// 0.941 (2x) with owner-only lists.
func TestSimAcceptance(t *testing.T) {
	verifyEvery := 8
	if raceEnabled {
		verifyEvery = 64
	}
	for _, tc := range []struct {
		load    float64
		minData float64
	}{
		{load: 1, minData: 0.999}, // tasks <= slots
		{load: 2, minData: 0.97},  // 2x oversubscription
	} {
		for _, batch := range []bool{false, true} {
			t.Run(fmt.Sprintf("load=%v/batch=%v", tc.load, batch), func(t *testing.T) {
				r, err := Simulate(SimConfig{Seed: 1, Load: tc.load, Replication: DefaultReplication, Batch: batch, Stages: 100, Check: true, VerifyEvery: verifyEvery})
				if err != nil {
					t.Fatal(err)
				}
				t.Log(r)
				if r.Violations > 0 {
					t.Errorf("%d violations, first: %v", r.Violations, r.Examples)
				}
				if got := r.DataLocalRatio(); got < tc.minData {
					t.Errorf("DATA_LOCAL ratio %.4f, want >= %.4f", got, tc.minData)
				}
				if r.Tasks == 0 || r.Counters.Total().Completed != int64(r.Tasks) {
					t.Errorf("completed %d of %d tasks", r.Counters.Total().Completed, r.Tasks)
				}
			})
		}
	}
}

// TestSimReplicationOne: with owner-only preference lists (replication 1,
// the cluster's former default) at 2x, the 3s wait still buys a large share
// of DATA_LOCAL placements over not waiting, and never leaves a slot idle
// while a task waits past its wait; it logs the owner-only DATA_LOCAL ratio
// that TestSimAcceptance's comment quotes (below its 97% target).
func TestSimReplicationOne(t *testing.T) {
	var dl [2]float64
	for i, wait := range []time.Duration{3 * time.Second, -1} {
		r, err := Simulate(SimConfig{Seed: 1, Load: 2, Replication: 1, Batch: true, Stages: 60, Wait: wait, Check: true, VerifyEvery: 16})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("wait=%v: %v", max(wait, 0), r)
		if r.Violations > 0 {
			t.Errorf("wait=%v: %d violations, first: %v", wait, r.Violations, r.Examples)
		}
		dl[i] = r.DataLocalRatio()
	}
	if dl[0] < dl[1]+0.05 {
		t.Errorf("DATA_LOCAL with a 3s wait %.4f, without %.4f: want at least 5 points better", dl[0], dl[1])
	}
}

// TestSimDeterministic: the same seed gives the same result.
func TestSimDeterministic(t *testing.T) {
	cfg := SimConfig{Seed: 7, Load: 2, Replication: 1, Stages: 20, Streams: 3}
	a, err := Simulate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Simulate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("same seed, different results:\n%v\n%v", a, b)
	}
}

// TestSimNoWait: with no wait, every task is placed at once while any slot
// is free: the cluster is never idle while tasks queue (Check), and locality
// suffers.
func TestSimNoWait(t *testing.T) {
	r, err := Simulate(SimConfig{Seed: 3, Load: 2, Wait: -1, Stages: 30, Check: true, VerifyEvery: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r)
	if r.Violations > 0 {
		t.Errorf("%d violations, first: %v", r.Violations, r.Examples)
	}
	if r.MaxWait > 0 && r.ByLocality[1]+r.ByLocality[2] == 0 {
		t.Errorf("tasks waited (max %v) but none stepped down", r.MaxWait)
	}
}

// TestSimSweep prints DATA_LOCAL and hit ratios over replication, load,
// streams, task length and wait. Run with:
//
//	go test ./pkg/placement/placementtest -run TestSimSweep -v -sweep
func TestSimSweep(t *testing.T) {
	if !*sweep {
		t.Skip("run with -sweep")
	}
	for _, streams := range []int{1, 4} {
		for _, med := range []time.Duration{time.Second, 1500 * time.Millisecond} {
			for _, wait := range []time.Duration{-1, time.Second, 3 * time.Second} {
				for _, load := range []float64{1, 2} {
					for _, rep := range []int{1, 2, 3} {
						r, err := Simulate(SimConfig{Seed: 1, Load: load, Replication: rep, Batch: true, Stages: 100,
							MedianTask: med, Streams: streams, Wait: wait})
						if err != nil {
							t.Fatal(err)
						}
						t.Logf("streams=%d median=%v wait=%v load=%v rep=%d: %v", streams, med, max(wait, 0), load, rep, r)
					}
				}
			}
		}
	}
}
