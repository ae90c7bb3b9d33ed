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
	// Group the points by position; a group acts as its first point, the
	// one with the lowest node index. gap[g] is the distance from group g
	// to the next group clockwise, in positions.
	var owner []int32
	var gap []uint64
	first := -1
	for i := range r.points {
		if i > 0 && r.pos(i) == r.pos(i-1) {
			continue
		}
		if first < 0 {
			first = i
		} else {
			gap = append(gap, uint64(r.pos(i)-r.pos(i-1))) // the previous group's gap; wraps mod 2^32
		}
		owner = append(owner, int32(r.ownerAt(i)))
	}
	last := uint64(r.pos(first) - r.pos(len(r.points)-1)) // back round to the first group
	if len(owner) == 1 {
		last = 1 << 32
	}
	gap = append(gap, last)

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
