package placement_test

import (
	"errors"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/placement"
)

// TestRejoinAndRackMove: a node that
// rejoins with fewer slots than it runs takes nothing until below; a node
// that moves rack while tasks of its old rack wait at rack level; a node
// that dies with queued and running tasks; the counters add up throughout
// and Verify holds after every step.
func TestRejoinAndRackMove(t *testing.T) {
	p, err := placement.New(placement.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	check := func(step string) {
		t.Helper()
		if err := p.Verify(); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		g, _ := p.Counters("")
		for _, l := range placement.Localities {
			lc := g.Level(l)
			if lc.Placed != lc.Completed+lc.Running+lc.Lost {
				t.Fatalf("%s: %v placed %d != completed %d + running %d + lost %d", step, l, lc.Placed, lc.Completed, lc.Running, lc.Lost)
			}
		}
	}
	if _, err := p.SetNodes([]placement.Node{{ID: "a", Rack: "r1", Slots: 2}, {ID: "b", Rack: "r1", Slots: 1}, {ID: "c", Rack: "r2", Slots: 1}}, at(0)); err != nil {
		t.Fatal(err)
	}
	w := time.Second
	for _, id := range []string{"t1", "t2"} {
		a, ok, err := p.Submit(placement.Task{Job: "j", ID: id, Prefer: []string{"a"}, Wait: w}, at(0))
		if err != nil || !ok || a.Node != "a" || a.Locality != placement.DataLocal {
			t.Fatalf("%s: %+v %v %v", id, a, ok, err)
		}
	}
	check("a full")
	// a rejoins with 1 slot: it runs 2, takes nothing new.
	if _, err := p.SetNodes([]placement.Node{{ID: "a", Rack: "r1", Slots: 1}, {ID: "b", Rack: "r1", Slots: 1}, {ID: "c", Rack: "r2", Slots: 1}}, at(10*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := p.Submit(placement.Task{Job: "j", ID: "t3", Prefer: []string{"a"}, Wait: w}, at(20*time.Millisecond)); ok {
		t.Fatal("t3 placed at once with a over its slots and waiting data-local")
	}
	check("a over")
	// b moves to rack r2 before t3 reaches rack level: t3 (owner a, rack
	// r1) must not go RACK_LOCAL to b (now r2). With no node of r1 but a
	// (full) left, the rack level cannot be satisfied and costs no wait:
	// t3 goes anywhere when it reaches it.
	if _, err := p.SetNodes([]placement.Node{{ID: "a", Rack: "r1", Slots: 1}, {ID: "b", Rack: "r2", Slots: 1}, {ID: "c", Rack: "r2", Slots: 1}}, at(30*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if as := p.Advance(at(w - 50*time.Millisecond)); len(as) != 0 {
		t.Fatalf("t3 placed during its data-local wait: %+v", as)
	}
	check("b moved")
	as := p.Advance(at(w + 50*time.Millisecond))
	if len(as) != 1 || as[0].Task != "t3" || as[0].Locality != placement.OtherLocal {
		t.Fatalf("at the rack level, with no other node in r1: %+v, want t3 OTHER_LOCAL at once", as)
	}
	check("t3 anywhere")
	// a completes one task: still at its 1 slot (runs 1), nothing freed.
	if _, err := p.Complete("j", "t1", placement.Outcome{LocalHit: 5}); err != nil {
		t.Fatal(err)
	}
	// a dies: t2 lost; complete of t2 is unknown; double complete of t1 too.
	lost, err := p.SetNodes([]placement.Node{{ID: "b", Rack: "r2", Slots: 1}, {ID: "c", Rack: "r2", Slots: 1}}, at(3*w))
	if err != nil || len(lost) != 1 || lost[0].Task != "t2" {
		t.Fatalf("a dies: lost %+v %v", lost, err)
	}
	check("a dead")
	if _, err := p.Complete("j", "t2", placement.Outcome{}); !errors.Is(err, placement.ErrUnknownTask) {
		t.Errorf("complete of a lost task: %v, want ErrUnknownTask", err)
	}
	if _, err := p.Complete("j", "t1", placement.Outcome{}); !errors.Is(err, placement.ErrUnknownTask) {
		t.Errorf("double complete: %v, want ErrUnknownTask", err)
	}
	c, _ := p.Counters("j")
	tot := c.Total()
	if tot.Placed != 3 || tot.Completed != 1 || tot.Lost != 1 || tot.Running != 1 || c.DataLocal.LocalHitBytes != 5 {
		t.Errorf("job counters %+v", c)
	}
	check("end")
}
