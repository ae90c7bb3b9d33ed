package ring_test

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/locuscache/locus/pkg/ring"
)

func Example() {
	r, err := ring.New([]ring.Node{
		{ID: "cache-a", Rack: "r1", Weight: 1},
		{ID: "cache-b", Rack: "r1", Weight: 1},
		{ID: "cache-c", Rack: "r2", Weight: 1},
		{ID: "cache-d", Rack: "r3", Weight: 2}, // twice the capacity
	}, ring.Config{})
	if err != nil {
		panic(err)
	}
	// Where do the tasks reading this split run, and who caches it? The
	// split [200 MiB, 264 MiB) lies in block 1 of 128 MiB blocks.
	key, err := ring.PlacementKey("s3://lake/sales/part-00003.parquet", 200<<20, 64<<20, 128<<20)
	if err != nil {
		panic(err)
	}
	fmt.Println(key)
	fmt.Println("owner:", r.Owner(key).ID)
	fmt.Println("preference list:", list(r.Owners(key, 3)))
	// cache-a shares a rack with the owner: the rack-aware list skips it.
	fmt.Println("rack-aware:", list(r.OwnersRackAware(key, 3)))
	// Output:
	// s3://lake/sales/part-00003.parquet#1
	// owner: cache-b
	// preference list: cache-b@r1 cache-a@r1 cache-d@r3
	// rack-aware: cache-b@r1 cache-d@r3 cache-c@r2
}

func list(nodes []ring.Node) string {
	s := make([]string, len(nodes))
	for i, n := range nodes {
		s[i] = n.ID + "@" + n.Rack
	}
	return strings.Join(s, " ")
}

// The ring is immutable: rebuild it when membership changes and publish it
// through an atomic.Pointer, which readers load on every lookup.
func Example_publish() {
	var current atomic.Pointer[ring.Ring]
	members := []ring.Node{{ID: "n1", Weight: 1}, {ID: "n2", Weight: 1}}
	r, err := ring.New(members, ring.Config{})
	if err != nil {
		panic(err)
	}
	current.Store(r)

	key := ring.BlockKey("s3://lake/t/f.parquet", 0)
	before := current.Load().Owner(key).ID

	// n3 joins: build a new ring from the new member set, then swap it in.
	members = append(members, ring.Node{ID: "n3", Weight: 1})
	r, err = ring.New(members, ring.Config{})
	if err != nil {
		panic(err)
	}
	current.Store(r)
	after := current.Load().Owner(key).ID
	// A key either stays or moves to the newcomer.
	fmt.Println(before == after || after == "n3")
	// Output: true
}

func ExampleRing_OwnerBounded() {
	r, err := ring.New([]ring.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 1}, {ID: "c", Weight: 1}}, ring.Config{})
	if err != nil {
		panic(err)
	}
	// Place 300 tasks with at most 25% over the fair share per node.
	loads := make([]int, r.Len())
	for i := range 300 {
		n, err := r.OwnerBounded(fmt.Sprintf("task-%d", i), func(node int) int { return loads[node] }, i, 1.25)
		if err != nil {
			panic(err)
		}
		idx, _ := r.Index(n.ID)
		loads[idx]++
	}
	fmt.Println(max(loads[0], loads[1], loads[2]) <= 125)
	// Output: true
}

func ExamplePlacementBlock() {
	const blockSize = 128 << 20
	// 100 MiB in block 0 and 28 MiB in block 1: block 0.
	b, _ := ring.PlacementBlock(28<<20, 128<<20, blockSize)
	fmt.Println(b)
	// Equal halves: the lower block.
	b, _ = ring.PlacementBlock(blockSize-10, 20, blockSize)
	fmt.Println(b)
	_, err := ring.PlacementBlock(-1, 10, blockSize)
	fmt.Println(err)
	// Output:
	// 0
	// 0
	// ring: negative split offset: offset -1
}
