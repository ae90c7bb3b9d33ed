package node

import (
	"slices"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/ring"
)

func rejoinView(t *testing.T, ms ...membership.Member) *membership.View {
	t.Helper()
	v, err := membership.NewView(ms, ring.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func rejoinMember(id string, st membership.State) membership.Member {
	return membership.Member{NodeMeta: membership.NodeMeta{ID: id, State: st, GRPCAddr: id + ":1", HTTPAddr: id + ":2"}, GossipAddr: id + ":3"}
}

// TestRejoiner: members that vanish while alive are retried until they
// come back or RejoinWindow passes; draining members are not.
func TestRejoiner(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a, b, c := rejoinMember("a", membership.StateAlive), rejoinMember("b", ""), rejoinMember("c", membership.StateDraining)
	r := newRejoiner(rejoinView(t, a, b, c))
	if got := r.due(t0); len(got) != 0 {
		t.Fatalf("nothing lost yet, due %v", got)
	}
	r.observe(rejoinView(t, a), t0) // b (alive, zero state) failed, c drained away
	if got := r.due(t0.Add(time.Second)); !slices.Equal(got, []string{"b:3"}) {
		t.Fatalf("due %v, want [b:3]", got)
	}
	r.observe(rejoinView(t, a, b), t0.Add(2*time.Second)) // b is back
	if got := r.due(t0.Add(3 * time.Second)); len(got) != 0 {
		t.Fatalf("b is back, due %v", got)
	}
	r.observe(rejoinView(t, a), t0.Add(4*time.Second)) // b lost again
	if got := r.due(t0.Add(4*time.Second + RejoinWindow)); !slices.Equal(got, []string{"b:3"}) {
		t.Fatalf("inside the window, due %v", got)
	}
	if got := r.due(t0.Add(5*time.Second + RejoinWindow)); len(got) != 0 {
		t.Fatalf("past the window, due %v", got)
	}
	if got := r.due(t0); len(got) != 0 {
		t.Fatalf("an expired member came back: %v", got)
	}
}

func TestRejoinInterval(t *testing.T) {
	if got := rejoinInterval(membership.LoopbackTuning()); got != membership.LoopbackTuning().GossipToTheDeadTime {
		t.Errorf("loopback: %v", got)
	}
	if got := rejoinInterval(membership.Tuning{}); got != membership.LANTuning().GossipToTheDeadTime {
		t.Errorf("zero tuning: %v", got)
	}
}
