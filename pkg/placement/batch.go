package placement

import (
	"fmt"
	"time"
)

// PlaceBatch places a whole stage at once at time now and returns the
// assignments made, in input order. Tasks not placed are queued exactly as
// by Submit, and later Advance calls place them.
//
// Decision: first a maximum b-matching of tasks to their preferred nodes,
// each node's capacity being its free slots (Hopcroft–Karp style augmenting
// paths over the bipartite task → preferred node graph), so the number of
// DATA_LOCAL placements is the largest the free slots allow; then tasks whose
// ladder already allows it (Wait <= 0, or a resubmitted task whose first-seen
// time is old enough) take free slots of their owner's rack, then any free
// slot. The rest queue.
//
// A batch larger than the free slots therefore queues its tail. The service
// either waits for their assignments (Advance) or gives up on them and calls
// Cancel, answering "deferred": the placer remembers their first-seen times
// (Config.FirstSeenTTL), so when the client resubmits them their waits go on
// from the first submission instead of restarting.
//
// Like Submit, PlaceBatch first catches up with now; assignments of
// previously queued tasks made on the way are returned by the next Advance.
// The call is all-or-nothing: errors ErrInvalidTask, ErrDuplicateTask,
// ErrNoCapacity, or ErrQueueFull (when the tasks that cannot fit in the free
// slots would take the queue past Config.MaxQueued) leave the placer as it
// was.
func (p *Placer) PlaceBatch(in []Task, now time.Time) ([]Assignment, error) {
	now = p.clock(now)
	if len(in) == 0 {
		return nil, nil
	}
	for i := range in {
		if err := checkTask(&in[i]); err != nil {
			return nil, err
		}
	}
	if p.aliveSlots == 0 {
		return nil, ErrNoCapacity
	}
	freeSlots := 0
	for _, n := range p.free.nodes {
		freeSlots += n.slots - n.used
	}
	if over := len(in) - freeSlots; over > 0 && p.queued+over > p.cfg.MaxQueued {
		return nil, fmt.Errorf("%w: %d tasks queued, batch would add at least %d", ErrQueueFull, p.queued, over)
	}
	// Admit the tasks (indexed, holding their jobs active, neither queued
	// nor running until placed or queued below); this also finds
	// duplicates, within the batch too. Undo on error.
	// Jobs the batch names for the first time are created without
	// forgetting idle ones (Config.MaxJobs) until the batch is accepted: a
	// refused batch leaves no job behind and forgets none.
	p.reserve(len(in))
	p.tasks.grow(len(in))
	ts := make([]*task, len(in))
	var created []*jobState
	for i := range in {
		j := p.findJob(in[i].Job)
		if j == nil {
			j = p.newJob(in[i].Job)
			created = append(created, j)
		}
		h := p.tasks.hashOf(j, in[i].ID)
		if dup := p.tasks.find(h, j, in[i].ID); dup != nil {
			twice := dup.state == stateFree // admitted above
			for _, t := range ts[:i] {
				p.forget(t)
			}
			for _, j := range created {
				p.dropJob(j)
			}
			if twice {
				return nil, fmt.Errorf("%w: job %q task %q listed twice in the batch", ErrDuplicateTask, in[i].Job, in[i].ID)
			}
			return nil, fmt.Errorf("%w: job %q task %q", ErrDuplicateTask, in[i].Job, in[i].ID)
		}
		t := p.alloc()
		t.key = taskKey{in[i].Job, in[i].ID}
		p.admit(t, j, h)
		ts[i] = t
	}
	if created != nil {
		p.evictIdle(p.cfg.MaxJobs) // the batch's own jobs are active
	}
	p.catchUp(now)
	for i, t := range ts {
		p.newTask(t, &in[i], now)
	}
	b := &p.b
	b.matchData(ts)

	res := make([]Assignment, len(in))
	done := make([]bool, len(in))
	// DATA_LOCAL: the matching.
	for i, t := range ts {
		if v := b.match[i]; v >= 0 {
			p.place(t, b.nodes[v], now)
			t.assignment(&res[i])
			done[i] = true
		}
	}
	// RACK_LOCAL, for tasks whose ladder allows it.
	for i, t := range ts {
		if !done[i] && t.level >= levelRack && t.ownerRack != nil {
			if n := t.ownerRack.free.pick(); n != nil {
				p.place(t, n, now)
				t.assignment(&res[i])
				done[i] = true
			}
		}
	}
	// Anywhere, for tasks at the last level.
	for i, t := range ts {
		if !done[i] && t.level == levelOther {
			if n := p.free.pick(); n != nil {
				p.place(t, n, now)
				t.assignment(&res[i])
				done[i] = true
			}
		}
	}
	out := res[:0]
	for i, t := range ts {
		if done[i] {
			out = append(out, res[i])
		} else {
			p.enqueue(t)
		}
	}
	clear(res[len(out):])
	b.reset()
	return out, nil
}

