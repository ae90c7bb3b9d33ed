package policy_test

import (
	"fmt"

	"github.com/locuscache/locus/pkg/cache/policy"
)

// The page cache's protocol for one request: Touch, and on a miss fetch the
// page, Insert its key and free every victim.
func Example() {
	p, err := policy.New(2, 1)
	if err != nil {
		panic(err)
	}
	stored := map[uint64]string{}
	var victims []uint64
	get := func(key uint64) string {
		if p.Touch(key) {
			return stored[key] + " (hit)"
		}
		page := fmt.Sprintf("page-%d", key) // fetch from the origin
		var ok bool
		victims, ok = p.Insert(key, victims[:0])
		for _, v := range victims {
			delete(stored, v)
		}
		if ok {
			stored[key] = page
		}
		return page + " (miss)"
	}
	fmt.Println(get(1))
	fmt.Println(get(1))
	fmt.Println(get(2))
	fmt.Println(p.Len(), p.Cap())
	// Output:
	// page-1 (miss)
	// page-1 (hit)
	// page-2 (miss)
	// 2 2
}

// ByName builds a policy from a configuration string.
func ExampleByName() {
	p, err := policy.ByName("lru", 100, 0)
	fmt.Println(p.Name(), p.Cap(), err)
	_, err = policy.ByName("fifo", 100, 0)
	fmt.Println(err)
	// Output:
	// lru 100 <nil>
	// policy: unknown policy "fifo" (known: locus, lru)
}
