package ring

import "slices"

// seenSet records node (or rack) indices seen during a walk. The first 16 fit
// in an array on the caller's stack, so short walks do not allocate; beyond
// that it switches to a bitset.
type seenSet struct {
	small [16]uint16
	n     int
	bits  []uint64
	size  int // universe size, for the bitset
}

// add records i and reports whether it was new.
func (s *seenSet) add(i int) bool {
	if s.bits != nil {
		w, m := i>>6, uint64(1)<<(i&63)
		if s.bits[w]&m != 0 {
			return false
		}
		s.bits[w] |= m
		s.n++
		return true
	}
	for _, x := range s.small[:s.n] {
		if int(x) == i {
			return false
		}
	}
	if s.n < len(s.small) {
		s.small[s.n] = uint16(i)
		s.n++
		return true
	}
	s.bits = make([]uint64, (s.size+63)/64)
	for _, x := range s.small {
		s.bits[x>>6] |= 1 << (x & 63)
	}
	s.bits[i>>6] |= 1 << (i & 63)
	s.n++
	return true
}

// cursor walks the points away from one probe in one direction.
type cursor struct {
	i    int    // current point
	p    uint32 // the probe
	cw   bool   // clockwise (increasing positions) or counter-clockwise
	left int    // points not yet visited; 0 when done
}

// dist is the distance from the probe to the cursor's point.
func (c *cursor) dist(r *Ring) uint32 {
	if c.cw {
		return r.pos(c.i) - c.p
	}
	return c.p - r.pos(c.i)
}

// advance moves to the next entry, wrapping between entries 1 and last.
func (c *cursor) advance(last int) {
	c.left--
	if c.cw {
		if c.i++; c.i > last {
			c.i = 1
		}
	} else if c.i--; c.i < 1 {
		c.i = last
	}
}

// walker visits the distinct nodes of the ring in a key's preference order:
// by the distance of each node's nearest point to the nearer of the key's
// two probes, ties to the lower node index. It merges four cursors (each
// probe, both directions) a layer at a time: a layer is every point at the
// smallest distance not yet visited, sorted by node index, so ties come out
// in the same order as the brute-force definition.
type walker struct {
	r     *Ring
	cur   [4]cursor
	layer [8]int32 // node indices of the current layer...
	extra []int32  // ...or, for a layer of more than 8 points, here
	ln    int      // layer size
	lpos  int      // next layer entry to yield
	nodes seenSet
}

func (r *Ring) walk(key string) walker {
	h := r.hash(key)
	p1, p2 := uint32(h>>32), uint32(h)
	n := r.last
	// Entry pred(p) is at or before p and the next one after it; 0 and
	// last+1 are the copies of the last and first entries.
	before := func(p uint32) int {
		if i := r.pred(p); i > 0 {
			return i
		}
		return n
	}
	after := func(i int) int {
		if i == n {
			return 1
		}
		return i + 1
	}
	b1, b2 := before(p1), before(p2)
	return walker{
		r: r,
		cur: [4]cursor{
			{i: after(b1), p: p1, cw: true, left: n},
			{i: b1, p: p1, left: n},
			{i: after(b2), p: p2, cw: true, left: n},
			{i: b2, p: p2, left: n},
		},
		nodes: seenSet{size: len(r.nodes)},
	}
}

// next returns the next distinct node index, or -1 when every node has been
// visited.
func (w *walker) next() int {
	for w.nodes.n < len(w.r.nodes) {
		for w.lpos < w.ln {
			var o int
			if w.extra != nil {
				o = int(w.extra[w.lpos])
			} else {
				o = int(w.layer[w.lpos])
			}
			w.lpos++
			if w.nodes.add(o) {
				return o
			}
		}
		if !w.fill() {
			break
		}
	}
	return -1
}

