package ring

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
)

// benchKeys returns n block keys of a synthetic table, in a shuffled order so
// consecutive lookups land far apart on the circle.
func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = BlockKey(fmt.Sprintf("s3://lake/warehouse/sales/date=2024-%02d-%02d/part-%05d.parquet", i%12+1, i%28+1, i/7), int64(i%7))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return keys
}

func nodeIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "cache-" + strconv.Itoa(i)
	}
	return ids
}

func weightOne(ids []string, racks int) []Node {
	nodes := make([]Node, len(ids))
	for i, id := range ids {
		nodes[i] = Node{ID: id, Weight: 1}
		if racks > 0 {
			nodes[i].Rack = "rack-" + strconv.Itoa(i%racks)
		}
	}
	return nodes
}

var benchSink string

// BenchmarkOwner compares Ring.Owner (default VNodes, prefix index) with the
// groupcache-style baseline (100 replicas, binary search) in the same run.
func BenchmarkOwner(b *testing.B) {
	keys := benchKeys(1 << 16)
	for _, n := range []int{10, 100, 1000} {
		ids := nodeIDs(n)
		r, err := New(weightOne(ids, 0), Config{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("ring/nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				benchSink = r.Owner(keys[i&(len(keys)-1)]).ID
				i++
			}
		})
		g := newGroupcacheMap(100, ids...)
		b.Run(fmt.Sprintf("groupcache/nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				benchSink = g.Get(keys[i&(len(keys)-1)])
				i++
			}
		})
	}
}
