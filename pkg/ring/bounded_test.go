package ring

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestOwnerBoundedErrors(t *testing.T) {
	r, err := New(weightOne(nodeIDs(3), 0), Config{VNodes: 16})
	if err != nil {
		t.Fatal(err)
	}
	zero := func(int) int { return 0 }
	tests := []struct {
		name  string
		load  func(int) int
		total int
		c     float64
		want  error
	}{
		{"c below 1", zero, 0, 0.99, ErrBadLoadFactor},
		{"c zero", zero, 0, 0, ErrBadLoadFactor},
		{"c NaN", zero, 0, math.NaN(), ErrBadLoadFactor},
		{"c +Inf", zero, 0, math.Inf(1), ErrBadLoadFactor},
		{"nil load", nil, 0, 1.25, ErrBadLoad},
		{"negative total", zero, -1, 1.25, ErrBadLoad},
		{"loads disagree with total", func(int) int { return 100 }, 0, 1.25, ErrNoCapacity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n, err := r.OwnerBounded("k", tt.load, tt.total, tt.c); !errors.Is(err, tt.want) || n != (Node{}) {
				t.Fatalf("OwnerBounded: got %v, %v, want zero Node, %v", n, err, tt.want)
			}
		})
	}
}

// TestOwnerBoundedMatchesDefinition: the first node in preference order below
// ceil(c * (total+1) * weight / sum of weights).
func TestOwnerBoundedMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for trial := range 40 {
		nodes := weightOne(nodeIDs(1+rng.IntN(12)), 0)
		wsum := 0.0
		for i := range nodes {
			nodes[i].Weight = 0.5 + rng.Float64()
			wsum += nodes[i].Weight
		}
		r, err := New(nodes, Config{VNodes: 32})
		if err != nil {
			t.Fatal(err)
		}
		loads := make([]int, r.Len())
		total := 0
		for i := range loads {
			loads[i] = rng.IntN(20)
			total += loads[i]
		}
		c := 1 + rng.Float64()
		for k := range 200 {
			key := strconv.Itoa(trial) + "/" + strconv.Itoa(k)
			var want Node
			for _, n := range r.Owners(key, r.Len()) {
				i, _ := r.Index(n.ID)
				if float64(loads[i]) < math.Ceil(c*float64(total+1)*n.Weight/wsum) {
					want = n
					break
				}
			}
			got, err := r.OwnerBounded(key, func(i int) int { return loads[i] }, total, c)
			if err != nil {
				t.Fatalf("OwnerBounded(%q): %v", key, err)
			}
			if got != want {
				t.Fatalf("trial %d: OwnerBounded(%q, c=%v) = %s, want %s", trial, key, c, got.ID, want.ID)
			}
		}
	}
}

// TestOwnerBoundedCapsLoad places keys one by one with c = 1.25: no node
// ever exceeds ceil(1.25 * mean), and most keys still land on their owner.
func TestOwnerBoundedCapsLoad(t *testing.T) {
	const nodes, keys, c = 20, 20_000, 1.25
	r, err := New(weightOne(nodeIDs(nodes), 0), Config{VNodes: 64})
	if err != nil {
		t.Fatal(err)
	}
	loads := make([]int, nodes)
	onOwner := 0
	for k := range keys {
		key := "task-" + strconv.Itoa(k)
		n, err := r.OwnerBounded(key, func(i int) int { return loads[i] }, k, c)
		if err != nil {
			t.Fatal(err)
		}
		i, _ := r.Index(n.ID)
		loads[i]++
		if n == r.Owner(key) {
			onOwner++
		}
		limit := int(math.Ceil(c * float64(k+1) / nodes))
		if loads[i] > limit {
			t.Fatalf("after %d keys node %s holds %d, over ceil(c*mean) = %d", k+1, n.ID, loads[i], limit)
		}
	}
	t.Logf("%d of %d keys on their owner (%.1f%%)", onOwner, keys, 100*float64(onOwner)/keys)
	if onOwner < keys*3/4 {
		t.Errorf("only %d of %d keys landed on their owner with c=%v", onOwner, keys, c)
	}
}

// TestOwnerBoundedNoAllocs: a lookup that passes few nodes does not allocate.
func TestOwnerBoundedNoAllocs(t *testing.T) {
	r, err := New(weightOne(nodeIDs(100), 0), Config{VNodes: 64})
	if err != nil {
		t.Fatal(err)
	}
	load := func(int) int { return 0 }
	if a := testing.AllocsPerRun(100, func() { _, _ = r.OwnerBounded("k", load, 0, 1.25) }); a != 0 {
		t.Errorf("OwnerBounded allocates %v times per call, want 0", a)
	}
}

// TestLookupNoAllocs: the lookups allocate nothing, on a default ring of
// 1,000 nodes (the acceptance: 0 allocations at 1,000 nodes) and with a
// custom hash.
func TestLookupNoAllocs(t *testing.T) {
	r, err := New(weightOne(nodeIDs(1000), 4), Config{})
	if err != nil {
		t.Fatal(err)
	}
	custom, err := New(weightOne(nodeIDs(10), 0), Config{VNodes: 64, Hash: skewHash})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]Node, 0, 16)
	for name, f := range map[string]func(){
		"Owner":                 func() { _ = r.Owner("s3://b/k#1") },
		"Owner custom hash":     func() { _ = custom.Owner("s3://b/k#1") },
		"AppendOwners 3":        func() { dst = r.AppendOwners(dst[:0], "s3://b/k#1", 3) },
		"AppendOwners 16":       func() { dst = r.AppendOwners(dst[:0], "s3://b/k#1", 16) },
		"AppendOwnersRackAware": func() { dst = r.AppendOwnersRackAware(dst[:0], "s3://b/k#1", 3) },
	} {
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s allocates %v times per call, want 0", name, a)
		}
	}
}
