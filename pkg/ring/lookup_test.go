package ring

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"
)

// refPred is pred by a plain binary search over the entries.
func refPred(r *Ring, p uint32) int {
	return sort.Search(r.last, func(i int) bool { return r.pos(i+1) > p })
}

// checkPred compares pred with refPred at random probes and at every
// position, one either side of it, and the ends of the circle.
func checkPred(t *testing.T, name string, r *Ring, rng *rand.Rand) {
	t.Helper()
	probes := []uint32{0, 1, 1<<32 - 2, 1<<32 - 1}
	for i := 1; i <= r.last; i++ {
		q := r.pos(i)
		probes = append(probes, q-1, q, q+1)
	}
	for range 2000 {
		probes = append(probes, rng.Uint32())
	}
	for _, p := range probes {
		if got, want := r.pred(p), refPred(r, p); got != want {
			t.Fatalf("%s: pred(%d) = %d, want %d", name, p, got, want)
		}
	}
}

// TestLookupEveryIndexLayout rebuilds the prefix index of random rings at
// every size from one bucket to twice the dense size, so lookups take the
// dense and interpolated paths, full and empty windows and the binary
// search fallback, and checks pred against a binary search and Owner
// against the brute-force reference.
func TestLookupEveryIndexLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	hashes := []struct {
		name string
		fn   func([]byte) uint64
	}{{"xxhash", nil}, {"skewed", skewHash}, {"colliding", collideHash}}
	for trial := range 12 {
		h := hashes[trial%len(hashes)]
		nodes := weightOne(nodeIDs(1+rng.IntN(30)), 0)
		vnodes := 1 + rng.IntN(100)
		r, err := New(nodes, Config{VNodes: vnodes, Hash: h.fn})
		if err != nil {
			t.Fatal(err)
		}
		ref := newRefRing(nodes, vnodes, h.fn)
		for tb := 0; tb <= indexBits(r.last)+1; tb++ {
			r.index(tb)
			name := fmt.Sprintf("trial %d (%s, %d positions, %d index bits, interpolated %v)", trial, h.name, r.last, tb, r.interp)
			checkPred(t, name, r, rng)
			for k := range 200 {
				key := "k/" + strconv.Itoa(trial) + "/" + strconv.Itoa(k)
				if got, want := r.OwnerIndex(key), ref.order(key)[0]; got != want {
					t.Fatalf("%s: OwnerIndex(%q) = %d, want %d", name, key, got, want)
				}
			}
		}
	}
}

// TestLookupLargeRing checks pred on a ring big enough for the interpolated
// index with its default layout (300 weight-1 nodes, 614,400 points; fewer
// probes under the race detector).
func TestLookupLargeRing(t *testing.T) {
	r, err := New(weightOne(nodeIDs(300), 0), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.interp {
		t.Fatalf("%d positions, %d buckets: want the interpolated index", r.last, len(r.table)-1)
	}
	rng := rand.New(rand.NewPCG(23, 24))
	n := 100000
	if raceDetector {
		n = 10000
	}
	for range n {
		p := rng.Uint32()
		if got, want := r.pred(p), refPred(r, p); got != want {
			t.Fatalf("pred(%d) = %d, want %d", p, got, want)
		}
	}
}
