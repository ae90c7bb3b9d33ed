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
	seen := make(map[taskKey]struct{}, len(in))
	for i := range in {
		if err := checkTask(&in[i]); err != nil {
			return nil, err
		}
		k := taskKey{in[i].Job, in[i].ID}
		if _, dup := seen[k]; dup {
			return nil, fmt.Errorf("%w: job %q task %q listed twice in the batch", ErrDuplicateTask, k.job, k.id)
		}
		if _, dup := p.tasks[k]; dup {
			return nil, fmt.Errorf("%w: job %q task %q", ErrDuplicateTask, k.job, k.id)
		}
		seen[k] = struct{}{}
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
	p.catchUp(now)

	ts := make([]*task, len(in))
	for i := range in {
		ts[i] = p.newTask(&in[i], now)
	}
	b := &p.b
	b.matchData(ts)

	res := make([]Assignment, len(in))
	done := make([]bool, len(in))
	// DATA_LOCAL: the matching.
	for i, t := range ts {
		if v := b.match[i]; v >= 0 {
			res[i] = p.place(t, b.nodes[v], now)
			done[i] = true
		}
	}
	// RACK_LOCAL, for tasks whose ladder allows it.
	for i, t := range ts {
		if !done[i] && t.level >= levelRack && t.ownerRack != nil {
			if n := t.ownerRack.free.pick(); n != nil {
				res[i] = p.place(t, n, now)
				done[i] = true
			}
		}
	}
	// Anywhere, for tasks at the last level.
	for i, t := range ts {
		if !done[i] && t.level == levelOther {
			if n := p.free.pick(); n != nil {
				res[i] = p.place(t, n, now)
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
	distT    []int32
	distN    []int32
	queue    []int32
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
	nt, nn := len(ts), len(b.nodes)
	b.match = fill(b.match, nt, -1)
	b.next = fill(b.next, nt, -1)
	b.prev = fill(b.prev, nt, -1)
	b.load = fill(b.load, nn, 0)
	b.head = fill(b.head, nn, -1)

	// Greedy start: owner first, else the first replica with room.
	free := 0
	for i := range nt {
		for _, v := range b.adj[b.adjStart[i]:b.adjStart[i+1]] {
			if b.load[v] < b.cap[v] {
				b.assign(int32(i), v)
				break
			}
		}
		if b.match[i] < 0 && b.adjStart[i+1] > b.adjStart[i] {
			free++
		}
	}
	// Augment along shortest alternating paths until none is left.
	for free > 0 && b.bfs() {
		n := 0
		for i := range nt {
			if b.match[i] < 0 && b.distT[i] == 0 && b.dfs(int32(i)) {
				n++
			}
		}
		if n == 0 {
			break
		}
		free -= n
	}
}

func (b *batchScratch) assign(i, v int32) {
	if old := b.match[i]; old >= 0 {
		if b.prev[i] >= 0 {
			b.next[b.prev[i]] = b.next[i]
		} else {
			b.head[old] = b.next[i]
		}
		if b.next[i] >= 0 {
			b.prev[b.next[i]] = b.prev[i]
		}
		b.load[old]--
	}
	b.match[i] = v
	b.prev[i] = -1
	b.next[i] = b.head[v]
	if b.head[v] >= 0 {
		b.prev[b.head[v]] = i
	}
	b.head[v] = i
	b.load[v]++
}

// bfs layers the graph from the unmatched tasks (layer 0); tasks get even
// layers, nodes odd ones. It reports whether a node with room is reachable.
func (b *batchScratch) bfs() bool {
	nt := len(b.match)
	b.distT = fill(b.distT, nt, -1)
	b.distN = fill(b.distN, len(b.nodes), -1)
	b.queue = b.queue[:0]
	for i := range nt {
		if b.match[i] < 0 && b.adjStart[i+1] > b.adjStart[i] {
			b.distT[i] = 0
			b.queue = append(b.queue, int32(i))
		}
	}
	const inf = int32(1 << 30)
	limit := inf
	for q := 0; q < len(b.queue); q++ {
		i := b.queue[q]
		d := b.distT[i]
		if d+1 > limit {
			break
		}
		for _, v := range b.adj[b.adjStart[i]:b.adjStart[i+1]] {
			if v == b.match[i] || b.distN[v] >= 0 {
				continue
			}
			b.distN[v] = d + 1
			if b.load[v] < b.cap[v] {
				limit = d + 1
				continue
			}
			for u := b.head[v]; u >= 0; u = b.next[u] {
				if b.distT[u] < 0 {
					b.distT[u] = d + 2
					b.queue = append(b.queue, u)
				}
			}
		}
	}
	return limit != inf
}

// dfs looks for an augmenting path from task i along the layers; on success
// it shifts the matching along the path.
func (b *batchScratch) dfs(i int32) bool {
	want := b.distT[i] + 1
	for _, v := range b.adj[b.adjStart[i]:b.adjStart[i+1]] {
		if b.distN[v] != want {
			continue
		}
		if b.load[v] < b.cap[v] {
			b.assign(i, v)
			return true
		}
		for u := b.head[v]; u >= 0; u = b.next[u] {
			if b.distT[u] == want+1 && b.dfs(u) {
				b.assign(i, v)
				return true
			}
		}
		b.distN[v] = -2 // dead end for this phase
	}
	b.distT[i] = -2
	return false
}
