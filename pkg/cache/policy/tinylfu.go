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

	filter    bool // admission contests use the sketch (false: the candidate always wins, SLRU)
	margin    int  // a candidate must beat the victim's estimated frequency by more than this (0: Caffeine's rule)
	windowMax int  // target size of the window; main gets limit-windowMax
	protMax   int  // target size of the protected segment

	rng uint64 // SplitMix64 state for the 1-in-128 admission of popular candidates

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
		filter: true,
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

func (p *tinyLFU) Name() string { return "wtinylfu" }
func (p *tinyLFU) Len() int     { return p.size() }
func (p *tinyLFU) size() int    { return p.window.len + p.prob.len + p.prot.len }
func (p *tinyLFU) Cap() int     { return p.limit }

// contains reports whether key is resident.
func (p *tinyLFU) contains(key uint64) bool { return p.idx.get(p.nodes, key) != nilIdx }

func (p *tinyLFU) Touch(key uint64) bool {
	if p.counts {
		p.freq.increment(key)
	}
	i := p.idx.get(p.nodes, key)
	if i == nilIdx {
		return false
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
	if p.idx.get(p.nodes, key) != nilIdx {
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
	p.queueOf(i).unlink(p.nodes, i)
	p.idx.del(p.nodes[i].key, i)
	p.release(i)
}

// evictNode drops node i and reports its key as a victim.
func (p *tinyLFU) evictNode(i int32, victims []uint64) []uint64 {
	victims = append(victims, p.nodes[i].key)
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
// victim: the candidate wins if its estimated frequency exceeds the victim's
// by more than p.margin (with margin 1 the access that brought the candidate
// in does not count for it: a key the victim was as popular as before that
// access stays out, which keeps a loop's or a reversal's incumbents in place
// until they come round again); a popular candidate that loses still
// wins 1 time in 128 so that an attacker cannot pin a victim by inflating its
// count (Caffeine's hash-flooding defence).
func (p *tinyLFU) admit(cand, victim uint64) bool {
	if !p.filter {
		return true
	}
	cf, vf := p.freq.frequency(cand), p.freq.frequency(victim)
	if cf > vf+p.margin {
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

func (p *tinyLFU) missing(other shadow) int {
	n := 0
	for _, l := range [...]*list{&p.window, &p.prob, &p.prot} {
		for i := l.head; i != nilIdx; i = p.nodes[i].next {
			if !other.contains(p.nodes[i].key) {
				n++
			}
		}
	}
	return n
}
