package policy

// New returns the default policy, named "locus": the best of a few candidate
// policies (W-TinyLFU at several windows and with two admission rules, LRU
// and ARC), chosen and re-chosen by miniature simulation (see doc.go). It holds at most capacity keys. seed selects the hash functions
// of the frequency sketches, of the key indexes and of the tuner's sample,
// and seeds the random generators that break admission contests: the same
// seed and access sequence give the same decisions. It returns ErrCapacity
// when capacity < 1 or > MaxCapacity.
func New(capacity int, seed uint64) (Policy, error) {
	if capacity < 1 || capacity > MaxCapacity {
		return nil, capacityError(capacity)
	}
	t := newTuner(capacity, seed)
	if t.full {
		return newMirror(capacity, t), nil
	}
	s := &sampledPolicy{live: newLive(capacity, seed), tuner: t}
	s.follow()
	return s, nil
}

// Node states of the mirror's stored keys (0 is a free node).
const (
	qHeld   uint8 = 1 // the followed shadow holds the key
	qDoomed uint8 = 2 // it does not: first in line for eviction
)

// mirror is the default policy for a cache of at most maxShadow keys, whose
// tuner replays every access: the live cache stores what the followed
// shadow holds. It records the keys the caller stores; a stored key the
// shadow evicts becomes doomed (it stays stored, and hits, until a slot is
// needed: doomed keys leave oldest first), and a key the shadow holds that
// the caller does not store (after a switch) is a miss that Insert then
// admits. A switch to another shadow costs one pass over the stored keys.
type mirror struct {
	arena
	idx    table
	doomed list
	limit  int
	n      int // stored keys
	tuner  *tuner
}

func newMirror(capacity int, t *tuner) *mirror {
	return &mirror{
		arena:  newArena(capacity),
		idx:    newTable(capacity, mix64(t.seed^0x6c6f637573)),
		doomed: newList(),
		limit:  capacity,
		tuner:  t,
	}
}

func (m *mirror) Name() string { return DefaultName }
func (m *mirror) Len() int     { return m.n }
func (m *mirror) Cap() int     { return m.limit }

func (m *mirror) Touch(key uint64) bool {
	t := m.tuner
	if t.access(key) {
		m.resync()
	} else {
		for _, v := range t.curVictims {
			if i := m.idx.get(m.nodes, v); i != nilIdx && m.nodes[i].queue == qHeld {
				m.nodes[i].queue = qDoomed
				m.doomed.pushBack(m.nodes, i)
			}
		}
	}
	i := m.idx.get(m.nodes, key)
	t.noteLive(i != nilIdx)
	if i == nilIdx {
		return false
	}
	if m.nodes[i].queue == qDoomed && t.curHolds {
		m.doomed.unlink(m.nodes, i)
		m.nodes[i].queue = qHeld
	}
	return true
}

// resync re-marks every stored key after the tuner switched shadows: held
// if the new shadow holds it, else doomed. O(capacity).
func (m *mirror) resync() {
	s := m.tuner.shadows[m.tuner.cur]
	for i := range m.nodes {
		n := &m.nodes[i]
		if n.queue == 0 {
			continue
		}
		holds := s.contains(n.key)
		switch {
		case holds && n.queue == qDoomed:
			m.doomed.unlink(m.nodes, int32(i))
			n.queue = qHeld
		case !holds && n.queue == qHeld:
			n.queue = qDoomed
			m.doomed.pushBack(m.nodes, int32(i))
		}
	}
}

func (m *mirror) Insert(key uint64, victims []uint64) ([]uint64, bool) {
	if m.idx.get(m.nodes, key) != nilIdx {
		return victims, true
	}
	q := qHeld
	if !m.tuner.shadows[m.tuner.cur].contains(key) {
		// Not after a Touch: the shadow admits every key it is asked
		// for. An Insert without a Touch (a warm restart re-indexing the
		// pages it finds) is admitted while there is room, doomed: it
		// stays and hits until a slot is needed.
		if m.n == m.limit {
			return victims, false
		}
		q = qDoomed
	}
	if m.n == m.limit {
		if m.doomed.head == nilIdx {
			return victims, false // cannot happen: a full mirror of a shadow that holds key has a doomed key
		}
		v := m.doomed.head
		victims = append(victims, m.nodes[v].key)
		m.drop(v)
	}
	i := m.alloc(key, q)
	m.idx.put(key, i)
	if q == qDoomed {
		m.doomed.pushBack(m.nodes, i)
	}
	m.n++
	return victims, true
}

func (m *mirror) Remove(key uint64) {
	m.tuner.remove(key)
	if i := m.idx.get(m.nodes, key); i != nilIdx {
		m.drop(i)
	}
}

func (m *mirror) drop(i int32) {
	if m.nodes[i].queue == qDoomed {
		m.doomed.unlink(m.nodes, i)
	}
	m.nodes[i].queue = 0
	m.idx.del(m.nodes[i].key, i)
	m.release(i)
	m.n--
}

// sampledPolicy is the default policy for a cache whose tuner samples its
// keys: the live cache (live.go) becomes the chosen candidate, changing its
// window or its type.
type sampledPolicy struct {
	live  *live
	tuner *tuner
}

func (s *sampledPolicy) Name() string { return DefaultName }
func (s *sampledPolicy) Len() int     { return s.live.Len() }
func (s *sampledPolicy) Cap() int     { return s.live.tl.limit }

// follow makes the live cache the current candidate.
func (s *sampledPolicy) follow() {
	s.live.follow(s.tuner.cands[s.tuner.cur], s.tuner.arcTarget())
}

func (s *sampledPolicy) Touch(key uint64) bool {
	if s.tuner.sampled(key) && s.tuner.access(key) {
		s.follow()
	}
	return s.live.Touch(key)
}

func (s *sampledPolicy) Insert(key uint64, victims []uint64) ([]uint64, bool) {
	return s.live.Insert(key, victims)
}

func (s *sampledPolicy) Remove(key uint64) {
	if s.tuner.sampled(key) {
		s.tuner.remove(key)
	}
	s.live.Remove(key)
}