// batchScratch holds the matching's arrays, reused across batches. Nodes
// are numbered locally (node.bIdx, valid while node.bEpoch == epoch).
//
// The matching works on nodes rather than tasks: after a greedy start, the
// tasks matched to a node u that also prefer a node v form an edge u -> v
// whose capacity is their count (moving one of them from u to v frees a
// slot on u). An augmenting path runs from a node preferred by an unmatched
// task, along such edges, to a node with a free slot; shifting one task
// along each edge lets the unmatched task in. The graph has as many
// vertices as nodes, whatever the number of tasks, so each phase (a BFS
// layering, then Dinic-style depth-first augmentation along the layers)
// costs O(nodes + distinct node pairs), and the result is a maximum
// b-matching (tested against brute force).
type batchScratch struct {
	epoch uint32
	nodes []*node // local index -> node
	cap   []int32 // free slots
	load  []int32 // tasks matched
	head  []int32 // first task matched to a node (list through next/prev)

	adjStart []int32 // task i's preferred usable nodes: adj[adjStart[i]:adjStart[i+1]]
	adj      []int32
	match    []int32 // task -> local node, -1 unmatched
	next     []int32
	prev     []int32

	// The node graph: edge e goes to eTo[e] and carries eCnt[e] tasks.
	edges map[uint64]int32
	eTo   []int32
	eCnt  []int32
	out   [][]int32 // node -> its edges
	level []int32
	iter  []int32 // current arc of each node in a phase
	queue []int32
	unm   []int32 // unmatched tasks with a usable preferred node

	phases int // augmenting phases of the last batch (for tests)
}

func (b *batchScratch) reset() {
	clear(b.nodes)
	b.nodes = b.nodes[:0]
}

func fill(s []int32, n int, v int32) []int32 {
	if cap(s) < n {
		s = make([]int32, n)
	}
	s = s[:n]
	for i := range s {
		s[i] = v
	}
	return s
}

// matchData computes a maximum b-matching of ts to their preferred nodes
// that can take tasks now, with capacity = free slots; b.match holds it.
func (b *batchScratch) matchData(ts []*task) {
	b.epoch++
	b.nodes = b.nodes[:0]
	b.cap = b.cap[:0]
	b.adj = b.adj[:0]
	b.adjStart = b.adjStart[:0]
	for _, t := range ts {
		b.adjStart = append(b.adjStart, int32(len(b.adj)))
		for _, n := range t.prefer {
			if !n.takes() {
				continue
			}
			if n.bEpoch != b.epoch {
				n.bEpoch = b.epoch
				n.bIdx = int32(len(b.nodes))
				b.nodes = append(b.nodes, n)
				b.cap = append(b.cap, int32(n.slots-n.used))
			}
			b.adj = append(b.adj, n.bIdx)
		}
	}
	b.adjStart = append(b.adjStart, int32(len(b.adj)))
	b.phases = 0
	nt, nn := len(ts), len(b.nodes)
	b.match = fill(b.match, nt, -1)
	b.next = fill(b.next, nt, -1)
	b.prev = fill(b.prev, nt, -1)
	b.load = fill(b.load, nn, 0)
	b.head = fill(b.head, nn, -1)

	// Greedy start, in two passes: every task to its first usable
	// preferred node (the owner, which caches the split's pages) while it
	// has room; then the rest to the replica with the most room left. The
	// augmenting phases then move tasks to replicas only where that places
	// more tasks data-local.
	b.unm = b.unm[:0]
	for i := range int32(nt) {
		if ps := b.prefs(i); len(ps) > 0 && b.load[ps[0]] < b.cap[ps[0]] {
			b.link(i, ps[0])
		}
	}
	for i := range int32(nt) {
		ps := b.prefs(i)
		if b.match[i] >= 0 || len(ps) == 0 {
			continue
		}
		best, room := int32(-1), int32(0)
		for _, v := range ps[1:] {
			if r := b.cap[v] - b.load[v]; r > room {
				best, room = v, r
			}
		}
		if best >= 0 {
			b.link(i, best)
		} else {
			b.unm = append(b.unm, i)
		}
	}
	spare := int32(0)
	for v := range nn {
		spare += b.cap[v] - b.load[v]
	}
	if len(b.unm) == 0 || spare == 0 {
		return
	}
	b.buildGraph()
	for len(b.unm) > 0 && spare > 0 && b.layer() {
		b.phases++
		n := 0
		for _, i := range b.unm {
			for _, s := range b.prefs(i) {
				if b.level[s] == 0 && b.augment(s) {
					b.link(i, s)
					b.addEdges(i, s, 1)
					n++
					break
				}
			}
		}
		if n == 0 {
			break
		}
		spare -= int32(n)
		left := b.unm[:0]
		for _, i := range b.unm {
			if b.match[i] < 0 {
				left = append(left, i)
			}
		}
		b.unm = left
	}
}

