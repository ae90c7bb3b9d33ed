package ring

import "slices"

// Shares returns, by node index, the fraction of uniformly hashed keys each
// node owns: the expected share of keys, with no sampling noise. The
// fractions add up to 1.
//
// It is computed in the continuum (positions as real numbers, ties of
// measure zero): a probe lands at distance x or more from every point with
// probability G(x) = 1 - sum over half-cells h of min(x, h), where the
// half-cells are the halves of the gaps between neighbouring points; a point
// owns the keys whose nearer probe falls in its half-cells, so a half-cell of
// length h earns 2 * integral of G from 0 to h (the 2 for the two probes).
func (r *Ring) Shares() []float64 {
	if r.empty() {
		return nil
	}
	// The entries are the distinct positions; each acts as its first point,
	// the one with the lowest node index. gap[g] is the distance from entry
	// g+1 to the next entry clockwise, in positions.
	n := r.last
	owner := make([]int32, n)
	gap := make([]uint64, n)
	for g := range n {
		owner[g] = int32(r.ownerAt(g + 1))
		next := g + 2
		if next > n {
			next = 1 // round the top of the circle
		}
		gap[g] = uint64(r.pos(next) - r.pos(g+1)) // wraps mod 2^32
	}
	if n == 1 {
		gap[0] = 1 << 32
	}

	// Visit the gaps in increasing length (packed as gap<<26 | group, which
	// fits: gap <= 2^32, groups < 2^26) keeping running sums of the
	// half-cells below: earn(h) = 2 * integral_0^h G(x) dx
	//   = 2 * (h - sum_{h' < h} (h'h - h'^2/2) - #{h' >= h} h^2/2),
	// in fractions of the circle. (Equal lengths may count either side:
	// the two terms agree at h' = h.)
	order := make([]uint64, len(gap))
	for g, d := range gap {
		order[g] = d<<26 | uint64(g)
	}
	slices.Sort(order)
	earn := make([]float64, len(gap)) // earn of each of the group's two half-cells
	var sum1, sum2 float64
	above := float64(2 * len(gap))
	for _, e := range order {
		g := e & (1<<26 - 1)
		h := float64(e>>26) / (1 << 33) // half the gap, as a fraction of the circle
		earn[g] = 2 * (h - (h*sum1 - sum2/2) - above*h*h/2)
		sum1 += 2 * h
		sum2 += 2 * h * h
		above -= 2
	}
	shares := make([]float64, len(r.nodes))
	for g := range gap {
		prev := (g + len(gap) - 1) % len(gap)
		shares[owner[g]] += earn[g] + earn[prev] // the half-cells after and before the group
	}
	return shares
}
