package ring

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// refRing is the brute-force reference: every point in a plain list, and a
// key's preference order computed by scoring every point.
type refRing struct {
	nodes  []Node // sorted by ID
	points []refPoint
	hash   func([]byte) uint64
}

type refPoint struct {
	pos  uint32
	node int
}

func newRefRing(nodes []Node, vnodes int, hash func([]byte) uint64) *refRing {
	if hash == nil {
		hash = xxhash.Sum64
	}
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b Node) int { return cmp.Compare(a.ID, b.ID) })
	ref := &refRing{nodes: sorted, hash: hash}
	for i, n := range sorted {
		count := max(1, int(math.Round(n.Weight*float64(vnodes))))
		for j := range count {
			ref.points = append(ref.points, refPoint{uint32(hash([]byte(n.ID+"#"+strconv.Itoa(j))) >> 32), i})
		}
	}
	return ref
}

// circ is the distance between two positions around the circle.
func circ(a, b uint32) uint32 { return min(a-b, b-a) }

// order returns the node indices in key's preference order: by the distance
// from the nearer probe to the node's nearest point, then by node index.
func (ref *refRing) order(key string) []int {
	h := ref.hash([]byte(key))
	p1, p2 := uint32(h>>32), uint32(h)
	best := make([]uint64, len(ref.nodes))
	for i := range best {
		best[i] = math.MaxUint64
	}
	for _, pt := range ref.points {
		d := uint64(min(circ(p1, pt.pos), circ(p2, pt.pos)))
		best[pt.node] = min(best[pt.node], d)
	}
	idx := make([]int, len(ref.nodes))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(best[a], best[b]), cmp.Compare(a, b))
	})
	return idx
}

// rackAware applies the rack-aware rule to a full preference order.
func (ref *refRing) rackAware(order []int, n int) []int {
	n = min(n, len(order))
	racks := map[string]bool{}
	for _, nd := range ref.nodes {
		racks[nd.Rack] = false
	}
	used := 0
	chosen := map[int]bool{}
	var out []int
	for _, o := range order {
		if len(out) == n || used == len(racks) {
			break
		}
		if r := ref.nodes[o].Rack; !racks[r] {
			racks[r] = true
			used++
			out = append(out, o)
			chosen[o] = true
		}
	}
	for _, o := range order {
		if len(out) == n {
			break
		}
		if !chosen[o] {
			out = append(out, o)
		}
	}
	return out
}

func ids(nodes []Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}

// skewHash crowds every point into a small part of the circle, so lookups
// take the crowded-bucket and wrap-around paths.
func skewHash(b []byte) uint64 {
	h := xxhash.Sum64(b)
	return h>>40<<32 | h&0xffffffff // high probe and points in [0, 2^24)
}

// collideHash gives only 64 distinct positions, so many points of
// different nodes share a position and ties decide.
func collideHash(b []byte) uint64 {
	h := xxhash.Sum64(b)
	return (h>>32%64)<<26<<32 | uint64(uint32(h)%64)<<26
}

