package placement_test

import (
	"fmt"
	"time"

	"github.com/locuscache/locus/pkg/placement"
)

// The scheduler service's use of the placer: a cluster of three nodes in
// two racks, tasks that wait for their owner, step down when their wait
// expires, and report how their bytes were served.
func Example() {
	p, err := placement.New(placement.Config{})
	if err != nil {
		panic(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.SetNodes([]placement.Node{
		{ID: "n1", Rack: "r1", Slots: 1},
		{ID: "n2", Rack: "r1", Slots: 1},
		{ID: "n3", Rack: "r2", Slots: 1},
	}, start)

	// Two tasks whose split is owned by n1 (replica n3).
	for _, id := range []string{"t1", "t2"} {
		a, placed, err := p.Submit(placement.Task{Job: "q1", ID: id, Prefer: []string{"n1"}, Wait: 3 * time.Second}, start)
		switch {
		case err != nil:
			fmt.Println(err)
		case placed:
			fmt.Printf("%s -> %s %v\n", id, a.Node, a.Locality)
		default:
			next, _ := p.NextDeadline()
			fmt.Printf("%s queued until %v\n", id, next.Sub(start))
		}
	}

	// The timer fires: t2 may now run in n1's rack.
	now := start.Add(3 * time.Second)
	for _, a := range p.Advance(now) {
		fmt.Printf("%s -> %s %v after %v\n", a.Task, a.Node, a.Locality, a.Waited())
	}

	// t1 finishes: its bytes were all served from n1's cache.
	p.Complete("q1", "t1", placement.Outcome{Bytes: 100, LocalHit: 100})
	p.Complete("q1", "t2", placement.Outcome{Bytes: 100, PeerHit: 60, Miss: 40})
	p.Advance(now)

	c, _ := p.Counters("q1")
	fmt.Printf("DATA_LOCAL_TASKS=%d RACK_LOCAL_TASKS=%d OTHER_LOCAL_TASKS=%d\n",
		c.DataLocal.Placed, c.RackLocal.Placed, c.OtherLocal.Placed)
	fmt.Printf("hit ratio %.2f: data-local %.2f, rack-local %.2f\n",
		c.HitRatio(), c.DataLocal.HitRatio(), c.RackLocal.HitRatio())
	// Output:
	// t1 -> n1 DATA_LOCAL
	// t2 queued until 3s
	// t2 -> n2 RACK_LOCAL after 3s
	// DATA_LOCAL_TASKS=1 RACK_LOCAL_TASKS=1 OTHER_LOCAL_TASKS=0
	// hit ratio 0.80: data-local 1.00, rack-local 0.60
}

// PlaceBatch places a stage at once, maximising DATA_LOCAL placements: a
// goes to its replica n2 so that b, which only n1 holds, can run on n1. The
// tail that does not fit (c) waits in the queue.
func ExamplePlacer_PlaceBatch() {
	p, _ := placement.New(placement.Config{})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.SetNodes([]placement.Node{{ID: "n1", Rack: "r1", Slots: 1}, {ID: "n2", Rack: "r1", Slots: 1}}, now)
	as, _ := p.PlaceBatch([]placement.Task{
		{Job: "q", ID: "a", Prefer: []string{"n1", "n2"}, Wait: time.Second},
		{Job: "q", ID: "b", Prefer: []string{"n1"}, Wait: time.Second},
		{Job: "q", ID: "c", Prefer: []string{"n1"}, Wait: time.Second},
	}, now)
	for _, a := range as {
		fmt.Println(a.Task, "->", a.Node, a.Locality)
	}
	fmt.Println("queued:", p.Queued())
	// Output:
	// a -> n2 DATA_LOCAL
	// b -> n1 DATA_LOCAL
	// queued: 1
}

// AppendAdvance is Advance into a buffer the caller reuses: the loop of a
// busy scheduler then allocates nothing per decision.
func ExamplePlacer_AppendAdvance() {
	p, _ := placement.New(placement.Config{})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.SetNodes([]placement.Node{{ID: "n1", Rack: "r1", Slots: 1}}, now)
	p.Submit(placement.Task{Job: "q", ID: "a", Prefer: []string{"n1"}, Wait: time.Second}, now)
	p.Submit(placement.Task{Job: "q", ID: "b", Prefer: []string{"n1"}, Wait: time.Second}, now)

	var buf []placement.Assignment // kept across iterations
	for _, done := range []string{"a", "b"} {
		now = now.Add(time.Millisecond)
		p.Complete("q", done, placement.Outcome{})
		buf = p.AppendAdvance(buf[:0], now)
		for _, a := range buf {
			fmt.Println(a.Task, "->", a.Node, a.Locality, "after", a.Waited())
		}
	}
	// Output:
	// b -> n1 DATA_LOCAL after 1ms
}
