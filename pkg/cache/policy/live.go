package policy

// Modes of the live policy.
const (
	modeTinyLFU uint8 = iota // W-TinyLFU with the candidate's window (100%: LRU)
	modeARC                  // ARC
)

// live is the live cache of a default policy whose tuner samples its keys
// (sampledPolicy): one W-TinyLFU or ARC at full capacity that changes type
// when the tuner changes candidate. Both types share one node arena and one
// key index, so a switch keeps the resident set (the caller's storage) as it
// is and relinks the nodes into the new type's queues in one O(capacity)
// pass, ordered by the old type's own recency order (see toARC and
// toTinyLFU). The W-TinyLFU's frequency sketch counts every access in both
// modes, so it is current when the live cache comes back to W-TinyLFU. The
// ARC state (its ghost lists, about 24 bytes per key of capacity) is
// allocated at the first switch to ARC and kept.
type live struct {
	tl   *tinyLFU
	arc  *arcPolicy // nil until the first switch to ARC
	mode uint8
	seed uint64
}

func newLive(capacity int, seed uint64) *live {
	return &live{tl: newTinyLFU(capacity, seed, 0), seed: seed}
}

func (l *live) Len() int {
	if l.mode == modeARC {
		return l.arc.Len()
	}
	return l.tl.Len()
}

func (l *live) Touch(key uint64) bool {
	if l.mode == modeARC {
		l.tl.freq.increment(key)
		return l.arc.Touch(key)
	}
	return l.tl.Touch(key)
}

func (l *live) Insert(key uint64, victims []uint64) ([]uint64, bool) {
	if l.mode == modeARC {
		return l.arc.Insert(key, victims)
	}
	return l.tl.Insert(key, victims)
}

func (l *live) Remove(key uint64) {
	if l.mode == modeARC {
		l.arc.Remove(key)
		return
	}
	l.tl.Remove(key)
}

// follow makes the live cache the candidate c. p is the ARC shadow's
// target for T1 as a share of its capacity (used when c is ARC).
func (l *live) follow(c candidate, p float64) {
	switch {
	case c.kind == kindARC && l.mode == modeARC:
	case c.kind == kindARC:
		l.toARC(p)
	case l.mode == modeARC:
		l.toTinyLFU(c)
	default:
		l.tl.setWindow(c.window)
		l.tl.filter = c.filter
		l.tl.margin = c.margin
	}
}

// toARC relinks the W-TinyLFU's resident keys into ARC's lists: T2 takes
// the protected segment (keys hit again in main: seen at least twice), T1
// the probation segment then the window (keys seen once since they came
// in, oldest first), each in its LRU order. The ghost lists start empty and
// T1's target is the ARC shadow's, scaled to the live capacity.
func (l *live) toARC(p float64) {
	tl := l.tl
	if l.arc == nil {
		l.arc = &arcPolicy{c: tl.limit, g: newGhosts(tl.limit, mix64(l.seed^0x67686f7374))}
	} else {
		l.arc.g.reset()
	}
	a := l.arc
	a.arena, a.idx = tl.arena, tl.idx // the same nodes and index
	a.t1, a.t2 = newList(), newList()
	move := func(from *list, to *list, q uint8) {
		for i := from.head; i != nilIdx; {
			next := tl.nodes[i].next
			tl.nodes[i].queue = q
			to.pushBack(tl.nodes, i)
			i = next
		}
		*from = newList()
	}
	move(&tl.prob, &a.t1, qT1)
	move(&tl.window, &a.t1, qT1)
	move(&tl.prot, &a.t2, qT2)
	a.p = min(a.c, max(0, int(p*float64(a.c)+0.5)))
	l.mode = modeARC
}

// toTinyLFU relinks ARC's resident keys into the W-TinyLFU's queues for
// candidate c: the window takes T1's most recent keys (up to its target),
// protected T2's most recent (up to its target), and probation the rest,
// T1's older keys first (the first to leave), then T2's.
func (l *live) toTinyLFU(c candidate) {
	tl, a := l.tl, l.arc
	tl.arena = a.arena // the free list moved on in ARC mode
	tl.setWindow(c.window)
	tl.filter = c.filter
	tl.margin = c.margin
	tl.window, tl.prob, tl.prot = newList(), newList(), newList()
	split := func(from *list, keep int, rest *list, restQ uint8, head *list, headQ uint8) {
		n := 0
		for i := from.head; i != nilIdx; n++ {
			next := tl.nodes[i].next
			if n < from.len-keep {
				tl.nodes[i].queue = restQ
				rest.pushBack(tl.nodes, i)
			} else {
				tl.nodes[i].queue = headQ
				head.pushBack(tl.nodes, i)
			}
			i = next
		}
		*from = newList()
	}
	split(&a.t1, tl.windowMax, &tl.prob, qProbation, &tl.window, qWindow)
	split(&a.t2, tl.protMax, &tl.prob, qProbation, &tl.prot, qProtected)
	l.mode = modeTinyLFU
}