// TestLookupMatchesBruteForce compares Owner, OwnerIndex, Owners,
// OwnersRackAware and AppendOwners with the brute-force reference on random
// rings: sizes, weights, racks and hashes (including skewed and colliding
// ones) vary.
func TestLookupMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	hashes := []struct {
		name string
		fn   func([]byte) uint64
	}{{"xxhash", nil}, {"skewed", skewHash}, {"colliding", collideHash}}
	for trial := range 60 {
		h := hashes[trial%len(hashes)]
		nNodes := 1 + rng.IntN(40)
		vnodes := 1 + rng.IntN(64)
		racks := rng.IntN(6)
		nodes := weightOne(nodeIDs(nNodes), racks)
		for i := range nodes {
			if rng.IntN(3) == 0 {
				nodes[i].Weight = 0.1 + 3*rng.Float64()
			}
		}
		r, err := New(nodes, Config{VNodes: vnodes, Hash: h.fn})
		if err != nil {
			t.Fatal(err)
		}
		ref := newRefRing(nodes, vnodes, h.fn)
		name := fmt.Sprintf("trial %d (%s, %d nodes, %d vnodes, %d racks)", trial, h.name, nNodes, vnodes, racks)
		if len(ref.points) != r.Points() {
			t.Fatalf("%s: Points() = %d, reference has %d", name, r.Points(), len(ref.points))
		}
		var dst []Node
		for k := range 300 {
			key := "s3://bucket/t/" + strconv.Itoa(trial) + "/" + strconv.Itoa(k)
			order := ref.order(key)
			if got, want := r.OwnerIndex(key), order[0]; got != want {
				t.Fatalf("%s: OwnerIndex(%q) = %d, brute force %d", name, key, got, want)
			}
			if got, want := r.Owner(key), ref.nodes[order[0]]; got != want {
				t.Fatalf("%s: Owner(%q) = %v, brute force %v", name, key, got, want)
			}
			n := 1 + rng.IntN(nNodes+2)
			want := make([]Node, 0, n)
			for _, o := range order[:min(n, len(order))] {
				want = append(want, ref.nodes[o])
			}
			if got := r.Owners(key, n); !slices.Equal(got, want) {
				t.Fatalf("%s: Owners(%q, %d) = %v, brute force %v", name, key, n, ids(got), ids(want))
			}
			dst = r.AppendOwners(dst[:0], key, n)
			if !slices.Equal(dst, want) {
				t.Fatalf("%s: AppendOwners(%q, %d) = %v, brute force %v", name, key, n, ids(dst), ids(want))
			}
			want = want[:0]
			for _, o := range ref.rackAware(order, n) {
				want = append(want, ref.nodes[o])
			}
			if got := r.OwnersRackAware(key, n); !slices.Equal(got, want) {
				t.Fatalf("%s: OwnersRackAware(%q, %d) = %v, brute force %v", name, key, n, ids(got), ids(want))
			}
		}
	}
}

// TestRackAwareDistinct: with at least n racks the rack-aware list is on n
// distinct racks; with fewer, its first entries cover every rack.
func TestRackAwareDistinct(t *testing.T) {
	for _, c := range []struct{ nodes, racks, n int }{
		{12, 3, 3}, {12, 3, 5}, {30, 7, 3}, {30, 7, 7}, {30, 7, 9}, {100, 10, 4}, {5, 5, 5}, {6, 1, 3},
	} {
		r, err := New(weightOne(nodeIDs(c.nodes), c.racks), Config{VNodes: 128})
		if err != nil {
			t.Fatal(err)
		}
		for k := range 2000 {
			key := "key-" + strconv.Itoa(k)
			got := r.OwnersRackAware(key, c.n)
			if len(got) != c.n {
				t.Fatalf("%+v: OwnersRackAware(%q) has %d nodes, want %d", c, key, len(got), c.n)
			}
			if got[0] != r.Owner(key) {
				t.Fatalf("%+v: OwnersRackAware(%q) starts with %s, Owner is %s", c, key, got[0].ID, r.Owner(key).ID)
			}
			distinctNodes, distinctRacks := map[string]bool{}, map[string]bool{}
			for _, n := range got {
				distinctNodes[n.ID] = true
			}
			for _, n := range got[:min(c.n, c.racks)] {
				distinctRacks[n.Rack] = true
			}
			if len(distinctNodes) != c.n {
				t.Fatalf("%+v: OwnersRackAware(%q) = %v repeats a node", c, key, ids(got))
			}
			if want := min(c.n, c.racks); len(distinctRacks) != want {
				t.Fatalf("%+v: OwnersRackAware(%q) = %v: first %d entries on %d racks, want %d",
					c, key, ids(got), want, len(distinctRacks), want)
			}
		}
	}
}

var (
	keysOnce sync.Once
	keys1M   []string
)

// millionKeys returns 1,000,000 distinct block keys of a synthetic table.
func millionKeys() []string {
	keysOnce.Do(func() {
		keys1M = make([]string, 1_000_000)
		for i := range keys1M {
			keys1M[i] = BlockKey("s3://lake/events/day="+strconv.Itoa(i%365)+"/part-"+strconv.Itoa(i/365)+".parquet", int64(i%11))
		}
	})
	return keys1M
}

