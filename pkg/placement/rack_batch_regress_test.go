package placement_test

import (
	"errors"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/placement"
)

// TestRackLevelWithoutOtherNodeCostsNoWait: a level that cannot be
// satisfied costs no wait (doc.go). Was: the rack-local wait was charged
// whenever the owner's rack was known, so with the owner alone in its rack
// a contended task waited 2w instead of w while another rack's node sat
// idle (found by a review).
func TestRackLevelWithoutOtherNodeCostsNoWait(t *testing.T) {
	w := 10 * time.Second
	for _, tc := range []struct {
		name  string
		nodes []placement.Node
		// at, when the queued task goes anywhere, in waits after t0
		at int
	}{
		{"owner alone in its rack", []placement.Node{{ID: "n1", Rack: "r1", Slots: 1}, {ID: "n2", Rack: "r2", Slots: 1}}, 1},
		{"the rack's other node draining", []placement.Node{{ID: "n1", Rack: "r1", Slots: 1}, {ID: "n3", Rack: "r1", Slots: 1, State: placement.Draining}, {ID: "n2", Rack: "r2", Slots: 1}}, 1},
		{"the rack's other node with 0 slots", []placement.Node{{ID: "n1", Rack: "r1", Slots: 1}, {ID: "n3", Rack: "r1", Slots: 0}, {ID: "n2", Rack: "r2", Slots: 1}}, 1},
		// Control: a busy node of the rack could free up: the wait stays.
		{"the rack's other node busy", []placement.Node{{ID: "n1", Rack: "r1", Slots: 1}, {ID: "n3", Rack: "r1", Slots: 1}, {ID: "n2", Rack: "r2", Slots: 1}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlacer(t, placement.Config{}, tc.nodes...)
			busy := []string{"n1"}
			if tc.at == 2 {
				busy = append(busy, "n3")
			}
			for _, n := range busy {
				if _, placed, err := p.Submit(placement.Task{Job: "j", ID: "busy-" + n, Prefer: []string{n}, Wait: w}, t0); err != nil || !placed {
					t.Fatal(placed, err)
				}
			}
			if _, placed, err := p.Submit(placement.Task{Job: "j", ID: "x", Prefer: []string{"n1"}, Wait: w}, t0); err != nil || placed {
				t.Fatal(placed, err)
			}
			if tc.at == 2 {
				if as := p.Advance(t0.Add(w)); len(as) != 0 {
					t.Fatalf("at s+w, with a busy node in the rack: placed %+v, want a rack-level wait", as)
				}
			}
			as := p.Advance(t0.Add(time.Duration(tc.at) * w))
			if len(as) != 1 || as[0].Task != "x" || as[0].Node != "n2" || as[0].Locality != placement.OtherLocal {
				at, ok := p.NextDeadline()
				t.Fatalf("at s+%dw: placed %+v (next step at +%v, %v), want x OTHER_LOCAL on n2", tc.at, as, at.Sub(t0), ok)
			}
			if err := p.Verify(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRackLevelEndsWhenRackEmpties: a task waiting at the rack level goes
// anywhere at once when the last other node of the owner's rack drains.
func TestRackLevelEndsWhenRackEmpties(t *testing.T) {
	w := 10 * time.Second
	p := newPlacer(t, placement.Config{},
		placement.Node{ID: "n1", Rack: "r1", Slots: 1},
		placement.Node{ID: "n3", Rack: "r1", Slots: 1},
		placement.Node{ID: "n2", Rack: "r2", Slots: 1})
	for _, id := range []string{"a", "b"} {
		if _, placed, err := p.Submit(placement.Task{Job: "j", ID: id, Prefer: []string{"n1", "n3"}, Wait: w}, t0); err != nil || !placed {
			t.Fatal(id, placed, err)
		}
	}
	if _, placed, err := p.Submit(placement.Task{Job: "j", ID: "x", Prefer: []string{"n1"}, Wait: w}, t0); err != nil || placed {
		t.Fatal(placed, err)
	}
	if as := p.Advance(t0.Add(w + time.Second)); len(as) != 0 {
		t.Fatalf("at the rack level with n3 busy: placed %+v", as)
	}
	mustUpsert(t, p, placement.Node{ID: "n3", Rack: "r1", Slots: 1, State: placement.Draining}, t0.Add(w+2*time.Second))
	as := p.Advance(t0.Add(w + 2*time.Second))
	if len(as) != 1 || as[0].Task != "x" || as[0].Locality != placement.OtherLocal {
		t.Fatalf("after r1's last other node drained: placed %+v, want x OTHER_LOCAL at once", as)
	}
	if err := p.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestRefusedBatchLeavesPlacerUnchanged: PlaceBatch is all-or-nothing.
// Was: a batch refused for a duplicate task had created the jobs it named
// (Counters answered zeros, not ErrUnknownJob) and, under MaxJobs, forgotten
// an idle job's counters for good (found by a review).
func TestRefusedBatchLeavesPlacerUnchanged(t *testing.T) {
	p := newPlacer(t, placement.Config{MaxJobs: 2}, placement.Node{ID: "n1", Slots: 4})
	if _, _, err := p.Submit(placement.Task{Job: "old", ID: "t"}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete("old", "t", placement.Outcome{Bytes: 5}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Submit(placement.Task{Job: "x", ID: "t"}, t0); err != nil {
		t.Fatal(err)
	}
	for _, batch := range [][]placement.Task{
		{{Job: "new", ID: "a"}, {Job: "x", ID: "t"}},                           // x/t is running
		{{Job: "new", ID: "a"}, {Job: "new2", ID: "b"}, {Job: "new", ID: "a"}}, // listed twice
	} {
		if _, err := p.PlaceBatch(batch, t0); !errors.Is(err, placement.ErrDuplicateTask) {
			t.Fatalf("%+v: %v, want ErrDuplicateTask", batch, err)
		}
		for _, j := range []string{"new", "new2"} {
			if _, err := p.Counters(j); !errors.Is(err, placement.ErrUnknownJob) {
				t.Errorf("a refused batch created job %s: %v", j, err)
			}
		}
		if c, err := p.Counters("old"); err != nil || c.Total().Completed != 1 {
			t.Errorf("a refused batch forgot idle job old: %+v %v", c, err)
		}
		if err := p.Verify(); err != nil {
			t.Fatal(err)
		}
	}
	// An accepted batch forgets the longest idle job as Submit does.
	if _, err := p.PlaceBatch([]placement.Task{{Job: "new", ID: "a"}}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Counters("old"); !errors.Is(err, placement.ErrUnknownJob) {
		t.Errorf("MaxJobs 2 with x and new active: old still known (%v)", err)
	}
}
