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
	// one with the lowest node index.
	type group struct {
		owner int
		gap   float64 // to the next group, clockwise, as a fraction of the circle
	}
	var groups []group
	var first []uint32 // position of each group
	for i := range r.points {
		if i == 0 || r.pos(i) != r.pos(i-1) {
			groups = append(groups, group{owner: r.ownerAt(i)})
			first = append(first, r.pos(i))
		}
	}
	for g := range groups {
		next := first[(g+1)%len(groups)]
		gap := uint64(next - first[g]) // mod 2^32
		if len(groups) == 1 {
			gap = 1 << 32
		}
		groups[g].gap = float64(gap) / (1 << 32)
	}

	// Half-cells in increasing length, with prefix sums of h and h^2; each
	// gap gives two half-cells of half its length.
	halves := make([]float64, 0, 2*len(groups))
	for _, g := range groups {
		halves = append(halves, g.gap/2, g.gap/2)
	}
	slices.Sort(halves)
	sum1 := make([]float64, len(halves)+1)
	sum2 := make([]float64, len(halves)+1)
	for i, h := range halves {
		sum1[i+1] = sum1[i] + h
		sum2[i+1] = sum2[i] + h*h
	}
	// earn(h) = 2 * integral_0^h G(x) dx
	//         = 2 * (h - sum_{h' < h} (h'h - h'^2/2) - #{h' >= h} h^2/2).
	earn := func(h float64) float64 {
		k, _ := slices.BinarySearch(halves, h) // halves[:k] < h
		below := h*sum1[k] - sum2[k]/2
		above := float64(len(halves)-k) * h * h / 2
		return 2 * (h - below - above)
	}
	shares := make([]float64, len(r.nodes))
	for g, gr := range groups {
		prev := groups[(g+len(groups)-1)%len(groups)]
		shares[gr.owner] += earn(gr.gap/2) + earn(prev.gap/2)
	}
	return shares
}