// owners returns OwnerIndex for every key, as node IDs.
func ownersOf(r *Ring, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = r.Owner(k).ID
	}
	return out
}

// keyHashes returns the default (xxhash) hashes of keys, so the movement
// tests can look up owners by hash (Owner is owner(hash(key))).
func keyHashes(keys []string) []uint64 {
	hs := make([]uint64, len(keys))
	for i, k := range keys {
		hs[i] = xxhash.Sum64String(k)
	}
	return hs
}

// TestJoinMovesOnlyNewcomersShare: adding one node to N moves only keys that
// go to the newcomer, and at most 1.05/(N+1) of 1M keys. By default N is
// sampled over 10..200; LOCUS_RING_SWEEP=1 runs every N from 10 to 200; under
// -short or -race, three N and fewer keys.
func TestJoinMovesOnlyNewcomersShare(t *testing.T) {
	keys := millionKeys()
	ns := []int{10, 16, 25, 50, 64, 100, 128, 150, 199, 200}
	switch {
	case os.Getenv("LOCUS_RING_SWEEP") != "":
		ns = ns[:0]
		for n := 10; n <= 200; n++ {
			ns = append(ns, n)
		}
	case testing.Short() || raceDetector:
		ns = []int{10, 64, 200}
		keys = keys[:200_000]
	}
	hs := keyHashes(keys)
	for _, n := range ns {
		ids := nodeIDs(n + 1)
		before, err := New(weightOne(ids[:n], 0), Config{})
		if err != nil {
			t.Fatal(err)
		}
		after, err := New(weightOne(ids, 0), Config{})
		if err != nil {
			t.Fatal(err)
		}
		newcomer, _ := after.Index(ids[n])
		moved := 0
		for i, h := range hs {
			a, b := before.owner(h), after.owner(h)
			// Node indices follow ID order; map before's index to after's.
			if b == newcomer {
				moved++
				continue
			}
			if before.nodes[a].ID != after.nodes[b].ID {
				t.Fatalf("N=%d: key %q moved from %s to %s, not to the newcomer %s",
					n, keys[i], before.nodes[a].ID, after.nodes[b].ID, ids[n])
			}
		}
		frac, ideal := float64(moved)/float64(len(keys)), 1/float64(n+1)
		t.Logf("N=%3d: moved %.5f, ideal %.5f, ratio %.4f", n, frac, ideal, frac/ideal)
		if frac > 1.05*ideal {
			t.Errorf("N=%d: adding one node moved %.5f of the keys, over 1.05/(N+1) = %.5f", n, frac, 1.05*ideal)
		}
	}
}