func (b *batchScratch) prefs(i int32) []int32 { return b.adj[b.adjStart[i]:b.adjStart[i+1]] }

// link matches task i to node v; unlink undoes it.
func (b *batchScratch) link(i, v int32) {
	b.match[i] = v
	b.prev[i] = -1
	b.next[i] = b.head[v]
	if b.head[v] >= 0 {
		b.prev[b.head[v]] = i
	}
	b.head[v] = i
	b.load[v]++
}

func (b *batchScratch) unlink(i int32) {
	v := b.match[i]
	if b.prev[i] >= 0 {
		b.next[b.prev[i]] = b.next[i]
	} else {
		b.head[v] = b.next[i]
	}
	if b.next[i] >= 0 {
		b.prev[b.next[i]] = b.prev[i]
	}
	b.match[i] = -1
	b.load[v]--
}

func (b *batchScratch) buildGraph() {
	nn := len(b.nodes)
	if b.edges == nil {
		b.edges = make(map[uint64]int32)
	}
	clear(b.edges)
	b.eTo = b.eTo[:0]
	b.eCnt = b.eCnt[:0]
	if cap(b.out) < nn {
		b.out = make([][]int32, nn)
	}
	b.out = b.out[:nn]
	for v := range b.out {
		b.out[v] = b.out[v][:0]
	}
	for i := range int32(len(b.match)) {
		if u := b.match[i]; u >= 0 {
			b.addEdges(i, u, 1)
		}
	}
}

// addEdges adds d (+1 or -1) to the edges u -> w for the other preferred
// nodes w of task i, which sits on u.
func (b *batchScratch) addEdges(i, u, d int32) {
	for _, w := range b.prefs(i) {
		if w == u {
			continue
		}
		k := uint64(u)<<32 | uint64(w)
		e, ok := b.edges[k]
		if !ok {
			e = int32(len(b.eTo))
			b.edges[k] = e
			b.eTo = append(b.eTo, w)
			b.eCnt = append(b.eCnt, 0)
			b.out[u] = append(b.out[u], e)
		}
		b.eCnt[e] += d
	}
}

// layer runs a BFS over the node graph from the nodes preferred by
// unmatched tasks (level 0), up to the first level holding a node with a
// free slot. It reports whether one was reached.
func (b *batchScratch) layer() bool {
	nn := len(b.nodes)
	b.level = fill(b.level, nn, -1)
	b.iter = fill(b.iter, nn, 0)
	b.queue = b.queue[:0]
	for _, i := range b.unm {
		for _, v := range b.prefs(i) {
			if b.level[v] < 0 {
				b.level[v] = 0
				b.queue = append(b.queue, v)
			}
		}
	}
	limit := int32(-1)
	for q := 0; q < len(b.queue); q++ {
		u := b.queue[q]
		if limit >= 0 && b.level[u] >= limit {
			break
		}
		if b.load[u] < b.cap[u] {
			limit = b.level[u]
			continue
		}
		for _, e := range b.out[u] {
			if v := b.eTo[e]; b.eCnt[e] > 0 && b.level[v] < 0 {
				b.level[v] = b.level[u] + 1
				b.queue = append(b.queue, v)
			}
		}
	}
	return limit >= 0
}

// augment makes room for one more task on node u, shifting tasks along a
// layered path to a node with a free slot; it reports success.
func (b *batchScratch) augment(u int32) bool {
	if b.load[u] < b.cap[u] {
		return true
	}
	for ; b.iter[u] < int32(len(b.out[u])); b.iter[u]++ {
		e := b.out[u][b.iter[u]]
		v := b.eTo[e]
		if b.eCnt[e] <= 0 || b.level[v] != b.level[u]+1 || !b.augment(v) {
			continue
		}
		// Move one task on u that also prefers v.
		for i := b.head[u]; i >= 0; i = b.next[i] {
			if !containsNode(b.prefs(i), v) {
				continue
			}
			b.addEdges(i, u, -1)
			b.unlink(i)
			b.link(i, v)
			b.addEdges(i, v, 1)
			return true
		}
		// Unreachable while the edge counts are right; should they drift,
		// repair the count rather than fail the batch (v has room now).
		b.eCnt[e] = 0
	}
	b.level[u] = -2 // dead end for this phase
	return false
}

func containsNode(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
