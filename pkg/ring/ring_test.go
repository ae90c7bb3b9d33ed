package ring

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

func TestNewErrors(t *testing.T) {
	ok := Node{ID: "a", Weight: 1}
	tests := []struct {
		name  string
		nodes []Node
		cfg   Config
		want  error
	}{
		{"nil list", nil, Config{}, ErrNoNodes},
		{"empty list", []Node{}, Config{}, ErrNoNodes},
		{"empty id", []Node{ok, {ID: "", Weight: 1}}, Config{}, ErrEmptyID},
		{"duplicate id", []Node{ok, {ID: "b", Weight: 1}, {ID: "a", Weight: 2}}, Config{}, ErrDuplicateID},
		{"zero weight", []Node{{ID: "a"}}, Config{}, ErrBadWeight},
		{"negative weight", []Node{{ID: "a", Weight: -1}}, Config{}, ErrBadWeight},
		{"NaN weight", []Node{{ID: "a", Weight: math.NaN()}}, Config{}, ErrBadWeight},
		{"+Inf weight", []Node{{ID: "a", Weight: math.Inf(1)}}, Config{}, ErrBadWeight},
		{"-Inf weight", []Node{{ID: "a", Weight: math.Inf(-1)}}, Config{}, ErrBadWeight},
		{"huge weight", []Node{{ID: "a", Weight: 1e300}}, Config{}, ErrTooManyPoints},
		{"weights add up past MaxPoints", []Node{{ID: "a", Weight: 4e4}, {ID: "b", Weight: 4e4}}, Config{VNodes: 1 << 10}, ErrTooManyPoints},
		{"negative vnodes", []Node{ok}, Config{VNodes: -1}, ErrBadConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(tt.nodes, tt.cfg)
			if !errors.Is(err, tt.want) {
				t.Fatalf("New: got error %v, want %v", err, tt.want)
			}
			if r != nil {
				t.Fatalf("New returned a ring with error %v", err)
			}
		})
	}
}

func TestNewTooManyNodes(t *testing.T) {
	nodes := make([]Node, MaxNodes+1)
	for i := range nodes {
		nodes[i] = Node{ID: strconv.Itoa(i), Weight: 1}
	}
	if _, err := New(nodes, Config{VNodes: 1}); !errors.Is(err, ErrTooManyNodes) {
		t.Fatalf("New(%d nodes): got %v, want ErrTooManyNodes", len(nodes), err)
	}
	r, err := New(nodes[:MaxNodes], Config{VNodes: 1})
	if err != nil {
		t.Fatalf("New(MaxNodes nodes): %v", err)
	}
	if got := r.Owners("k", MaxNodes+5); len(got) != MaxNodes {
		t.Fatalf("Owners(k, all) on MaxNodes nodes: got %d nodes, want %d", len(got), MaxNodes)
	}
}

func TestConfigDefaults(t *testing.T) {
	r, err := New([]Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 0.5}, {ID: "c", Weight: 1e-9}}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if r.VNodes() != DefaultVNodes {
		t.Errorf("VNodes() = %d, want DefaultVNodes %d", r.VNodes(), DefaultVNodes)
	}
	// a: 2048, b: round(0.5*2048), c: at least one point.
	if want := DefaultVNodes + DefaultVNodes/2 + 1; r.Points() != want {
		t.Errorf("Points() = %d, want %d", r.Points(), want)
	}
	if r.SizeBytes() < 8*r.Points() {
		t.Errorf("SizeBytes() = %d, less than the points alone (%d)", r.SizeBytes(), 8*r.Points())
	}
}

