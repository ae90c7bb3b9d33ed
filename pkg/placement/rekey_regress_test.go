package placement_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/placement"
)

// TestRekeyOldestFirstAfterOwnerLeaves: a caller applies a ring
// change as RemoveNode (or UpsertNode; Rekey's doc allows either instead of
// SetNodes), then Rekey, then Advance. When the node that left was the only preferred
// node of a younger task y, SetNodes ends y's data-local wait (hopeless)
// and queues y for a catch-up; x, older, also preferred a node still alive,
// so it is not. Rekey then moves both blocks to n2, which has one free
// slot. Both wait for n2 at the data-local level again (Rekey restores the
// wait), and the slot must go to the oldest: "A slot ... goes first to the
// oldest queued task that prefers that node" (doc.go, "Who gets a freed
// slot") and "Re-keyed tasks keep their order among the tasks waiting for
// a node or a rack: oldest (first submitted) first" (Rekey's doc).
//
// Was (found by a review): catch-up walked p.leveled in the order tasks
// were appended (y by hopeless first, then the re-keyed tasks), so y,
// younger, took n2 and x kept waiting. Fixed: Rekey marks the new
// preferred nodes that have a free slot dirty, so catch-up serves their
// waiting lists (merged by submission order) first. (The scheduler was
// not affected: its SetNodes marks every node with a free slot dirty.)
func TestRekeyOldestFirstAfterOwnerLeaves(t *testing.T) {
	w := 10 * time.Second
	p := newPlacer(t, placement.Config{},
		placement.Node{ID: "n1", Rack: "r1", Slots: 1},
		placement.Node{ID: "n4", Rack: "r1", Slots: 1},
		placement.Node{ID: "n2", Rack: "r2", Slots: 1})
	for _, n := range []string{"n1", "n4"} {
		if _, placed, err := p.Submit(placement.Task{Job: "j", ID: "busy-" + n, Prefer: []string{n}, Wait: w}, t0); err != nil || !placed {
			t.Fatalf("submit busy-%s: placed %v, err %v", n, placed, err)
		}
	}
	// x (older) prefers n1 and n4, y (younger) only n1; both busy, so both
	// wait (n2's slot is free but neither prefers n2 yet).
	for _, tk := range []placement.Task{
		{Job: "j", ID: "x", Prefer: []string{"n1", "n4"}, Wait: w},
		{Job: "j", ID: "y", Prefer: []string{"n1"}, Wait: w},
	} {
		if _, placed, err := p.Submit(tk, t0); err != nil || placed {
			t.Fatalf("submit %s: placed %v, err %v; want queued", tk.ID, placed, err)
		}
	}
	if as := p.Advance(t0); len(as) != 0 {
		t.Fatalf("Advance placed %+v, want nothing", as)
	}
	// n1 leaves the ring; then the new ring's lists (Rekey's doc: "Call it
	// after SetNodes (or UpsertNode/RemoveNode)").
	now := t0.Add(time.Second)
	p.RemoveNode("n1", now)
	n, err := p.Rekey([]placement.Rekey{
		{Job: "j", ID: "x", Prefer: []string{"n2"}},
		{Job: "j", ID: "y", Prefer: []string{"n2"}},
	}, now)
	if err != nil || n != 2 {
		t.Fatalf("Rekey = %d, %v; want 2, nil", n, err)
	}
	as := p.Advance(now)
	if err := p.Verify(); err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].Task != "x" || as[0].Node != "n2" || as[0].Locality != placement.DataLocal {
		t.Fatalf("after the ring change Advance placed %s; want x (submitted first) on n2 DATA_LOCAL, y still waiting", fmtAssignments(as))
	}
}

// TestRekeyListedTwiceLastWins: Rekey's doc says "when a task is
// listed twice the last update wins" and that it "returns how many tasks
// changed list". Listing x first with [n2] and then with its own list [n1]
// must therefore be the same as listing it once with [n1]: a list equal to
// the task's, ignored (0 changed, ladder untouched).
//
// Here n1, x's only preferred node, drains at 1s, which ends x's data-local
// wait then (hopeless): rack level from 1s, anywhere from 11s. Was (found
// by a review): the first update restored the data-local wait (to 10s) and
// the second ended it again "now" (4s), so x went anywhere at 14s instead
// of 11s, and Rekey reported 1 task changed. Fixed: Rekey keeps only the
// last update per task and compares that one with the task's list. (The
// scheduler never lists a task twice.)
func TestRekeyListedTwiceLastWins(t *testing.T) {
	w := 10 * time.Second
	p := newPlacer(t, placement.Config{},
		placement.Node{ID: "n1", Rack: "r1", Slots: 1},
		placement.Node{ID: "n2", Rack: "r2", Slots: 1},
		placement.Node{ID: "n3", Rack: "r1", Slots: 1}) // busy: the rack level is there
	for _, n := range []string{"n1", "n2", "n3"} {
		if _, placed, err := p.Submit(placement.Task{Job: "j", ID: "busy-" + n, Prefer: []string{n}, Wait: w}, t0); err != nil || !placed {
			t.Fatalf("submit busy-%s: placed %v, err %v", n, placed, err)
		}
	}
	if _, placed, err := p.Submit(placement.Task{Job: "j", ID: "x", Prefer: []string{"n1"}, Wait: w}, t0); err != nil || placed {
		t.Fatalf("submit x: placed %v, err %v; want queued", placed, err)
	}
	mustUpsert(t, p, placement.Node{ID: "n1", Rack: "r1", Slots: 1, State: placement.Draining}, t0.Add(time.Second))
	p.Advance(t0.Add(time.Second))
	before, ok := p.NextDeadline()
	if !ok || !before.Equal(t0.Add(11*time.Second)) {
		t.Fatalf("x's next step at %v (%v), want t0+11s (rack level from 1s, when n1 drained)", before.Sub(t0), ok)
	}
	now := t0.Add(4 * time.Second)
	n, err := p.Rekey([]placement.Rekey{
		{Job: "j", ID: "x", Prefer: []string{"n2"}},
		{Job: "j", ID: "x", Prefer: []string{"n1"}}, // the last update: x's own list
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	p.Advance(now)
	if err := p.Verify(); err != nil {
		t.Fatal(err)
	}
	after, _ := p.NextDeadline()
	if n != 0 || !after.Equal(before) {
		t.Errorf("Rekey listing x with [n2] then its own [n1] = %d changed, next step at t0+%v; want 0 changed and the step kept at t0+%v (the last update wins, and it equals x's list)",
			n, after.Sub(t0), before.Sub(t0))
	}
}

func fmtAssignments(as []placement.Assignment) string {
	s := ""
	for _, a := range as {
		s += fmt.Sprintf("[%s on %s %v owner %s] ", a.Task, a.Node, a.Locality, a.Owner)
	}
	if s == "" {
		return "nothing"
	}
	return s
}
