package policy

// lru is the least-recently-used baseline: one queue, every miss admitted,
// the LRU entry evicted. It is what Policy implementations are measured
// against.
type lru struct {
	arena
	idx   table
	q     list
	limit int
}

// NewLRU returns the LRU baseline policy holding at most capacity keys. It
// returns ErrCapacity when capacity < 1 or > MaxCapacity.
func NewLRU(capacity int) (Policy, error) {
	if capacity < 1 || capacity > MaxCapacity {
		return nil, capacityError(capacity)
	}
	return &lru{
		arena: newArena(capacity),
		idx:   newTable(capacity, 0),
		q:     newList(),
		limit: capacity,
	}, nil
}

func (p *lru) Name() string { return "lru" }
func (p *lru) Len() int     { return p.q.len }
func (p *lru) Cap() int     { return p.limit }

func (p *lru) Touch(key uint64) bool {
	i := p.idx.get(p.nodes, key)
	if i == nilIdx {
		return false
	}
	p.q.moveToBack(p.nodes, i)
	return true
}

func (p *lru) Insert(key uint64, victims []uint64) ([]uint64, bool) {
	if p.idx.get(p.nodes, key) != nilIdx {
		return victims, true
	}
	if p.q.len == p.limit {
		v := p.q.head
		victims = append(victims, p.nodes[v].key)
		p.drop(v)
	}
	i := p.alloc(key, 0)
	p.idx.put(key, i)
	p.q.pushBack(p.nodes, i)
	return victims, true
}

func (p *lru) Remove(key uint64) {
	if i := p.idx.get(p.nodes, key); i != nilIdx {
		p.drop(i)
	}
}

func (p *lru) drop(i int32) {
	p.idx.del(p.nodes[i].key, i)
	p.q.unlink(p.nodes, i)
	p.release(i)
}
