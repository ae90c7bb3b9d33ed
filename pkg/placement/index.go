package placement

import "time"

// This file holds the placer's indexes: an intrusive FIFO list (a task sits
// in several lists at once and leaves all of them in O(1)), an indexed set
// of nodes with free slots, and the queue of level deadlines. The index of
// tasks by id is in taskindex.go.

// link is one membership of a task in a list.
type link struct {
	prev, next *link
	t          *task
}

func (l *link) linked() bool { return l.next != nil }

// list is a FIFO of tasks; the zero value is ready after init.
type list struct {
	root link
	n    int
}

func (q *list) lazyInit() {
	if q.root.next == nil {
		q.root.next = &q.root
		q.root.prev = &q.root
	}
}

func (q *list) pushBack(l *link) {
	q.lazyInit()
	q.insertAfter(q.root.prev, l)
}

// insertAfter links l right after at (a member, or the root).
func (q *list) insertAfter(at, l *link) {
	l.prev = at
	l.next = at.next
	at.next.prev = l
	at.next = l
	q.n++
}

func (q *list) remove(l *link) {
	l.prev.next = l.next
	l.next.prev = l.prev
	l.prev, l.next = nil, nil
	q.n--
}

func (q *list) front() *task {
	if q.n == 0 {
		return nil
	}
	return q.root.next.t
}

// each calls f for every task in FIFO order; f must not modify the list.
func (q *list) each(f func(*task)) {
	if q.n == 0 {
		return
	}
	for l := q.root.next; l != &q.root; l = l.next {
		f(l.t)
	}
}

// nodeSet is an indexed set of nodes with O(1) add, remove and pick. Each
// node stores its position in the global set and in its rack's set.
type nodeSet struct {
	nodes  []*node
	cursor int
	rack   bool // which position field of node this set uses
}

func (s *nodeSet) pos(n *node) *int32 {
	if s.rack {
		return &n.rackPos
	}
	return &n.freePos
}

func (s *nodeSet) add(n *node) {
	p := s.pos(n)
	if *p >= 0 {
		return
	}
	*p = int32(len(s.nodes))
	s.nodes = append(s.nodes, n)
}

func (s *nodeSet) remove(n *node) {
	p := s.pos(n)
	i := *p
	if i < 0 {
		return
	}
	last := len(s.nodes) - 1
	if int(i) != last {
		m := s.nodes[last]
		s.nodes[i] = m
		*s.pos(m) = i
	}
	s.nodes[last] = nil
	s.nodes = s.nodes[:last]
	*p = -1
}

// pick returns a member, rotating through the set so that non-local tasks
// spread over the free nodes; nil if empty.
func (s *nodeSet) pick() *node {
	if len(s.nodes) == 0 {
		return nil
	}
	s.cursor++
	if s.cursor >= len(s.nodes) {
		s.cursor = 0
	}
	return s.nodes[s.cursor]
}

// deadlineQueue orders the queued tasks that have a level step ahead by
// the time of that step, then by submission order (task.nextAt, task.seq).
// A task's step is mostly its submission time plus a wait that is the same
// for most tasks (the service's --locality-wait), so tasks mostly arrive in
// that order. The queue keeps them in a sorted intrusive list (task.dlLink),
// placing each by a scan back from the tail: O(1) in order, at most
// maxDeadlineScan steps; a task that would need a longer scan (another
// wait, a resubmitted task keeping an old first-seen time) goes to a
// min-heap instead. A queued task leaves in O(1) from the list (the common
// case: it is placed before its deadline) and O(log n) from the heap. The
// earliest step is the earlier of the list's head and the heap's top, and
// both are ordered on the same keys, so tasks leave in exactly (nextAt,
// seq) order whichever holds them. A task is in at most one of them:
// dlLink linked, or heapIdx > 0.
type deadlineQueue struct {
	list list
	heap deadlineHeap
}

// maxDeadlineScan bounds the scan that places a task in the sorted list.
const maxDeadlineScan = 8

// stepsBefore reports whether a's step sorts before b's.
func stepsBefore(a, b *task) bool {
	if a.nextAt != b.nextAt {
		return a.nextAt < b.nextAt
	}
	return a.seq < b.seq
}

func (q *deadlineQueue) len() int { return q.list.n + len(q.heap) }