// fill loads the next layer; it reports false when every cursor is done.
func (w *walker) fill() bool {
	r := w.r
	d := uint64(1) << 32 // above any distance
	for k := range w.cur {
		if c := &w.cur[k]; c.left > 0 {
			d = min(d, uint64(c.dist(r)))
		}
	}
	if d == 1<<32 {
		return false
	}
	w.ln, w.lpos, w.extra = 0, 0, nil
	for k := range w.cur {
		c := &w.cur[k]
		for c.left > 0 && uint64(c.dist(r)) == d {
			w.push(r.ownerAt(c.i))
			if r.points[c.i]&dupFlag != 0 {
				// The other points at this position.
				q := r.points[c.i] >> 32 << 32
				j, _ := slices.BinarySearch(r.dups, q)
				for ; j < len(r.dups) && r.dups[j]>>32<<32 == q; j++ {
					w.push(int(r.dups[j] & nodeMask))
				}
			}
			c.advance(r.last)
		}
	}
	l := w.extra
	if l == nil {
		l = w.layer[:w.ln]
	}
	for i := 1; i < len(l); i++ { // insertion sort: layers are tiny
		for j := i; j > 0 && l[j] < l[j-1]; j-- {
			l[j], l[j-1] = l[j-1], l[j]
		}
	}
	return true
}

// push adds node o to the layer being filled.
func (w *walker) push(o int) {
	switch {
	case w.extra != nil:
		w.extra = append(w.extra, int32(o))
	case w.ln < len(w.layer):
		w.layer[w.ln] = int32(o)
	default:
		w.extra = append(append(make([]int32, 0, 2*len(w.layer)), w.layer[:]...), int32(o))
	}
	w.ln++
}

// Owners returns the preference list of key: n distinct nodes in ring order,
// that is by the distance from the key's nearer probe to the node's nearest
// point (the owner first, then the nodes met next walking away from the
// probes in both directions; ties to the lower ID). If n exceeds the member
// count it returns all members; n <= 0 returns nil. Replicas of a block go to
// the first n nodes; adding or removing a node inserts or deletes it in each
// list and keeps the others in their relative order.
func (r *Ring) Owners(key string, n int) []Node {
	if n <= 0 || r.empty() {
		return nil
	}
	return r.AppendOwners(make([]Node, 0, min(n, len(r.nodes))), key, n)
}

// AppendOwners appends Owners(key, n) to dst and returns the extended slice.
// It does not allocate when dst has room and n <= 16.
func (r *Ring) AppendOwners(dst []Node, key string, n int) []Node {
	if n <= 0 || r.empty() {
		return dst
	}
	w := r.walk(key)
	for ; n > 0; n-- {
		o := w.next()
		if o < 0 {
			break
		}
		dst = append(dst, r.nodes[o])
	}
	return dst
}

// OwnersRackAware returns a rack-aware preference list of key: the owner,
// then the next nodes in preference order (as Owners) whose rack is not yet
// in the list, as long as such racks remain; once every rack is used, the
// list is filled with the remaining nodes in preference order. So with at least n
// racks the n nodes are on n distinct racks, and with fewer racks every rack
// is used before any rack repeats. n larger than the member count returns all
// members; n <= 0 returns nil.
//
// With one rack (for example when no node sets Rack) it equals Owners.
func (r *Ring) OwnersRackAware(key string, n int) []Node {
	if n <= 0 || r.empty() {
		return nil
	}
	return r.AppendOwnersRackAware(make([]Node, 0, min(n, len(r.nodes))), key, n)
}

// AppendOwnersRackAware appends OwnersRackAware(key, n) to dst and returns
// the extended slice. It does not allocate when dst has room and n and the
// number of nodes passed over are small (at most 16).
func (r *Ring) AppendOwnersRackAware(dst []Node, key string, n int) []Node {
	if n <= 0 || r.empty() {
		return dst
	}
	n = min(n, len(r.nodes))
	start := len(dst)
	w := r.walk(key)
	racks := seenSet{size: r.nracks}
	// Nodes passed over because their rack was used, in ring order: the
	// first 16 on the stack, the rest in order.
	var first [16]int
	var order []int
	ns := 0
	for len(dst)-start < n && racks.n < r.nracks {
		o := w.next()
		if o < 0 {
			break
		}
		if racks.add(int(r.rack[o])) {
			dst = append(dst, r.nodes[o])
			continue
		}
		if ns < len(first) {
			first[ns] = o
		} else {
			order = append(order, o)
		}
		ns++
	}
	// Every rack is used: fill with the skipped nodes, then the rest of the
	// walk, which together are the remaining nodes in ring order.
	for k := 0; k < ns && len(dst)-start < n; k++ {
		o := 0
		if k < len(first) {
			o = first[k]
		} else {
			o = order[k-len(first)]
		}
		dst = append(dst, r.nodes[o])
	}
	for len(dst)-start < n {
		o := w.next()
		if o < 0 {
			break
		}
		dst = append(dst, r.nodes[o])
	}
	return dst
}
