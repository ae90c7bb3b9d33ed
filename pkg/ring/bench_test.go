package ring

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// The benchmarks compare the ring with the groupcache-style baseline
// (baseline_test.go: 100 replicas, CRC-32, binary search) in the same run;
// the machine is shared and noisy, so read the ratios.
//
//	go test -run '^$' -bench . -benchtime 2s ./pkg/ring

// benchKeys returns n block keys of a synthetic table, shuffled so that
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

// weightOne returns weight-1 nodes named ids, on racks rack-(i mod racks)
// when racks > 0.
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

var (
	benchSink string
	benchHash uint64
)

// BenchmarkOwner: one owner lookup. "hot" cycles over 4,096 keys, so keys
// and the touched parts of the ring stay in cache (a scheduler placing the
// tasks of one job); "cold" cycles over 2^19 keys, so most lookups also miss
// the CPU caches on the key and on the ring's points. (Key counts are powers
// of two so picking the next key is a mask, not a division.)
func BenchmarkOwner(b *testing.B) {
	for _, set := range []struct {
		name string
		keys []string
	}{{"hot", benchKeys(1 << 12)}, {"cold", millionKeys()[:1<<19]}} {
		keys := set.keys
		// The key's hash alone: the floor under any lookup, and a gauge
		// of how loaded the machine is.
		b.Run(set.name+"/xxhash-only", func(b *testing.B) {
			i := 0
			for b.Loop() {
				benchHash += xxhash.Sum64String(keys[i&(len(keys)-1)])
				i++
			}
		})
		for _, n := range []int{10, 100, 1000} {
			ids := nodeIDs(n)
			r, err := New(weightOne(ids, 0), Config{})
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%s/ring/nodes=%d", set.name, n), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					benchSink = r.Owner(keys[i&(len(keys)-1)]).ID
					i++
				}
			})
			g := newGroupcacheMap(100, ids...)
			b.Run(fmt.Sprintf("%s/groupcache/nodes=%d", set.name, n), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					benchSink = g.Get(keys[i&(len(keys)-1)])
					i++
				}
			})
		}
	}
}

// BenchmarkOwners: preference lists of 3, plain and rack-aware, and the
// bounded-load lookup, at 100 nodes on 5 racks (hot keys).
func BenchmarkOwners(b *testing.B) {
	keys := benchKeys(1 << 12)
	r, err := New(weightOne(nodeIDs(100), 5), Config{})
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]Node, 0, 3)
	b.Run("AppendOwners/n=3", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			dst = r.AppendOwners(dst[:0], keys[i&(len(keys)-1)], 3)
			i++
		}
	})
	b.Run("AppendOwnersRackAware/n=3", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			dst = r.AppendOwnersRackAware(dst[:0], keys[i&(len(keys)-1)], 3)
			i++
		}
	})
	loads := make([]int, r.Len())
	for i := range loads {
		loads[i] = 100 + i%7
	}
	load := func(i int) int { return loads[i] }
	b.Run("OwnerBounded/c=1.25", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			n, _ := r.OwnerBounded(keys[i&(len(keys)-1)], load, 100*103, 1.25)
			benchSink = n.ID
			i++
		}
	})
}

// BenchmarkNew: building a ring (default VNodes) against building the
// baseline; the ring's size is reported as MB and points.
func BenchmarkNew(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		ids := nodeIDs(n)
		nodes := weightOne(ids, 0)
		b.Run(fmt.Sprintf("ring/nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var r *Ring
			for b.Loop() {
				var err error
				if r, err = New(nodes, Config{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(r.SizeBytes())/1e6, "MB")
			b.ReportMetric(float64(r.Points()), "points")
		})
		b.Run(fmt.Sprintf("groupcache/nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				newGroupcacheMap(100, ids...)
			}
		})
	}
}

// BenchmarkBalance reports, for 100 nodes and 1M keys, the CoV and max/mean
// of keys per node, and the keys moved by adding a 101st node over the ideal
// 1/101, for the ring and the baseline. The figures do not depend on b.N.
func BenchmarkBalance(b *testing.B) {
	keys := millionKeys()
	ids := nodeIDs(101)
	r100, err := New(weightOne(ids[:100], 0), Config{})
	if err != nil {
		b.Fatal(err)
	}
	r101, err := New(weightOne(ids, 0), Config{})
	if err != nil {
		b.Fatal(err)
	}
	g100, g101 := newGroupcacheMap(100, ids[:100]...), newGroupcacheMap(100, ids...)
	for _, c := range []struct {
		name          string
		before, after func(string) string
	}{
		{"ring", func(k string) string { return r100.Owner(k).ID }, func(k string) string { return r101.Owner(k).ID }},
		{"groupcache", g100.Get, g101.Get},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() { // the figures are computed once, below; ns/op means nothing here
			}
			counts := map[string]float64{}
			moved := 0
			for _, k := range keys {
				o := c.before(k)
				counts[o]++
				if c.after(k) != o {
					moved++
				}
			}
			xs := make([]float64, 0, len(counts))
			for _, v := range counts {
				xs = append(xs, v)
			}
			for len(xs) < 100 {
				xs = append(xs, 0) // a node that got no key
			}
			cov, mm := balance(xs)
			b.ReportMetric(100*cov, "CoV%")
			b.ReportMetric(mm, "max/mean")
			b.ReportMetric(float64(moved)/float64(len(keys))*101, "moved/ideal")
			b.ReportMetric(100*math.Sqrt(100/float64(len(keys))), "noiseCoV%")
		})
	}
}