// push adds t, keyed by t.nextAt and t.seq; t must not be in the queue.
func (q *deadlineQueue) push(t *task) {
	q.list.lazyInit()
	at := q.list.root.prev
	for range maxDeadlineScan {
		if at == &q.list.root || !stepsBefore(t, at.t) {
			q.list.insertAfter(at, &t.dlLink)
			t.dlLink.t = t
			return
		}
		at = at.prev
	}
	q.heap.push(t)
}

// remove takes t out of the queue, if it is in it.
func (q *deadlineQueue) remove(t *task) {
	if t.dlLink.linked() {
		q.list.remove(&t.dlLink)
		return
	}
	q.heap.remove(t)
}

// min returns the task with the earliest step; ok is false when the queue
// is empty.
func (q *deadlineQueue) min() (t *task, ok bool) {
	t = q.list.front()
	if len(q.heap) > 0 && (t == nil || stepsBefore(q.heap[0], t)) {
		t = q.heap[0]
	}
	return t, t != nil
}

// deadlineHeap is a binary min-heap of tasks on (nextAt, seq). A task's
// heapIdx is its position + 1, 0 when it is not in the heap (so a zeroed
// task record needs no initialisation).
type deadlineHeap []*task

func (h deadlineHeap) less(i, j int) bool { return stepsBefore(h[i], h[j]) }

func (h deadlineHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = int32(i) + 1
	h[j].heapIdx = int32(j) + 1
}

func (h *deadlineHeap) push(t *task) {
	t.heapIdx = int32(len(*h)) + 1
	*h = append(*h, t)
	h.up(len(*h) - 1)
}

func (h *deadlineHeap) remove(t *task) {
	i := int(t.heapIdx) - 1
	if i < 0 {
		return
	}
	last := len(*h) - 1
	if i != last {
		h.swap(i, last)
	}
	(*h)[last] = nil
	*h = (*h)[:last]
	t.heapIdx = 0
	if i != last {
		if !h.down(i) {
			h.up(i)
		}
	}
}

func (h deadlineHeap) up(j int) {
	for {
		i := (j - 1) / 2
		if j <= 0 || !h.less(j, i) {
			return
		}
		h.swap(i, j)
		j = i
	}
}

func (h deadlineHeap) down(i0 int) bool {
	i, n := i0, len(h)
	for {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && h.less(r, j) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

// firstSeen remembers the first-seen time of cancelled queued tasks for a
// bounded time and count, so a resubmission keeps its place on the ladder.
type firstSeen struct {
	ttl  time.Duration
	max  int
	m    map[taskKey]fsEntry
	fifo []fsItem
	head int
	seq  uint64
}

type fsEntry struct {
	at  time.Time
	seq uint64
}

type fsItem struct {
	key   taskKey
	seq   uint64
	added time.Time
}

func (f *firstSeen) remember(k taskKey, at, now time.Time) {
	if f.m == nil {
		f.m = make(map[taskKey]fsEntry)
	}
	f.seq++
	f.m[k] = fsEntry{at: at, seq: f.seq}
	f.fifo = append(f.fifo, fsItem{key: k, seq: f.seq, added: now})
	if len(f.fifo)-f.head > 2*f.max+64 {
		// Mostly stale items (taken keys): keep only the live ones.
		live := f.fifo[:0]
		for _, it := range f.fifo[f.head:] {
			if e, ok := f.m[it.key]; ok && e.seq == it.seq {
				live = append(live, it)
			}
		}
		clear(f.fifo[len(live):])
		f.fifo = live
		f.head = 0
	}
	f.prune(now)
}

func (f *firstSeen) prune(now time.Time) {
	for f.head < len(f.fifo) {
		it := f.fifo[f.head]
		if len(f.m) <= f.max && now.Sub(it.added) < f.ttl {
			break
		}
		if e, ok := f.m[it.key]; ok && e.seq == it.seq {
			delete(f.m, it.key)
		}
		f.fifo[f.head] = fsItem{}
		f.head++
	}
	if f.head > 64 && f.head*2 > len(f.fifo) {
		n := copy(f.fifo, f.fifo[f.head:])
		clear(f.fifo[n:])
		f.fifo = f.fifo[:n]
		f.head = 0
	}
}

// take returns and forgets the remembered first-seen time of k.
func (f *firstSeen) take(k taskKey, now time.Time) (time.Time, bool) {
	if len(f.m) == 0 {
		return time.Time{}, false
	}
	f.prune(now)
	e, ok := f.m[k]
	if !ok {
		return time.Time{}, false
	}
	delete(f.m, k)
	return e.at, true
}
