package ring

import "math/bits"

// build places the points. It hashes every virtual node once, in node-index
// order, then sorts the points by position with a stable radix sort, so
// points at the same position stay in node-index (ID) order: no comparison
// sort, and one transient copy of the points.
func (r *Ring) build(counts []int, total int, hashBytes func([]byte) uint64) {
	pts := make([]uint64, total)
	var buf []byte
	k := 0
	for i, n := range r.nodes {
		buf = append(append(buf[:0], n.ID...), '#', '0')
		base := len(buf) - 1
		for range counts[i] {
			pts[k] = hashBytes(buf)>>32<<32 | uint64(i)
			k++
			buf = incDecimal(buf, base)
		}
	}
	r.points = sortByPosition(pts)

	r.index(max(0, min(maxIndexBits, bits.Len(uint(total))-indexDensity)))
}

// The prefix index has 2^b buckets with b = bits.Len(points) - indexDensity,
// at most maxIndexBits: 16 to 32 points per bucket, and at most 256 KiB, so
// the index stays in the CPU cache and a lookup's one cache miss is on the
// points.
const (
	indexDensity = 5
	maxIndexBits = 16
)

// index builds the prefix index with 2^tb buckets.
func (r *Ring) index(tb int) {
	r.shift = uint(32 - tb)
	r.table = make([]uint32, 1<<tb+1)
	for _, e := range r.points {
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
