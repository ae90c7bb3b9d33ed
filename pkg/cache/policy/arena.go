package policy

// nilIdx marks the end of a list and an unused link.
const nilIdx = -1

// node is one resident key. Nodes live in a fixed arena indexed by int32 so a
// policy costs no pointer per key and never allocates after construction.
type node struct {
	key        uint64
	prev, next int32 // neighbours in the node's queue; nilIdx at the ends
	queue      uint8 // which queue holds the node (policy-specific)
}

// arena is a fixed pool of nodes with a free list threaded through next.
type arena struct {
	nodes []node
	free  int32 // head of the free list, nilIdx when full
}

func newArena(n int) arena {
	a := arena{nodes: make([]node, n), free: nilIdx}
	for i := n - 1; i >= 0; i-- {
		a.nodes[i].next = a.free
		a.free = int32(i)
	}
	return a
}

// alloc takes a node off the free list; the caller guarantees one is free.
func (a *arena) alloc(key uint64, queue uint8) int32 {
	i := a.free
	n := &a.nodes[i]
	a.free = n.next
	*n = node{key: key, prev: nilIdx, next: nilIdx, queue: queue}
	return i
}

// release returns node i (already unlinked) to the free list.
func (a *arena) release(i int32) {
	a.nodes[i].next = a.free
	a.free = i
}

// list is an intrusive doubly linked queue over an arena: head is the least
// recently used end (the next victim), tail the most recently used end.
type list struct {
	head, tail int32
	len        int
}

func newList() list { return list{head: nilIdx, tail: nilIdx} }

// pushBack links node i at the MRU end.
func (l *list) pushBack(nodes []node, i int32) {
	n := &nodes[i]
	n.prev, n.next = l.tail, nilIdx
	if l.tail != nilIdx {
		nodes[l.tail].next = i
	} else {
		l.head = i
	}
	l.tail = i
	l.len++
}

// pushFront links node i at the LRU end.
func (l *list) pushFront(nodes []node, i int32) {
	n := &nodes[i]
	n.prev, n.next = nilIdx, l.head
	if l.head != nilIdx {
		nodes[l.head].prev = i
	} else {
		l.tail = i
	}
	l.head = i
	l.len++
}

// unlink removes node i from the list.
func (l *list) unlink(nodes []node, i int32) {
	n := &nodes[i]
	if n.prev != nilIdx {
		nodes[n.prev].next = n.next
	} else {
		l.head = n.next
	}
	if n.next != nilIdx {
		nodes[n.next].prev = n.prev
	} else {
		l.tail = n.prev
	}
	n.prev, n.next = nilIdx, nilIdx
	l.len--
}

// moveToBack makes node i, already in l, the MRU entry.
func (l *list) moveToBack(nodes []node, i int32) {
	if l.tail == i {
		return
	}
	l.unlink(nodes, i)
	l.pushBack(nodes, i)
}