// TestZeroRing: the zero Ring and a nil *Ring answer every call without
// panicking.
func TestZeroRing(t *testing.T) {
	for _, r := range []*Ring{nil, {}} {
		if got := r.Owner("k"); got != (Node{}) {
			t.Errorf("Owner on empty ring = %+v, want zero Node", got)
		}
		if got := r.OwnerIndex("k"); got != -1 {
			t.Errorf("OwnerIndex on empty ring = %d, want -1", got)
		}
		if got := r.Owners("k", 3); got != nil {
			t.Errorf("Owners on empty ring = %v, want nil", got)
		}
		if got := r.OwnersRackAware("k", 3); got != nil {
			t.Errorf("OwnersRackAware on empty ring = %v, want nil", got)
		}
		if got := r.AppendOwners([]Node{{ID: "x"}}, "k", 3); len(got) != 1 {
			t.Errorf("AppendOwners on empty ring = %v, want dst unchanged", got)
		}
		if _, err := r.OwnerBounded("k", func(int) int { return 0 }, 0, 1.25); !errors.Is(err, ErrEmptyRing) {
			t.Errorf("OwnerBounded on empty ring: got %v, want ErrEmptyRing", err)
		}
		if r.Len() != 0 || r.Points() != 0 || r.Nodes() != nil || r.Shares() != nil || r.Node(0) != (Node{}) {
			t.Errorf("accessors on empty ring are not empty")
		}
		if _, ok := r.Index("a"); ok {
			t.Errorf("Index on empty ring found a node")
		}
		if p1, p2 := r.Probes("k"); p1 != 0 || p2 != 0 {
			t.Errorf("Probes on empty ring = %d, %d", p1, p2)
		}
	}
}

func TestAccessors(t *testing.T) {
	in := []Node{{ID: "c", Rack: "r1", Weight: 1}, {ID: "a", Rack: "r2", Weight: 2}, {ID: "b", Weight: 0.5}}
	r, err := New(in, Config{VNodes: 16})
	if err != nil {
		t.Fatal(err)
	}
	in[0].ID = "changed" // New copied its input
	want := []Node{{ID: "a", Rack: "r2", Weight: 2}, {ID: "b", Weight: 0.5}, {ID: "c", Rack: "r1", Weight: 1}}
	if got := r.Nodes(); !slices.Equal(got, want) {
		t.Fatalf("Nodes() = %v, want %v (sorted by ID)", got, want)
	}
	r.Nodes()[0].ID = "mutated" // a copy
	for i, n := range want {
		if got := r.Node(i); got != n {
			t.Errorf("Node(%d) = %v, want %v", i, got, n)
		}
		if got, ok := r.Index(n.ID); !ok || got != i {
			t.Errorf("Index(%q) = %d, %v, want %d, true", n.ID, got, ok, i)
		}
	}
	if r.Node(-1) != (Node{}) || r.Node(3) != (Node{}) {
		t.Errorf("Node out of range is not the zero Node")
	}
	if _, ok := r.Index("zz"); ok {
		t.Errorf("Index of an unknown id reported ok")
	}
	if r.Len() != 3 || r.Points() != 32+8+16 {
		t.Errorf("Len, Points = %d, %d, want 3, 56", r.Len(), r.Points())
	}
	if got := r.Owners("k", 0); got != nil {
		t.Errorf("Owners(k, 0) = %v, want nil", got)
	}
	if got := r.Owners("k", -1); got != nil {
		t.Errorf("Owners(k, -1) = %v, want nil", got)
	}
	if got := r.Owners("k", 10); len(got) != 3 {
		t.Errorf("Owners(k, 10) on 3 nodes = %v, want all 3", got)
	}
}

// handHash places named virtual nodes at given positions and reads a key
// "k P1 P2" as the probes P1 and P2, so owners can be worked out by hand.
func handHash(points map[string]uint32) func([]byte) uint64 {
	return func(b []byte) uint64 {
		if p, ok := points[string(b)]; ok {
			return uint64(p) << 32
		}
		var p1, p2 uint32
		if _, err := fmt.Sscanf(string(b), "k %d %d", &p1, &p2); err != nil {
			panic(fmt.Sprintf("handHash: unexpected input %q", b))
		}
		return uint64(p1)<<32 | uint64(p2)
	}
}

