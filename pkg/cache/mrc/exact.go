package mrc

// Exact computes exact LRU hit ratios for sizes over keys (Mattson's stack
// algorithm with a Fenwick tree, O(n log n) time and O(n) memory): the
// reference SHARDS is tested against, and a tool for offline analysis.
func Exact(keys []uint64, sizes []int) []float64 {
	n := len(keys)
	out := make([]float64, len(sizes))
	if n == 0 {
		return out
	}
	tree := newFenwick(n)
	last := make(map[uint64]int, 1024)
	dist := make([]int64, 0, 1024) // count of accesses by exact distance, grown on demand
	for i, k := range keys {
		if t, ok := last[k]; ok {
			d := int(tree.sumFrom(uint32(t + 1)))
			tree.add(uint32(t), -1)
			for len(dist) <= d {
				dist = append(dist, 0)
			}
			dist[d]++
		}
		last[k] = i
		tree.add(uint32(i), 1)
	}
	// prefix[s] = accesses with distance < s.
	for j, s := range sizes {
		var h int64
		for d := 0; d < s && d < len(dist); d++ {
			h += dist[d]
		}
		out[j] = float64(h) / float64(n)
	}
	return out
}
