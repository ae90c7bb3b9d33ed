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

// score orders the candidates for a key: the distance to the nearer probe,
// then the node index (ID order) to break ties.
func (r *Ring) score(d uint32, i int) uint64 { return uint64(d)<<32 | uint64(uint32(r.points[i])) }

// owner returns the node index owning a key of hash h: the node of the point
// nearest (in either direction) to either probe, h's high and low 32 bits.
func (r *Ring) owner(h uint64) int {
	p1, p2 := uint32(h>>32), uint32(h)
	s1, s2 := r.successor(p1), r.successor(p2)
	best := r.score(r.pos(s1)-p1, s1)
	if c := r.score(r.pos(s2)-p2, s2); c < best {
		best = c
	}
	i1 := r.predecessor(s1)
	if c := r.score(p1-r.pos(i1), i1); c < best {
		best = c
	}
	i2 := r.predecessor(s2)
	if c := r.score(p2-r.pos(i2), i2); c < best {
		best = c
	}
	return int(uint32(best))
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
