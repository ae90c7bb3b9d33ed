package policy

// Queues of the W-TinyLFU policy.
const (
	qWindow uint8 = iota
	qProbation
	qProtected
)

const (
	percentProtected    = 0.80 // share of main given to its protected segment
	admitHashDoSMinFreq = 6    // a candidate this popular wins a lost contest 1 time in 128
	transferPerCall     = 4    // queue transfers per call while a resize catches up
)

// tinyLFU is W-TinyLFU with a window of settable size. New keys enter an LRU
// window; keys leaving the window compete for a place in a segmented-LRU main
// region (probation + protected) against main's LRU victim, and the one the
// frequency sketch says was accessed more often recently stays. A large
// window behaves like LRU (recency workloads), a small one like LFU with scan
// resistance. The default policy sets the window with a tuner (tuner.go);
// the tuner's shadow caches are tinyLFUs with a fixed window.
type tinyLFU struct {
	arena
	idx    table
	freq   *sketch // shared with the tuner's shadows when the tuner samples every key
	counts bool    // Touch increments freq (false when the tuner does it for all)
	window list
	prob   list
	prot   list
	limit  int

	windowMax int // target size of the window; main gets limit-windowMax
	protMax   int // target size of the protected segment

	rng uint64 // SplitMix64 state for the 1-in-128 admission of popular candidates

	tuner *tuner // nil for a fixed window (the tuner's shadows)

	phantoms int // nodes with phantom set: tracked, not stored (after adopt)
}

func newTinyLFU(capacity int, seed uint64, windowFrac float64) *tinyLFU {
	p := &tinyLFU{
		arena:  newArena(capacity + 1),                       // one spare: Insert links before it evicts
		idx:    newTable(capacity, mix64(seed^0x6c6f637573)), // 2 x capacity slots also hold the spare
		freq:   newSketch(capacity, mix64(seed^0x736b65746368)),
		counts: true,
		window: newList(),
		prob:   newList(),
		prot:   newList(),
		limit:  capacity,
		rng:    seed,
	}
	p.setWindow(windowFrac)
	return p
}

// setWindow sets the window's target to frac of the capacity (at least one
// entry). The queues follow lazily, a few entries per call.
func (p *tinyLFU) setWindow(frac float64) {
	w := int(frac*float64(p.limit) + 0.5)
	p.windowMax = max(1, min(w, p.limit))
	p.protMax = int(percentProtected * float64(p.limit-p.windowMax))
}

func (p *tinyLFU) Name() string { return "locus" }
func (p *tinyLFU) Len() int     { return p.size() - p.phantoms }

// size is the number of nodes in the queues, stored or phantom: what the
// eviction logic holds to the capacity.
func (p *tinyLFU) size() int { return p.window.len + p.prob.len + p.prot.len }
func (p *tinyLFU) Cap() int  { return p.limit }

func (p *tinyLFU) Touch(key uint64) bool {
	if p.tuner != nil {
		p.tuner.access(p, key)
	}
	if p.counts {
		p.freq.increment(key)
	}
	i := p.idx.get(p.nodes, key)
	if i == nilIdx || p.nodes[i].phantom {
		return false // a phantom is reordered when the caller inserts it
	}
	p.reorder(i)
	return true
}

// reorder records a hit on node i.
func (p *tinyLFU) reorder(i int32) {
	switch n := &p.nodes[i]; n.queue {
	case qWindow:
		p.window.moveToBack(p.nodes, i)
	case qProbation:
		p.prob.unlink(p.nodes, i)
		n.queue = qProtected
		p.prot.pushBack(p.nodes, i)
		p.demote()
	default:
		p.prot.moveToBack(p.nodes, i)
	}
}

func (p *tinyLFU) Insert(key uint64, victims []uint64) ([]uint64, bool) {
	if i := p.idx.get(p.nodes, key); i != nilIdx {
		if n := &p.nodes[i]; n.phantom {
			// The policy kept a place for key: it is stored now, and the
			// access counts as the hit it was for the adopted shadow.
			n.phantom = false
			p.phantoms--
			p.reorder(i)
		}
		return victims, true
	}
	i := p.alloc(key, qWindow)
	p.idx.put(key, i)
	p.window.pushBack(p.nodes, i)
	return p.evict(victims), true
}

func (p *tinyLFU) Remove(key uint64) {
	if i := p.idx.get(p.nodes, key); i != nilIdx {
		p.drop(i)
	}
}

// queueOf returns the list that holds node i.
func (p *tinyLFU) queueOf(i int32) *list {
	switch p.nodes[i].queue {
	case qWindow:
		return &p.window
	case qProbation:
		return &p.prob
	default:
		return &p.prot
	}
}

// drop unlinks node i, forgets its key and frees it.
func (p *tinyLFU) drop(i int32) {
	if p.nodes[i].phantom {
		p.phantoms--
	}
	p.queueOf(i).unlink(p.nodes, i)
	p.idx.del(p.nodes[i].key, i)
	p.release(i)
}

// evictNode drops node i and reports its key as a victim unless it was a
// phantom (never stored).
func (p *tinyLFU) evictNode(i int32, victims []uint64) []uint64 {
	if !p.nodes[i].phantom {
		victims = append(victims, p.nodes[i].key)
	}
	p.drop(i)
	return victims
}

// mainVictim is main's LRU entry: probation's, else protected's; nilIdx if
// main is empty.
func (p *tinyLFU) mainVictim() int32 {
	if p.prob.head != nilIdx {
		return p.prob.head
	}
	return p.prot.head
}

