package cache_test

import (
	"context"
	"math/rand/v2"
	"os"
	"sync"
	"testing"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/cache/cachetest"
)

// TestViewVerifiedStress (from a reviewer): ViewVerified and Get (RAM tier on, a cache smaller
// than the object so pages are evicted and refetched) race while resident
// pages are corrupted on disk under them. No read fails and no pin is
// leaked or dropped twice (CheckInvariants). Run with -race. (Bytes are
// not compared: a flip between the check and the copy is a race no
// checksum can close.)
func TestViewVerifiedStress(t *testing.T) {
	org := cachetest.NewOrigin()
	obj := org.PutGenerated("s3://b/stress", "v", 24*testPage)
	c := newDisk(t, org, t.TempDir(), 16, func(cfg *cache.Config) { cfg.MemoryBytes = 6 * testPage })
	ctx := context.Background()
	var readers, corrupter sync.WaitGroup
	stop := make(chan struct{})
	for w := range 3 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			r := rand.New(rand.NewPCG(uint64(w), 9))
			for i := 0; i < 1500; i++ {
				off := r.Int64N(obj.Size)
				n := min(obj.Size-off, 1+r.Int64N(4*testPage))
				var err error
				if w == 0 {
					_, err = c.Get(ctx, obj, off, n, make([]byte, n))
				} else {
					_, err = c.ViewVerified(ctx, obj, off, n, func([]byte) error { return nil })
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	corrupter.Add(1)
	go func() {
		defer corrupter.Done()
		r := rand.New(rand.NewPCG(7, 7))
		for {
			select {
			case <-stop:
				return
			default:
			}
			loc, ok := c.Locate(obj, r.Int64N(24))
			if !ok {
				continue
			}
			f, err := os.OpenFile(loc.Path, os.O_RDWR, 0)
			if err != nil {
				continue
			}
			at := loc.Data + int64(r.IntN(testPage))
			b := []byte{0}
			f.ReadAt(b, at)
			b[0] ^= 0x5a
			f.WriteAt(b, at)
			f.Close()
		}
	}()
	readers.Wait()
	close(stop)
	corrupter.Wait()
	n := c.Stats().CorruptPages
	t.Logf("corrupt pages detected: %d", n)
	if n == 0 {
		t.Fatal("no corrupt page detected: the test did not exercise the verification")
	}
	checkInv(t, c)
}
