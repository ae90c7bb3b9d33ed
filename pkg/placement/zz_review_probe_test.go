package placement_test

import (
	"errors"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/placement"
)

// Rack level that cannot be satisfied: the owner is alone in its rack.
func TestReviewProbeRackAlone(t *testing.T) {
	p := newPlacer(t, placement.Config{},
		placement.Node{ID: "n1", Rack: "r1", Slots: 1},
		placement.Node{ID: "n2", Rack: "r2", Slots: 1})
	w := 10 * time.Second
	if _, placed, err := p.Submit(placement.Task{Job: "j", ID: "a", Prefer: []string{"n1"}, Wait: w}, t0); err != nil || !placed {
		t.Fatal(placed, err)
	}
	if _, placed, err := p.Submit(placement.Task{Job: "j", ID: "b", Prefer: []string{"n1"}, Wait: w}, t0); err != nil || placed {
		t.Fatal(placed, err)
	}
	as := p.Advance(t0.Add(w))
	t.Logf("at s+w: %+v", as)
	if len(as) == 0 {
		at, _ := p.NextDeadline()
		t.Errorf("task b waits at a rack level r1 has no other node for (next step at +%v)", at.Sub(t0))
	}
}

// PlaceBatch refused as duplicate leaves a job behind.
func TestReviewProbeBatchDupPhantomJob(t *testing.T) {
	p := newPlacer(t, placement.Config{MaxJobs: 1}, placement.Node{ID: "n1", Slots: 4})
	if _, _, err := p.Submit(placement.Task{Job: "old", ID: "t"}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete("old", "t", placement.Outcome{Bytes: 5}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Submit(placement.Task{Job: "x", ID: "t"}, t0); err != nil {
		t.Fatal(err)
	}
	_, err := p.PlaceBatch([]placement.Task{{Job: "new", ID: "a"}, {Job: "x", ID: "t"}}, t0)
	if !errors.Is(err, placement.ErrDuplicateTask) {
		t.Fatal(err)
	}
	if _, err := p.Counters("new"); !errors.Is(err, placement.ErrUnknownJob) {
		t.Errorf("refused batch created job new: %v", err)
	}
	if _, err := p.Counters("old"); err != nil {
		t.Errorf("refused batch forgot job old: %v", err)
	}
}
