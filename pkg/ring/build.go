package ring

import "math/bits"

// build places the points. It hashes every virtual node once, in node-index
// order, then sorts the points by position with a stable radix sort, so
// points at the same position stay in node-index (ID) order: no comparison
// sort, and one transient copy of the points. Then it keeps one entry per
// position, moving the others to dups, and lays out points as lookup.go
// describes.
func (r *Ring) build(counts []int, total int, hashBytes func([]byte) uint64) {
	pts := make([]uint64, 1+total+window)
	all := pts[1 : 1+total]
	var buf []byte
	k := 0
	for i, n := range r.nodes {
		buf = append(append(buf[:0], n.ID...), '#', '0')
		base := len(buf) - 1
		for range counts[i] {
			all[k] = hashBytes(buf)>>32<<32 | uint64(i)
			k++
			buf = incDecimal(buf, base)
		}
	}
	copy(all, sortByPosition(all))
	r.npoints = total

	// Keep the first point of each position (the lowest node index), in
	// place; flag it when others share its position.
	last := 0
	for j, e := range all {
		if last > 0 && e>>32 == pts[last]>>32 {
			pts[last] |= dupFlag
			r.dups = append(r.dups, all[j])
			continue
		}
		last++
		pts[last] = e
	}
	if total-last > total/8 { // many shared positions: do not keep the room
		pts = append([]uint64(nil), pts[:last+1+window]...)
	}
	pts = pts[:last+1+window]
	pts[0] = pts[last]
	for j := last + 1; j < len(pts); j++ {
		pts[j] = 1<<64 - 1
	}
	r.points, r.last = pts, last
	r.index(indexBits(last))
}

// indexBits returns b for a prefix index of 2^b buckets over n distinct
// positions. A bucket's count is Poisson (the positions are uniform), and
// the lookup scans a window of 8 entries. Up to 2^19 positions (about 250
// weight-1 nodes) the buckets hold 1 to 2 positions on average, so the
// window starts with the bucket and covers it all but about once in 4,000
// probes; the index costs 2 to 4 bytes per position and stays under 1 MiB.
// Past that, the index stops at 2^18 buckets (1 MiB, so more of it stays in
// the CPU caches) until buckets reach 8 positions on average, and the window
// is centred on a guess interpolated inside the bucket; beyond 2^21
// positions it keeps 4 to 8 positions per bucket.
func indexBits(n int) int {
	return min(bits.Len(uint(n)>>1), max(18, bits.Len(uint(n)>>3)))
}

// index builds the prefix index with 2^tb buckets: table[b] is the index in
// points of the first entry whose position is >= b<<shift (1 + the number of
// positions below it), so bucket b holds entries table[b] to table[b+1]-1.
// Buckets of more than 2 positions on average take the interpolated guess.
func (r *Ring) index(tb int) {
	r.shift = uint(32 - tb)
	r.mask = 1<<r.shift - 1
	r.interp = r.last > 2<<tb
	r.table = make([]uint32, 1<<tb+1)
	r.table[0] = 1
	for _, e := range r.points[1 : r.last+1] {
		r.table[uint32(e>>32)>>r.shift+1]++
	}
	for b := 1; b < len(r.table); b++ {
		r.table[b] += r.table[b-1]
	}
}

// sortByPosition sorts points by their high 32 bits (the position), keeping
// the input order among equal positions: a least-significant-digit radix
// sort in four passes of 8 bits (256 buckets, whose write positions stay in
// the L1 cache). It returns the sorted slice, which is either a or a new
// slice of the same length.
func sortByPosition(a []uint64) []uint64 {
	b := make([]uint64, len(a))
	for shift := uint(32); shift < 64; shift += 8 {
		var count [257]int
		for _, e := range a {
			count[(e>>shift)&0xff+1]++
		}
		for i := 1; i < len(count); i++ {
			count[i] += count[i-1]
		}
		for _, e := range a {
			d := (e >> shift) & 0xff
			b[count[d]] = e
			count[d]++
		}
		a, b = b, a
	}
	return a
}

// incDecimal adds one to the decimal number buf[base:] and returns buf,
// grown by a digit when the number was all nines.
func incDecimal(buf []byte, base int) []byte {
	for i := len(buf) - 1; i >= base; i-- {
		if buf[i] != '9' {
			buf[i]++
			return buf
		}
		buf[i] = '0'
	}
	buf = append(buf, 0)
	copy(buf[base+1:], buf[base:])
	buf[base] = '1'
	return buf
}
