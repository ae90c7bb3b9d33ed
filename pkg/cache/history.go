package cache

import (
	"math/bits"
	"sync"
)

// history remembers which pages left the cache, for miss classification.
// It is two Bloom filters used in turn: inserts go to the current one; when
// it has taken its share (half the history), the older one is cleared and
// becomes current. A lookup checks both, so a page is remembered for
// between one half and the whole history window. At 10 bits and 4 probes
// per entry about 1.5% of cold misses are misfiled as capacity misses.
//
// Three kinds of fingerprint share the filters: evicted pages (by object
// and page), invalidated pages (by URI and page, version left out, so the
// next version's miss finds it) and pages dropped as corrupt. The last two
// are looked up only while the filters hold some of their kind (marks), so
// a node that never invalidated or found a corrupt page files none of its
// misses under those causes.
type history struct {
	mu    sync.Mutex // guards everything below
	gens  [2][]uint64
	cur   int
	count int // inserts into gens[cur]
	per   int // inserts per generation
	mask  uint64
	// marks[k][g] counts the fingerprints of kind k (markInvalidated,
	// markCorrupt) in gens[g]. classify looks a kind up only while its
	// count is not 0: the filters' false positives would otherwise file
	// cold misses as invalidated or corrupt on a node that never
	// invalidated or dropped a corrupt page (a false alarm on
	// locus_cache_misses_total{cause="corrupt"}).
	marks [2][2]int
}

// The kinds of mark counted in history.marks.
const (
	markInvalidated = iota
	markCorrupt
)

func newHistory(pages int) *history {
	per := max(pages/2, 1024)
	nbits := uint64(1) << bits.Len64(uint64(per*10-1)) // power of two >= 10 bits per entry
	h := &history{per: per, mask: nbits - 1}
	for i := range h.gens {
		h.gens[i] = make([]uint64, nbits/64)
	}
	return h
}

func evictedFP(o *object, page int64) uint64 {
	return mix64(o.hash ^ uint64(page)*0x9e3779b97f4a7c15)
}

func invalidatedFP(o *object, page int64) uint64 {
	return mix64(o.uriHash ^ uint64(page)*0xc2b2ae3d27d4eb4f ^ 0x5bd1e995)
}

// corruptFP marks a page dropped for a bad checksum, so that its next miss
// (a reader racing the refetch, or after a failed one) is a corrupt miss,
// not a cold one.
func corruptFP(o *object, page int64) uint64 {
	return mix64(o.hash ^ uint64(page)*0x9e3779b97f4a7c15 ^ 0x636f7272)
}

func (h *history) add(fp uint64) { h.addKind(fp, -1) }

// mark adds fp, a fingerprint of kind k (markInvalidated, markCorrupt).
func (h *history) mark(fp uint64, k int) { h.addKind(fp, k) }

func (h *history) addKind(fp uint64, k int) {
	h.mu.Lock()
	if h.count >= h.per {
		h.cur ^= 1
		clear(h.gens[h.cur])
		h.count = 0
		h.marks[markInvalidated][h.cur], h.marks[markCorrupt][h.cur] = 0, 0
	}
	if k >= 0 {
		h.marks[k][h.cur]++
	}
	g := h.gens[h.cur]
	a, b := fp, fp>>32|fp<<32
	for i := uint64(0); i < 4; i++ {
		bit := (a + i*b) & h.mask
		g[bit/64] |= 1 << (bit % 64)
	}
	h.count++
	h.mu.Unlock()
}

func (h *history) contains(fp uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	a, b := fp, fp>>32|fp<<32
outer:
	for _, g := range h.gens {
		for i := uint64(0); i < 4; i++ {
			bit := (a + i*b) & h.mask
			if g[bit/64]&(1<<(bit%64)) == 0 {
				continue outer
			}
		}
		return true
	}
	return false
}

func (h *history) bytes() int {
	return 2 * 8 * len(h.gens[0])
}

// classify returns the cause of a miss on page p of o. The filters keep no
// order: a page with two marks gets the first cause in this order, so a
// page evicted, cached again and then invalidated within the history
// window counts as a capacity miss (a page of a new version that was
// evicted is the commoner case, and is one).
func (h *history) classify(o *object, p int64) MissCause {
	switch {
	case h.contains(evictedFP(o, p)):
		return MissCapacity
	case o.replaced || (h.marked(markInvalidated) && h.contains(invalidatedFP(o, p))):
		return MissInvalidated
	case h.marked(markCorrupt) && h.contains(corruptFP(o, p)):
		return MissCorrupt
	}
	return MissCold
}

// marked reports whether the filters hold a fingerprint of kind k.
func (h *history) marked(k int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.marks[k][0]+h.marks[k][1] > 0
}

// mix64 is the splitmix64 finaliser: a bijection on uint64 that spreads
// every input bit over the output.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// unmix64 inverts mix64.
func unmix64(z uint64) uint64 {
	z = z ^ (z >> 31) ^ (z >> 62)
	z *= 0x319642b2d24d8ec3 // inverse of 0x94d049bb133111eb
	z = z ^ (z >> 27) ^ (z >> 54)
	z *= 0x96de1b173f119089 // inverse of 0xbf58476d1ce4e5b9
	return z ^ (z >> 30) ^ (z >> 60)
}
