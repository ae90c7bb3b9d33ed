package ring

// pos returns the position of point i.
func (r *Ring) pos(i int) uint32 { return uint32(r.points[i] >> 32) }

// ownerAt returns the node index of point i.
func (r *Ring) ownerAt(i int) int { return int(uint32(r.points[i])) }

// successor returns the index of the first point at or after position p,
// clockwise (wrapping past the top of the circle to point 0). Among points at
// one position it is the one with the lowest node index. The ring must not be
// empty.
func (r *Ring) successor(p uint32) int {
	b := p >> r.shift
	lo, hi := int(r.table[b]), int(r.table[b+1])
	t := uint64(p) << 32
	pts := r.points
	if hi-lo > 4 {
		// Positions are uniform inside a bucket: interpolate a first
		// guess, then scan from it, usually within one cache line.
		g := lo + int(uint64(hi-lo)*(uint64(p)&(1<<r.shift-1))>>r.shift)
		if pts[g] < t {
			lo = g + 1
			for steps := 0; lo < hi && steps < 8; steps++ {
				if pts[lo] >= t {
					return r.wrap(lo)
				}
				lo++
			}
		} else {
			for steps := 0; g > lo && steps < 8; steps++ {
				if pts[g-1] < t {
					return g
				}
				g--
			}
			hi = g // pts[g] >= t
		}
		// Far from the guess (a crowded bucket: a skewed custom hash or
		// heavy weights): binary search what is left.
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if pts[m] < t {
				lo = m + 1
			} else {
				hi = m
			}
		}
		return r.wrap(lo)
	}
	for lo < hi && pts[lo] < t {
		lo++
	}
	return r.wrap(lo)
}

func (r *Ring) wrap(i int) int {
	if i == len(r.points) {
		return 0
	}
	return i
}

// predecessor returns the index of the last point before point s on the
// circle, counter-clockwise; among points at that position, the one with the
// lowest node index.
func (r *Ring) predecessor(s int) int {
	n := len(r.points)
	i := s - 1
	if i < 0 {
		i = n - 1
	}
	p := r.pos(i)
	for range n - 1 {
		j := i - 1
		if j < 0 {
			j = n - 1
		}
		if r.pos(j) != p {
			break
		}
		i = j
	}
	return i
}

// nearest returns the best candidate for probe p, as distance<<32 | node
// index, so that the smaller value wins: the distance to the nearer of the
// first point at or after p and the last point before p, ties to the lower
// node index. Of several points at one position, the first (lowest node
// index) stands for all.
func (r *Ring) nearest(p uint32) uint64 {
	pts := r.points
	s := r.successor(p)
	e := pts[s]
	best := uint64(uint32(e>>32)-p)<<32 | e&(1<<32-1)
	e = pts[r.predecessor(s)]
	return min(best, uint64(p-uint32(e>>32))<<32|e&(1<<32-1))
}

// owner returns the node index owning a key of hash h: the node of the point
// nearest (either way round) to either probe, h's high and low 32 bits.
func (r *Ring) owner(h uint64) int {
	return int(uint32(min(r.nearest(uint32(h>>32)), r.nearest(uint32(h)))))
}

// Probes returns the two positions on the circle at which key probes: the
// high and the low 32 bits of Config.Hash(key). See the package
// documentation for how they pick the owner. On an empty ring it returns
// zeros.
func (r *Ring) Probes(key string) (uint32, uint32) {
	if r.empty() {
		return 0, 0
	}
	h := r.hash(key)
	return uint32(h >> 32), uint32(h)
}

// Owner returns the node that owns key: the node of the virtual node nearest
// to one of the key's two probe positions (ties to the node whose ID sorts
// first). It is the first node of Owners(key, n). It does not allocate. On an
// empty ring it returns the zero Node.
func (r *Ring) Owner(key string) Node {
	if r.empty() {
		return Node{}
	}
	return r.nodes[r.owner(r.hash(key))]
}

// OwnerIndex is Owner returning the node's index (see Node), or -1 on an
// empty ring.
func (r *Ring) OwnerIndex(key string) int {
	if r.empty() {
		return -1
	}
	return r.owner(r.hash(key))
}
