package policy

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// zipfKeys returns n keys drawn from a Zipf(1.01) over 8 x capacity keys,
// mixed as the page cache's xxhash'd keys are.
func zipfKeys(n, capacity int) []uint64 {
	rng := rand.New(rand.NewPCG(1, 1))
	z := rand.NewZipf(rng, 1.01, 1, uint64(8*capacity))
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = mix64(z.Uint64())
	}
	return keys
}

// BenchmarkAccess measures one request of the page cache's protocol (Touch,
// and Insert on a miss) on a Zipf stream, for the default policy and the LRU
// baseline in the same run: compare the ns/op of locus with lru's. The
// stream is warmed first, so allocs/op is the steady state (want 0).
func BenchmarkAccess(b *testing.B) {
	for _, capacity := range []int{1 << 10, 1 << 16, 1 << 20} {
		keys := zipfKeys(1<<20, capacity)
		for _, name := range allPolicies {
			b.Run(fmt.Sprintf("policy=%s/cap=%d", name, capacity), func(b *testing.B) {
				p := mustByName(b, name, capacity, 1)
				victims := make([]uint64, 0, 8)
				access := func(k uint64) {
					if !p.Touch(k) {
						victims, _ = p.Insert(k, victims[:0])
					}
				}
				for _, k := range keys {
					access(k)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					access(keys[i&(len(keys)-1)])
				}
			})
		}
	}
}

// BenchmarkTouchHit measures Touch of resident keys alone (a hit: the
// common case of a warm cache).
func BenchmarkTouchHit(b *testing.B) {
	const capacity = 1 << 16
	for _, name := range allPolicies {
		b.Run("policy="+name, func(b *testing.B) {
			p := mustByName(b, name, capacity, 1)
			var victims []uint64
			for round := 0; round < 3; round++ {
				for i := 0; i < capacity; i++ {
					if k := mix64(uint64(i)); !p.Touch(k) {
						victims, _ = p.Insert(k, victims[:0])
					}
				}
			}
			var resident []uint64
			for i := 0; i < capacity; i++ {
				if k := mix64(uint64(i)); p.Touch(k) {
					resident = append(resident, k)
				}
			}
			if len(resident) < capacity/2 {
				b.Fatalf("only %d of %d keys resident", len(resident), capacity)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p.Touch(resident[i%len(resident)])
			}
		})
	}
}

// heapBytes returns the live heap after a GC.
func heapBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestMemoryPerKey measures each policy's memory per resident key (after
// filling it) and holds the default policy to the engine's budget: well
// under 100 bytes per key for large caches. Small caches pay the tuner's
// fixed cost (six full-size shadows at most 2048 keys, five 2048-key
// shadows above, and an ARC one: about 0.6 MiB).
func TestMemoryPerKey(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 100 MiB")
	}
	for _, capacity := range []int{1 << 10, 1 << 16, 1 << 20} {
		for _, name := range allPolicies {
			before := heapBytes()
			p := mustByName(t, name, capacity, 1)
			var victims []uint64
			for i := 0; i < 2*capacity; i++ {
				k := mix64(uint64(i))
				if !p.Touch(k) {
					victims, _ = p.Insert(k, victims[:0])
				}
			}
			perKey := float64(heapBytes()-before) / float64(capacity)
			runtime.KeepAlive(p)
			t.Logf("%s cap=%d: %.1f bytes per resident key", name, capacity, perKey)
			if capacity == 1<<20 && perKey > 100 {
				t.Errorf("%s cap=%d: %.1f bytes per key, want <= 100", name, capacity, perKey)
			}
		}
	}
}
