package ring

import "math/bits"

// The circle's layout (see build.go, which makes it):
//
//	points[0]          a copy of the last point: the predecessor of a probe
//	                   below the first position, round the top of the circle
//	points[1..last]    one entry per distinct position, sorted, as
//	                   position<<32 | dupFlag | node index, the node being
//	                   the lowest node index at that position (the only one
//	                   that can win a lookup, ties going to the lower index)
//	points[last+1..]   padding (all ones), so a window of `window` entries
//	                   from any bucket start stays inside the slice; the
//	                   padding compares above every probe
//
// The other points sharing a position (rare with a well-mixed hash) are in
// dups, sorted, and the entry of their position carries dupFlag; only the
// preference-list walk reads them.
const (
	// window is how many entries a lookup scans per probe: 64 bytes, one
	// or two cache lines. See indexBits for how often the answer lies
	// outside it (then predSlow binary-searches the bucket).
	window = 8

	// dupFlag marks an entry whose position other points share (in dups).
	dupFlag = 1 << 16

	nodeMask = 1<<16 - 1 // the node index bits of an entry

	// lowBits is added to a probe's position shifted up to make the bound
	// t: an entry is at or before position p exactly when it is <= t, and
	// the padding is above every t.
	lowBits = dupFlag | nodeMask
)

// pos returns the position of entry i of points.
func (r *Ring) pos(i int) uint32 { return uint32(r.points[i] >> 32) }

// ownerAt returns the node index of entry i of points.
func (r *Ring) ownerAt(i int) int { return int(r.points[i] & nodeMask) }

// start returns where the window for position p starts, and where p's
// bucket starts. Bucket b = p>>shift holds the entries table[b] to
// table[b+1]-1. When buckets are small the window starts with the bucket;
// when they are bigger (large rings, see indexBits) it is centred on a
// guess interpolated inside the bucket, but not before the bucket's start.
func (r *Ring) start(p uint32) (s, lo int) {
	b := p >> r.shift
	lo = int(r.table[b])
	if !r.interp {
		return lo, lo
	}
	m := int(r.table[b+1]) - lo
	g := lo + int(uint64(m)*uint64(p&r.mask)>>r.shift) - window/2
	return max(lo, g), lo
}

// locate turns a window count into the predecessor of p: the window starts
// at entry s in the bucket starting at lo, and a of its entries are after p
// (above counts them). It reports false when the window does not settle it.
//
// The entries are sorted, so if the window holds entries both at or before p
// and after it, the last one at or before p is the predecessor. If they are
// all after p and the window starts with the bucket, the predecessor is the
// entry before the bucket. If they are all at or before p, or all after it
// with the window inside the bucket, the predecessor lies outside the window.
func locate(s, lo int, a uint64) (int, bool) {
	return s + window - 1 - int(a), a != 0 && (a != window || s == lo)
}

// above returns how many of the window entries from w[0] are above t,
// without a branch: the lookup does not wait on a loop exit the processor
// cannot predict.
func above(w []uint64, t uint64) uint64 {
	v := (*[window]uint64)(w)
	_, a0 := bits.Sub64(t, v[0], 0) // the borrow: 1 when v[0] > t
	_, a1 := bits.Sub64(t, v[1], 0)
	_, a2 := bits.Sub64(t, v[2], 0)
	_, a3 := bits.Sub64(t, v[3], 0)
	_, a4 := bits.Sub64(t, v[4], 0)
	_, a5 := bits.Sub64(t, v[5], 0)
	_, a6 := bits.Sub64(t, v[6], 0)
	_, a7 := bits.Sub64(t, v[7], 0)
	return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7
}

// pred returns the index of the last entry at or before position p, in
// [0, r.last]: 0 stands for the last point (p is below every position, so
// its predecessor is round the top of the circle). The entry after it (entry
// 1 after the last) is the first point strictly after p.
func (r *Ring) pred(p uint32) int {
	s, lo := r.start(p)
	if i, ok := locate(s, lo, above(r.points[s:s+window], uint64(p)<<32|lowBits)); ok {
		return i
	}
	return r.predSlow(p)
}

// predSlow is pred by a binary search of p's bucket, for the probes whose
// answer is outside the window: a crowded bucket (a skewed custom hash,
// heavy weights) or a poor interpolated guess.
func (r *Ring) predSlow(p uint32) int {
	t := uint64(p)<<32 | lowBits
	b := p >> r.shift
	lo, hi := int(r.table[b]), int(r.table[b+1])
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if r.points[h] <= t {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return lo - 1
}

// candidate returns the best candidate for probe p with predecessor entry
// i, as distance<<32 | node index, so that the smaller value wins: the
// nearer of entry i (at or before p) and the entry after it, ties to the
// lower node index. No other point can be nearer than both.
func (r *Ring) candidate(p uint32, i int) uint64 {
	j := i + 1
	if j > r.last {
		j = 1
	}
	e0, e1 := r.points[i], r.points[j]
	before := uint64(p-uint32(e0>>32))<<32 | e0&nodeMask
	after := uint64(uint32(e1>>32)-p)<<32 | e1&nodeMask
	return min(before, after)
}

// owner returns the node index owning a key of hash h: the node of the point
// nearest (either way round) to either probe, h's high and low 32 bits. It
// is pred and candidate for both probes, written out side by side with no
// branch between them that the processor could mispredict, so that their
// memory reads overlap.
func (r *Ring) owner(h uint64) int {
	p1, p2 := uint32(h>>32), uint32(h)
	s1, lo1 := r.start(p1)
	s2, lo2 := r.start(p2)
	a1 := above(r.points[s1:s1+window], uint64(p1)<<32|lowBits)
	a2 := above(r.points[s2:s2+window], uint64(p2)<<32|lowBits)
	i1, ok1 := locate(s1, lo1, a1)
	i2, ok2 := locate(s2, lo2, a2)
	if !ok1 || !ok2 {
		i1, i2 = r.pred(p1), r.pred(p2)
	}
	return int(uint32(min(r.candidate(p1, i1), r.candidate(p2, i2))))
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
