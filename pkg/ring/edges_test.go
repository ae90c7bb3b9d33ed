package ring

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// TestPlacementBlockNearMaxInt64:
// Splits ending at or near math.MaxInt64, with block sizes from 1 byte to
// above 2^62, agree with a per-block count of their bytes (most bytes,
// lowest index on a tie) and never overflow; one byte past the end is
// ErrOverflow.
func TestPlacementBlockNearMaxInt64(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	sizes := []int64{1, 3, 128 << 20, 1 << 62, math.MaxInt64 / 3, math.MaxInt64/2 + 1, math.MaxInt64}
	for range 20000 {
		bs := sizes[rng.IntN(len(sizes))]
		if rng.IntN(2) == 0 {
			bs = 1 + rng.Int64N(math.MaxInt64)
		}
		// A split of at most ~4 blocks (and 1 << 40 bytes) that ends at most
		// 1000 bytes before MaxInt64.
		length := 1 + rng.Int64N(min(bs, 1<<38)*4)
		end := math.MaxInt64 - rng.Int64N(1000)
		if end-length < 0 {
			continue
		}
		off := end - length
		want, most := int64(-1), int64(0)
		for blk := off / bs; blk <= (end-1)/bs; blk++ {
			lo := max(off, blk*bs)
			hi := end
			if blk < (end-1)/bs {
				hi = (blk + 1) * bs
			}
			if n := hi - lo; n > most {
				want, most = blk, n
			}
		}
		got, err := PlacementBlock(off, length, bs)
		if err != nil || got != want {
			t.Fatalf("PlacementBlock(%d, %d, %d) = %d, %v; per-block count %d", off, length, bs, got, err, want)
		}
	}
	if _, err := PlacementBlock(math.MaxInt64, 1, 128<<20); !errors.Is(err, ErrOverflow) {
		t.Errorf("one byte past MaxInt64: %v, want ErrOverflow", err)
	}
	if b, err := PlacementBlock(math.MaxInt64-1, 1, 1); err != nil || b != math.MaxInt64-1 {
		t.Errorf("last byte with 1-byte blocks: %d, %v", b, err)
	}
}
