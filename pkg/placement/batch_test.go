package placement_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/placement"
)

// maxDataLocal is the reference: Kuhn's augmenting paths over one vertex
// per free slot, the plainest maximum bipartite matching there is.
func maxDataLocal(slots map[string]int, tasks []placement.Task) int {
	var slotNode []string
	for i := range len(slots) {
		id := fmt.Sprintf("n%d", i)
		for range slots[id] {
			slotNode = append(slotNode, id)
		}
	}
	owner := make([]int, len(slotNode))
	for i := range owner {
		owner[i] = -1
	}
	var try func(t int, seen []bool) bool
	try = func(t int, seen []bool) bool {
		for s, id := range slotNode {
			pref := false
			for _, p := range tasks[t].Prefer {
				pref = pref || p == id
			}
			if !pref || seen[s] {
				continue
			}
			seen[s] = true
			if owner[s] < 0 || try(owner[s], seen) {
				owner[s] = t
				return true
			}
		}
		return false
	}
	n := 0
	for t := range tasks {
		if try(t, make([]bool, len(slotNode))) {
			n++
		}
	}
	return n
}

// TestBatchMaximisesDataLocal checks PlaceBatch's matching against the
// brute-force reference on random small instances, including ones where a
// greedy owner-first pass is not optimal.
func TestBatchMaximisesDataLocal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	beatGreedy := 0
	for iter := range 2000 {
		nNodes, nTasks := 1+rng.IntN(6), rng.IntN(12)
		if iter%4 == 0 { // larger instances: longer augmenting paths
			nNodes, nTasks = 1+rng.IntN(20), rng.IntN(60)
		}
		p, err := placement.New(placement.Config{})
		if err != nil {
			t.Fatal(err)
		}
		slots := map[string]int{}
		for i := range nNodes {
			id := fmt.Sprintf("n%d", i)
			slots[id] = 1 + rng.IntN(3) // >= 1: every preferred node is usable, so no task skips its data-local wait
			if _, err := p.UpsertNode(placement.Node{ID: id, Rack: "r", Slots: slots[id]}, time.Unix(0, 0)); err != nil {
				t.Fatal(err)
			}
		}
		if rng.IntN(2) == 0 { // not all slots free: a filler task holds one
			if _, _, err := p.Submit(placement.Task{Job: "fill", ID: "f", Prefer: []string{"n0"}, Wait: time.Hour}, time.Unix(0, 0)); err != nil {
				t.Fatal(err)
			}
		}
		free := map[string]int{}
		for _, n := range p.Nodes() {
			free[n.ID] = n.Slots - n.Used
		}
		var tasks []placement.Task
		for i := range nTasks {
			tk := placement.Task{Job: "j", ID: fmt.Sprintf("t%d", i), Wait: time.Hour}
			for range 1 + rng.IntN(3) {
				tk.Prefer = append(tk.Prefer, fmt.Sprintf("n%d", rng.IntN(nNodes)))
			}
			tasks = append(tasks, tk)
		}
		want := maxDataLocal(free, tasks)
		greedy := 0
		{
			left := map[string]int{}
			for k, v := range free {
				left[k] = v
			}
			for _, tk := range tasks {
				for _, id := range tk.Prefer {
					if left[id] > 0 {
						left[id]--
						greedy++
						break
					}
				}
			}
		}
		if greedy < want {
			beatGreedy++
		}
		as, err := p.PlaceBatch(tasks, time.Unix(0, 0))
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		got := 0
		for _, a := range as {
			if a.Locality != placement.DataLocal {
				t.Fatalf("iter %d: %v placed %v with a 1h wait", iter, a.Task, a.Locality)
			}
			got++
		}
		if got != want {
			t.Fatalf("iter %d: %d tasks placed data-local, maximum is %d (free %v, tasks %v)", iter, got, want, free, tasks)
		}
		if err := p.Verify(); err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
	}
	if beatGreedy == 0 {
		t.Error("no instance where the maximum beats greedy: the test is too easy")
	}
	t.Logf("%d of 2000 instances needed augmenting paths", beatGreedy)
}

// TestBatchLadderWithoutWaits: tasks that may step down at once (Wait 0)
// get a maximum number of DATA_LOCAL placements, then no task goes
// OTHER_LOCAL while its owner's rack still has a free slot, and no task is
// left unplaced while any slot is free.
func TestBatchLadderWithoutWaits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sawRack, sawOther := 0, 0
	for iter := range 1000 {
		nNodes, nRacks, nTasks := 2+rng.IntN(10), 1+rng.IntN(4), rng.IntN(40)
		p, err := placement.New(placement.Config{})
		if err != nil {
			t.Fatal(err)
		}
		rackOf := map[string]string{}
		for i := range nNodes {
			id := fmt.Sprintf("n%d", i)
			rackOf[id] = fmt.Sprintf("r%d", rng.IntN(nRacks))
			if _, err := p.UpsertNode(placement.Node{ID: id, Rack: rackOf[id], Slots: 1 + rng.IntN(3)}, time.Unix(0, 0)); err != nil {
				t.Fatal(err)
			}
		}
		free := map[string]int{}
		total := 0
		for _, n := range p.Nodes() {
			free[n.ID] = n.Slots - n.Used
			total += free[n.ID]
		}
		var tasks []placement.Task
		for i := range nTasks {
			tk := placement.Task{Job: "j", ID: fmt.Sprintf("t%d", i)}
			for range 1 + rng.IntN(2) {
				tk.Prefer = append(tk.Prefer, fmt.Sprintf("n%d", rng.IntN(nNodes)))
			}
			tasks = append(tasks, tk)
		}
		wantDL := maxDataLocal(free, tasks)
		as, err := p.PlaceBatch(tasks, time.Unix(0, 0))
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		if want := min(nTasks, total); len(as) != want {
			t.Fatalf("iter %d: %d of %d tasks placed with %d free slots, want %d", iter, len(as), nTasks, total, want)
		}
		left := maps.Clone(free)
		byLoc := map[placement.Locality]int{}
		for _, a := range as {
			left[a.Node]--
			byLoc[a.Locality]++
			if a.Owner == "" {
				t.Fatalf("iter %d: %+v has no owner", iter, a)
			}
		}
		if byLoc[placement.DataLocal] != wantDL {
			t.Fatalf("iter %d: %d DATA_LOCAL, maximum is %d", iter, byLoc[placement.DataLocal], wantDL)
		}
		for _, a := range as {
			if a.Locality != placement.OtherLocal {
				continue
			}
			for id, n := range left {
				if n > 0 && rackOf[id] == rackOf[a.Owner] {
					t.Fatalf("iter %d: %s went OTHER_LOCAL (to %s) while %s in its owner's rack %s has %d free slots",
						iter, a.Task, a.Node, id, rackOf[a.Owner], n)
				}
			}
		}
		sawRack += byLoc[placement.RackLocal]
		sawOther += byLoc[placement.OtherLocal]
		if err := p.Verify(); err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
	}
	if sawRack == 0 || sawOther == 0 {
		t.Errorf("RACK_LOCAL %d and OTHER_LOCAL %d placements in all: the test never exercised a level", sawRack, sawOther)
	}
	t.Logf("%d RACK_LOCAL and %d OTHER_LOCAL placements checked", sawRack, sawOther)
}