// TestLeaveMovesOnlyLeaversKeys: removing a node moves exactly its keys.
func TestLeaveMovesOnlyLeaversKeys(t *testing.T) {
	keys := millionKeys()[:200_000]
	if testing.Short() || raceDetector {
		keys = keys[:20_000]
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{2, 10, 57, 200} {
		nodes := weightOne(nodeIDs(n), 3)
		before, err := New(nodes, Config{})
		if err != nil {
			t.Fatal(err)
		}
		gone := rng.IntN(n)
		rest := slices.Delete(slices.Clone(nodes), gone, gone+1)
		after, err := New(rest, Config{})
		if err != nil {
			t.Fatal(err)
		}
		leaver := nodes[gone].ID
		for _, k := range keys {
			a, b := before.Owners(k, 3), after.Owners(k, 2)
			if a[0].ID != leaver && a[0] != b[0] {
				t.Fatalf("N=%d: key %q moved from %s to %s, though %s left", n, k, a[0].ID, b[0].ID, leaver)
			}
			// Preference lists lose the leaver and keep their order.
			a = slices.DeleteFunc(a, func(x Node) bool { return x.ID == leaver })
			if n > 3 && !slices.Equal(a[:2], b) {
				t.Fatalf("N=%d: Owners(%q) after %s left = %v, want %v", n, k, leaver, ids(b), ids(a[:2]))
			}
		}
	}
}

// TestWeightChangeMovesOnlyThatNode: raising one node's weight moves keys
// only to it; its share follows its weight.
func TestWeightChangeMovesOnlyThatNode(t *testing.T) {
	nodes := weightOne(nodeIDs(20), 0)
	before, err := New(nodes, Config{})
	if err != nil {
		t.Fatal(err)
	}
	nodes[7].Weight = 2
	after, err := New(nodes, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range millionKeys()[:100_000] {
		if a, b := before.Owner(k), after.Owner(k); a.ID != b.ID && b.ID != nodes[7].ID {
			t.Fatalf("key %q moved from %s to %s when only %s's weight changed", k, a.ID, b.ID, nodes[7].ID)
		}
	}
	shares := after.Shares()
	i, _ := after.Index(nodes[7].ID)
	if want := 2.0 / 21; math.Abs(shares[i]/want-1) > 0.05 {
		t.Errorf("weight-2 node of 20 has share %.4f, want about %.4f", shares[i], want)
	}
}

// TestWeightsShares: shares follow weights (the arc shares, no key noise).
func TestWeightsShares(t *testing.T) {
	nodes := []Node{{ID: "small", Weight: 0.5}, {ID: "one", Weight: 1}, {ID: "big", Weight: 3}, {ID: "other", Weight: 1}}
	r, err := New(nodes, Config{})
	if err != nil {
		t.Fatal(err)
	}
	shares := r.Shares()
	total := 0.0
	for _, n := range nodes {
		i, _ := r.Index(n.ID)
		want := n.Weight / 5.5
		if math.Abs(shares[i]/want-1) > 0.05 {
			t.Errorf("node %s (weight %v): share %.4f, want about %.4f", n.ID, n.Weight, shares[i], want)
		}
		total += shares[i]
	}
	if math.Abs(total-1) > 1e-9 {
		t.Errorf("shares add up to %v, want 1", total)
	}
}

// TestSharesMatchKeyCounts: Shares predicts the fraction of keys each node
// gets, within sampling noise.
func TestSharesMatchKeyCounts(t *testing.T) {
	r, err := New(weightOne(nodeIDs(12), 0), Config{VNodes: 8})
	if err != nil {
		t.Fatal(err)
	}
	keys := millionKeys()
	counts := make([]float64, r.Len())
	for _, k := range keys {
		counts[r.OwnerIndex(k)]++
	}
	for i, s := range r.Shares() {
		want := s * float64(len(keys))
		if z := (counts[i] - want) / math.Sqrt(want); math.Abs(z) > 5 {
			t.Errorf("node %d: %v keys, Shares predicts %.0f (z = %.1f)", i, counts[i], want, z)
		}
	}
}

// balance returns the coefficient of variation and max/mean of counts.
func balance(counts []float64) (cov, maxOverMean float64) {
	mean, peak := 0.0, 0.0
	for _, c := range counts {
		mean += c
		peak = max(peak, c)
	}
	mean /= float64(len(counts))
	v := 0.0
	for _, c := range counts {
		v += (c - mean) * (c - mean)
	}
	return math.Sqrt(v/float64(len(counts))) / mean, peak / mean
}

// TestBalance100: at 100 nodes with the default VNodes, keys per node over
// 1M keys have a CoV of at most 2% and max/mean at most 1.10.
func TestBalance100(t *testing.T) {
	r, err := New(weightOne(nodeIDs(100), 0), Config{})
	if err != nil {
		t.Fatal(err)
	}
	keys := millionKeys()
	counts := make([]float64, r.Len())
	for _, k := range keys {
		counts[r.OwnerIndex(k)]++
	}
	cov, mm := balance(counts)
	arcCov, arcMM := balance(r.Shares())
	t.Logf("100 nodes, %d vnodes, %d keys: CoV %.4f, max/mean %.4f (sampling noise alone %.4f); arc shares: CoV %.4f, max/mean %.4f",
		r.VNodes(), len(keys), cov, mm, math.Sqrt(100/float64(len(keys))), arcCov, arcMM)
	if cov > 0.02 {
		t.Errorf("CoV of keys per node = %.4f, want <= 0.02", cov)
	}
	if mm > 1.10 {
		t.Errorf("max/mean keys per node = %.4f, want <= 1.10", mm)
	}
}
