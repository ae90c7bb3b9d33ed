package placement

import (
	"errors"
	"fmt"
	"time"
)

// Verify checks the placer's invariants and returns the first violation
// found. It walks every node and task (O(nodes + tasks)); tests and the
// simulator call it after every step. The invariants:
//
//   - no node runs more tasks than its slots, except tasks it was already
//     running when its slots were lowered (then it takes none until below);
//   - every running task is on a member node that is alive or draining;
//   - the free-slot indexes hold exactly the alive member nodes with a free
//     slot, and each rack counts the nodes that can take tasks; the queue indexes hold exactly the queued tasks at their level;
//   - counters add up: per level placed = completed + running + lost, the
//     running and queued gauges match the tasks, and the jobs sum to the
//     global counters (while no job was forgotten and nothing imported);
//   - work conservation, once caught up (Advance(now) was called and no
//     deadline is due): no queued task has a free slot its level allows.
func (p *Placer) Verify() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	alive := 0
	for _, n := range p.nodeList {
		if n.member && n.state == Alive {
			alive += n.slots
		}
		if n.used != n.running.n {
			bad("node %s: used %d, running list %d", n.id, n.used, n.running.n)
		}
		if n.used > n.slots && !n.over {
			bad("node %s: %d tasks running on %d slots", n.id, n.used, n.slots)
		}
		if n.used > 0 && (!n.member || n.state == Dead) {
			bad("node %s: %d tasks running on a dead or removed node", n.id, n.used)
		}
		inFree := n.freePos >= 0 && int(n.freePos) < len(p.free.nodes) && p.free.nodes[n.freePos] == n
		if inFree != n.takes() || (n.freePos >= 0) != inFree {
			bad("node %s: in free index %v, takes tasks %v", n.id, inFree, n.takes())
		}
		if n.rack != nil {
			inRack := n.rackPos >= 0 && int(n.rackPos) < len(n.rack.free.nodes) && n.rack.free.nodes[n.rackPos] == n
			if inRack != n.takes() {
				bad("node %s: in rack %s free index %v, takes tasks %v", n.id, n.rack.name, inRack, n.takes())
			}
		}
	}
	if alive != p.aliveSlots {
		bad("alive slots %d, counted %d", p.aliveSlots, alive)
	}
	usable := map[*rack]int{}
	for _, n := range p.nodeList {
		if n.usable() && n.rack != nil {
			usable[n.rack]++
		}
	}
	for _, r := range p.racks {
		if r.usable != usable[r] {
			bad("rack %s: %d usable nodes counted, %d are", r.name, r.usable, usable[r])
		}
	}
	if len(p.free.nodes) != countFree(p.nodeList) {
		bad("free index has %d nodes, %d take tasks", len(p.free.nodes), countFree(p.nodeList))
	}

	caughtUp := len(p.dirty) == 0 && len(p.leveled) == 0
	if len(p.outbox) != len(p.outTask) {
		bad("outbox has %d assignments for %d tasks", len(p.outbox), len(p.outTask))
	}
	pending := 0
	for i, t := range p.outTask {
		if !t.pending || t.state != stateRunning || i >= len(p.outbox) || p.outbox[i].Task != t.key.id || p.outbox[i].Job != t.key.job {
			bad("outbox entry %d (task %v) is not a pending placement", i, t.key)
		}
	}
	// The deadline queue: the list sorted, the heap ordered, each holding
	// queued tasks only (each task's membership is checked below); none due
	// once caught up.
	var prev *task
	for l := p.steps.list.root.next; p.steps.list.n > 0 && l != &p.steps.list.root; l = l.next {
		if t := l.t; t.state != stateQueued || t.heapIdx != 0 || (prev != nil && stepsBefore(t, prev)) {
			bad("deadline list: task %v (state %d, heap index %d) out of place", t.key, t.state, t.heapIdx)
		}
		prev = l.t
	}
	for i, t := range p.steps.heap {
		if int(t.heapIdx) != i+1 || t.state != stateQueued || t.dlLink.linked() || (i > 0 && p.steps.heap.less(i, (i-1)/2)) {
			bad("deadline heap: task %v (state %d) at %d, heap index %d, out of place", t.key, t.state, i, t.heapIdx)
		}
	}
	if t, ok := p.steps.min(); ok && t.nextAt <= p.nowNS {
		caughtUp = false
	}
	var running [NumLocalities]int64
	queued, inHeap, inAny := 0, 0, 0
	ntasks := 0
	for _, j := range p.jobs {
		j.vRunning, j.vQueued = 0, 0
	}
	for slot, e := range p.tasks.slots {
		t := e.t
		if e.hash == 0 {
			if t != nil {
				bad("task index slot %d: empty with a task", slot)
			}
			continue
		}
		ntasks++
		if t == nil {
			bad("task index slot %d: no task", slot)
			continue
		}
		k := t.key
		if j := p.jobs[k.job]; t.job == nil || t.job != j {
			bad("task %v: job record not indexed", k)
			continue
		}
		if e.hash != t.hash || t.hash != p.tasks.hashOf(t.job, k.id) {
			bad("task %v: indexed at slot %d with hash %#x, its hash %#x", k, slot, e.hash, t.hash)
		}
		if p.tasks.find(t.hash, t.job, k.id) != t {
			bad("task %v: not found by its key", k)
		}
		if t.pending {
			pending++
		}
		switch t.state {
		case stateRunning:
			running[t.loc-1]++
			t.job.vRunning++
			if !t.runLink.linked() || t.node == nil {
				bad("task %v: running but not on a node", k)
			}
		case stateQueued:
			queued++
			t.job.vQueued++
			for i, n := range t.prefer {
				if !t.links[i].linked() {
					bad("task %v: not in waiters of %s", k, n.id)
				}
				if caughtUp && n.takes() {
					bad("task %v: queued while preferred node %s has a free slot", k, n.id)
				}
			}
			wantRack := t.level >= levelRack && t.ownerRack != nil
			if t.rackLink.linked() != wantRack {
				bad("task %v: level %d, in rack queue %v", k, t.level, t.rackLink.linked())
			}
			if t.anyLink.linked() != (t.level == levelOther) {
				bad("task %v: level %d, in any queue %v", k, t.level, t.anyLink.linked())
			}
			if t.anyLink.linked() {
				inAny++
			}
			if _, ok := t.nextStep(); ok != (t.heapIdx > 0 || t.dlLink.linked()) {
				bad("task %v: level %d, in deadline queue %v", k, t.level, !ok)
			} else if ok {
				inHeap++
			}
			if caughtUp && wantRack && len(t.ownerRack.free.nodes) > 0 {
				bad("task %v: waiting at rack level (since %v) while rack %s has a free slot on %s",
					k, time.Unix(0, t.rackAt).UTC(), t.ownerRack.name, t.ownerRack.free.nodes[0].id)
			}
			if caughtUp && t.level == levelOther && len(p.free.nodes) > 0 {
				bad("task %v: waiting at any level (since %v) while %s has a free slot", k, time.Unix(0, t.anyAt).UTC(), p.free.nodes[0].id)
			}
		default:
			bad("task %v: indexed in state %d", k, t.state)
		}
	}
	if p.tasks.n != ntasks || p.tasks.n*4 > len(p.tasks.slots)*3 {
		bad("task index: %d entries, counter %d, %d slots", ntasks, p.tasks.n, len(p.tasks.slots))
	}
	if pending != len(p.outTask) {
		bad("%d tasks pending, outbox holds %d", pending, len(p.outTask))
	}
	if queued != p.queued || int64(queued) != p.global.Queued {
		bad("queued: %d tasks, counter %d, gauge %d", queued, p.queued, p.global.Queued)
	}
	if inHeap != p.steps.len() || inAny != p.anyQ.n {
		bad("deadline queue %d (want %d), any queue %d (want %d)", p.steps.len(), inHeap, p.anyQ.n, inAny)
	}
	var sum Counters
	for name, j := range p.jobs {
		c := [2]int{j.vRunning, j.vQueued}
		if j.active != c[0]+c[1] {
			bad("job %s: active %d, has %d running + %d queued", name, j.active, c[0], c[1])
		}
		if (j.active == 0) != j.inIdle {
			bad("job %s: active %d, idle-listed %v", name, j.active, j.inIdle)
		}
		if j.c.Queued != int64(c[1]) {
			bad("job %s: queued gauge %d, has %d", name, j.c.Queued, c[1])
		}
		for _, l := range Localities {
			if err := j.c.Level(l).check(); err != nil {
				bad("job %s %v: %v", name, l, err)
			}
		}
		addCounters(&sum, j.c)
	}
	for _, l := range Localities {
		g := p.global.Level(l)
		if err := g.check(); err != nil {
			bad("global %v: %v", l, err)
		}
		if g.Running != running[l-1] {
			bad("global %v: running gauge %d, %d tasks running", l, g.Running, running[l-1])
		}
	}
	if p.exact && sum != p.global {
		bad("jobs sum to %+v, global is %+v", sum, p.global)
	}
	return errors.Join(errs...)
}

func countFree(nodes []*node) int {
	n := 0
	for _, x := range nodes {
		if x.takes() {
			n++
		}
	}
	return n
}

func addCounters(dst *Counters, c Counters) {
	for _, l := range Localities {
		dst.Level(l).add(*c.Level(l))
	}
	dst.Queued += c.Queued
}
