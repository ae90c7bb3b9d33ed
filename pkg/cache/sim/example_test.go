package sim_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/locuscache/locus/pkg/cache/sim"
)

// Replay a small trace through LRU and the offline optimum at two sizes and
// print the table locusctl cache-sim prints.
func ExampleRun() {
	trace := strings.Repeat("1\n2\n3\n", 10) // a loop over 3 keys
	t, err := sim.Read(strings.NewReader(trace), sim.FormatKeys, "loop3")
	if err != nil {
		panic(err)
	}
	rs, err := sim.Run(t, sim.Options{Policies: []string{"lru", sim.NameBelady}, Capacities: []int{2, 3}})
	if err != nil {
		panic(err)
	}
	for _, r := range rs {
		fmt.Printf("%s capacity %d: %d hits of %d\n", r.Policy, r.Capacity, r.Hits, r.Accesses)
	}
	sim.WriteTable(os.Stdout, "locus", rs)
	// Output:
	// lru capacity 2: 0 hits of 30
	// belady capacity 2: 18 hits of 30
	// lru capacity 3: 27 hits of 30
	// belady capacity 3: 27 hits of 30
	//   capacity  of keys     lru  belady
	//          2        -   0.00%  60.00%
	//          3        -  90.00%  90.00%
}
