package sim

import (
	arc "github.com/hashicorp/golang-lru/arc/v2"
	"github.com/maypok86/otter/v2"
)

// arcCache is the ARC baseline (Megiddo and Modha) from
// github.com/hashicorp/golang-lru/arc/v2 v2.0.7, held to its capacity.
// That version can hold capacity+1 keys: with T1 full (|T1| = p =
// capacity, T2 empty) a key that comes back from the ghost list B1 makes
// replace() evict from the empty T2, so nothing leaves before the key is
// added (lirs-sprite at 20 keys: 3,156 of 133,996 accesses over capacity,
// and an ARC hit ratio above Belady's on small traces). Access then
// evicts T1's oldest key, the one the paper's REPLACE takes there, without
// the ghost entry the paper would give it (the library has no call that
// adds one), so the baseline is measured at the capacity printed.
type arcCache struct {
	c        *arc.ARCCache[uint64, struct{}]
	capacity int
}

func newARC(capacity int) (Cache, error) {
	c, err := arc.NewARC[uint64, struct{}](capacity)
	if err != nil {
		return nil, err
	}
	return arcCache{c, capacity}, nil
}

func (a arcCache) Name() string { return NameARC }

func (a arcCache) Access(key uint64) bool {
	if _, ok := a.c.Get(key); ok {
		return true
	}
	a.c.Add(key, struct{}{})
	if a.c.Len() > a.capacity {
		// Keys lists T1 oldest first, then T2; T1 is full here. O(capacity),
		// on the rare accesses that overflow.
		if keys := a.c.Keys(); len(keys) > 0 {
			a.c.Remove(keys[0])
		}
	}
	return false
}

// otterCache is the W-TinyLFU baseline: github.com/maypok86/otter/v2 v2.4.0,
// an adaptive W-TinyLFU (Caffeine's design, hill-climbed window) with a fixed
// MaximumSize. Its maintenance (buffer drains, eviction, window adaptation)
// runs on the calling goroutine through a synchronous Executor, and CleanUp
// after every miss applies each write before the next access.
//
// Otter seeds its hashes and its 1-in-128 admission of popular candidates
// from a process-random source that cannot be set, so its hit ratio varies
// slightly from run to run (by hundredths of a point on the shared traces).
type otterCache struct {
	c *otter.Cache[uint64, struct{}]
}

func newOtter(capacity int) (Cache, error) {
	c, err := otter.New(&otter.Options[uint64, struct{}]{
		MaximumSize:     capacity,
		InitialCapacity: min(capacity, 1<<20),
		Executor:        func(fn func()) { fn() },
	})
	if err != nil {
		return nil, err
	}
	return otterCache{c}, nil
}

func (o otterCache) Name() string { return NameWTinyLFU }

func (o otterCache) Access(key uint64) bool {
	if _, ok := o.c.GetIfPresent(key); ok {
		return true
	}
	o.c.Set(key, struct{}{})
	o.c.CleanUp()
	return false
}