// TestOwnersByHand works owners out by hand with an identity-like hash: ties
// (a#0 and c#1 share position 100), both probes, both directions, wrapping.
func TestOwnersByHand(t *testing.T) {
	cfg := Config{VNodes: 2, Hash: handHash(map[string]uint32{
		"a#0": 100, "a#1": 5000,
		"b#0": 1000, "b#1": 3000,
		"c#0": 2000, "c#1": 100,
	})}
	r, err := New([]Node{{ID: "c", Weight: 1}, {ID: "b", Weight: 1}, {ID: "a", Weight: 1}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key  string
		want string // preference order, all nodes
	}{
		{"k 150 4000", "acb"},              // 50 from a#0/c#1 (tie: a first), b#0 850 from p1
		{"k 4000 150", "acb"},              // the probes swapped: same
		{"k 2600 2600", "bca"},             // b#1 400, c#0 600, a#1 2400
		{"k 2400 9000", "cba"},             // c#0 400, b#1 600, a#1 4000 from p2
		{"k 4294967000 7000", "acb"},       // wraps: a#0/c#1 396 away, b#0 1296
		{"k 3000 3000", "bca"},             // exactly on b#1
		{"k 1500 1500", "bca"},             // b#0 and c#0 both 500 away: ID order
		{"k 3990 4000", "bac"},             // b#1 990 before a#1 1000 (p2), c#0 1990
		{"k 5000 100", "ac"},               // distance 0 from a's points and c#1: a first
		{"k 2147483748 2147483748", "abc"}, // half a turn from 100; a#1, b#1, c#0 nearer going back
	}
	for _, tt := range tests {
		var got string
		for _, n := range r.Owners(tt.key, 3) {
			got += n.ID
		}
		if got[:len(tt.want)] != tt.want {
			t.Errorf("Owners(%q, 3) = %s, want %s", tt.key, got, tt.want)
		}
		if o := r.Owner(tt.key); o.ID != tt.want[:1] {
			t.Errorf("Owner(%q) = %s, want %s", tt.key, o.ID, tt.want[:1])
		}
		p1, p2 := r.Probes(tt.key)
		if want := fmt.Sprintf("k %d %d", p1, p2); want != tt.key {
			t.Errorf("Probes(%q) = %d, %d", tt.key, p1, p2)
		}
	}
}

// TestOrderIndependent: a ring is a function of the member set only.
func TestOrderIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	nodes := weightOne(nodeIDs(50), 5)
	for i := range nodes {
		nodes[i].Weight = 0.5 + rng.Float64()
	}
	a, err := New(nodes, Config{VNodes: 64})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		shuffled := slices.Clone(nodes)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		b, err := New(shuffled, Config{VNodes: 64})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.points, b.points) || !slices.Equal(a.dups, b.dups) || !slices.Equal(a.table, b.table) || !slices.Equal(a.nodes, b.nodes) {
			t.Fatal("rings built from the same members in another order differ")
		}
		for k := range 1000 {
			key := "key-" + strconv.Itoa(k)
			if !slices.Equal(a.Owners(key, 3), b.Owners(key, 3)) {
				t.Fatalf("Owners(%q) differ between member orders", key)
			}
		}
	}
}

// TestPublishAtomically shows the intended use: readers load the current
// ring from an atomic.Pointer while a writer publishes rebuilt rings. Run
// with -race.
func TestPublishAtomically(t *testing.T) {
	var current atomic.Pointer[Ring]
	first, err := New(weightOne(nodeIDs(4), 0), Config{VNodes: 32})
	if err != nil {
		t.Fatal(err)
	}
	current.Store(first)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 2000 {
				r := current.Load()
				key := strconv.Itoa(g) + "/" + strconv.Itoa(k)
				if o := r.Owner(key); o.ID == "" {
					t.Errorf("Owner(%q) on a published ring is empty", key)
					return
				}
				_ = r.Owners(key, 2)
			}
		}()
	}
	for n := 5; n < 25; n++ {
		r, err := New(weightOne(nodeIDs(n), 0), Config{VNodes: 32})
		if err != nil {
			t.Fatal(err)
		}
		current.Store(r)
	}
	wg.Wait()
}

func TestIncDecimal(t *testing.T) {
	buf := []byte("x#0")
	for j := range 12345 {
		if got, want := string(buf), "x#"+strconv.Itoa(j); got != want {
			t.Fatalf("incDecimal step %d: got %q, want %q", j, got, want)
		}
		buf = incDecimal(buf, 2)
	}
}

func TestSortByPosition(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	a := make([]uint64, 10000)
	for i := range a {
		// Few distinct positions, so ties are common; the low bits record
		// the input order, which ties must keep.
		a[i] = uint64(rng.Uint32()%64)<<58 | uint64(rng.Uint32()%8)<<32 | uint64(i)
	}
	want := slices.Clone(a)
	slices.SortStableFunc(want, func(x, y uint64) int {
		switch {
		case x>>32 < y>>32:
			return -1
		case x>>32 > y>>32:
			return 1
		}
		return 0
	})
	if got := sortByPosition(a); !slices.Equal(got, want) {
		t.Fatal("sortByPosition differs from a stable sort by position")
	}
}