// evict restores the capacity after an insertion. The window's LRU entry, if
// the window is over its target, moves to main: freely while the cache has
// room, else against main's LRU victim in an admission contest. If the cache
// is still over capacity (the window is under its target) main's LRU entry
// goes. Finally, after the window shrank, a few more window entries move to
// main (free: main's target grew by as much).
func (p *tinyLFU) evict(victims []uint64) []uint64 {
	if p.window.len > p.windowMax {
		cand := p.window.head
		if p.size() <= p.limit {
			p.toProbation(cand)
		} else if victim := p.mainVictim(); victim == nilIdx {
			victims = p.evictNode(cand, victims)
		} else if p.admit(p.nodes[cand].key, p.nodes[victim].key) {
			victims = p.evictNode(victim, victims)
			p.toProbation(cand)
		} else {
			victims = p.evictNode(cand, victims)
		}
	}
	for p.size() > p.limit {
		victim := p.mainVictim()
		if victim == nilIdx {
			victim = p.window.head
		}
		victims = p.evictNode(victim, victims)
	}
	for n := 0; n < transferPerCall && p.window.len > p.windowMax; n++ {
		p.toProbation(p.window.head)
	}
	p.demote()
	return victims
}

// toProbation moves window node i to the MRU end of probation.
func (p *tinyLFU) toProbation(i int32) {
	p.window.unlink(p.nodes, i)
	p.nodes[i].queue = qProbation
	p.prob.pushBack(p.nodes, i)
}

// admit decides a contest between a candidate leaving the window and main's
// victim: the more frequent key wins; a popular candidate that loses still
// wins 1 time in 128 so that an attacker cannot pin a victim by inflating its
// count (Caffeine's hash-flooding defence).
func (p *tinyLFU) admit(cand, victim uint64) bool {
	cf, vf := p.freq.frequency(cand), p.freq.frequency(victim)
	if cf > vf {
		return true
	}
	if cf >= admitHashDoSMinFreq {
		p.rng += 0x9e3779b97f4a7c15
		return mix64(p.rng)&127 == 0
	}
	return false
}

// demote moves protected's LRU entries to probation while protected is over
// its target, a few per call.
func (p *tinyLFU) demote() {
	for n := 0; n < transferPerCall && p.prot.len > p.protMax; n++ {
		i := p.prot.head
		p.prot.unlink(p.nodes, i)
		p.nodes[i].queue = qProbation
		p.prob.pushBack(p.nodes, i)
	}
}

// adopt makes p a copy of the shadow b (same capacity, no phantoms) while
// keeping p's contract with the caller, who stores p's keys: b's keys that
// the caller does not store become phantoms (tracked, reported as misses,
// kept in place when inserted), and the caller's keys that b does not hold
// take the places of phantoms at probation's LRU end, first in line for
// eviction. keys is scratch space for Len() keys. It reports whether it
// adopted (the capacities must match). O(capacity).
func (p *tinyLFU) adopt(b *tinyLFU, keys []uint64) bool {
	if len(p.nodes) != len(b.nodes) || len(p.idx.slots) != len(b.idx.slots) || len(p.freq.table) != len(b.freq.table) {
		return false
	}
	keys = keys[:0]
	for _, l := range []*list{&p.window, &p.prob, &p.prot} {
		for i := l.head; i != nilIdx; i = p.nodes[i].next {
			if !p.nodes[i].phantom {
				keys = append(keys, p.nodes[i].key)
			}
		}
	}
	copy(p.nodes, b.nodes)
	p.free = b.free
	copy(p.idx.slots, b.idx.slots)
	p.idx.seed = b.idx.seed
	if p.freq != b.freq {
		copy(p.freq.table, b.freq.table)
		p.freq.seed, p.freq.size = b.freq.seed, b.freq.size
	}
	p.window, p.prob, p.prot = b.window, b.prob, b.prot
	p.windowMax, p.protMax, p.rng = b.windowMax, b.protMax, b.rng
	p.phantoms = p.size()
	for _, l := range []*list{&p.window, &p.prob, &p.prot} {
		for i := l.head; i != nilIdx; i = p.nodes[i].next {
			p.nodes[i].phantom = true
		}
	}
	// Keep the caller's keys b holds; collect the others at the front.
	doomed := 0
	for _, k := range keys {
		if i := p.idx.get(p.nodes, k); i != nilIdx {
			p.nodes[i].phantom = false
			p.phantoms--
		} else {
			keys[doomed] = k
			doomed++
		}
	}
	// Give each doomed key a phantom's place, or a free node, at the LRU end
	// of probation. Phantoms are taken from the LRU ends first.
	lists := []*list{&p.prob, &p.window, &p.prot}
	li, cur := 0, p.prob.head
	for _, k := range keys[:doomed] {
		for li < len(lists) && (cur == nilIdx || !p.nodes[cur].phantom) {
			if cur == nilIdx {
				if li++; li < len(lists) {
					cur = lists[li].head
				}
				continue
			}
			cur = p.nodes[cur].next
		}
		var i int32
		if li < len(lists) {
			i, cur = cur, p.nodes[cur].next
			p.idx.del(p.nodes[i].key, i)
			p.queueOf(i).unlink(p.nodes, i)
			p.nodes[i].key, p.nodes[i].phantom, p.nodes[i].queue = k, false, qProbation
			p.phantoms--
		} else {
			i = p.alloc(k, qProbation)
		}
		p.idx.put(k, i)
		p.prob.pushFront(p.nodes, i)
	}
	return true
}
