package ring

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestBlockKey(t *testing.T) {
	if got, want := BlockKey("s3://bucket/t/part-0.parquet", 3), "s3://bucket/t/part-0.parquet#3"; got != want {
		t.Errorf("BlockKey = %q, want %q", got, want)
	}
	if got, want := BlockKey("file:///data/x", 0), "file:///data/x#0"; got != want {
		t.Errorf("BlockKey = %q, want %q", got, want)
	}
	if got, want := string(AppendBlockKey([]byte("pre:"), "s3://b/k", 12345678901)), "pre:s3://b/k#12345678901"; got != want {
		t.Errorf("AppendBlockKey = %q, want %q", got, want)
	}
}

func TestPlacementBlock(t *testing.T) {
	const max = math.MaxInt64
	tests := []struct {
		name                    string
		offset, length, blockSz int64
		want                    int64
		err                     error
	}{
		{"inside block 0", 0, 10, 100, 0, nil},
		{"inside block 3", 310, 20, 100, 3, nil},
		{"one byte at the end of block 0", 99, 1, 100, 0, nil},
		{"one byte at the start of block 1", 100, 1, 100, 1, nil},
		{"whole block 1", 100, 100, 100, 1, nil},
		{"more in the first block", 94, 10, 100, 0, nil},
		{"more in the second block", 96, 10, 100, 1, nil},
		{"equal halves: the lower block", 95, 10, 100, 0, nil},
		{"a whole block beats partial ends", 50, 300, 100, 1, nil},
		{"first block whole too: the lower", 0, 300, 100, 0, nil},
		{"only the last block is whole", 190, 210, 100, 2, nil},
		{"whole blocks beat a long tail", 199, 181, 100, 2, nil}, // 1 | 100 | 80
		{"tail wins over a short head", 199, 101, 100, 2, nil},
		{"ends at MaxInt64", max - 10, 10, 100, (max - 1) / 100, nil}, // 3 | 7
		{"block size MaxInt64", 5, max - 5, max, 0, nil},
		{"block size 1: the first byte", 7, 3, 1, 7, nil},
		{"negative offset", -1, 10, 100, 0, ErrNegativeOffset},
		{"zero length", 0, 0, 100, 0, ErrBadLength},
		{"negative length", 0, -5, 100, 0, ErrBadLength},
		{"zero block size", 0, 10, 0, 0, ErrBadBlockSize},
		{"negative block size", 0, 10, -100, 0, ErrBadBlockSize},
		{"offset+length overflows", max - 10, 11, 100, 0, ErrOverflow},
		{"huge both", max, max, 100, 0, ErrOverflow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PlacementBlock(tt.offset, tt.length, tt.blockSz)
			if !errors.Is(err, tt.err) {
				t.Fatalf("PlacementBlock(%d, %d, %d): error %v, want %v", tt.offset, tt.length, tt.blockSz, err, tt.err)
			}
			if got != tt.want {
				t.Fatalf("PlacementBlock(%d, %d, %d) = %d, want %d", tt.offset, tt.length, tt.blockSz, got, tt.want)
			}
		})
	}
}

// TestPlacementBlockBruteForce counts the bytes in each block one by one.
func TestPlacementBlockBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for range 20000 {
		bs := 1 + rng.Int64N(50)
		off := rng.Int64N(500)
		length := 1 + rng.Int64N(300)
		bytes := map[int64]int64{}
		for b := off; b < off+length; b++ {
			bytes[b/bs]++
		}
		want, most := int64(-1), int64(0)
		for blk := off / bs; blk <= (off+length-1)/bs; blk++ {
			if bytes[blk] > most {
				want, most = blk, bytes[blk]
			}
		}
		got, err := PlacementBlock(off, length, bs)
		if err != nil || got != want {
			t.Fatalf("PlacementBlock(%d, %d, %d) = %d, %v; brute force %d", off, length, bs, got, err, want)
		}
	}
}

func TestPlacementKey(t *testing.T) {
	// [130 MiB, 330 MiB): 126 MiB in block 1, 74 MiB in block 2.
	got, err := PlacementKey("s3://b/t/p.parquet", 130<<20, 200<<20, 128<<20)
	if err != nil || got != "s3://b/t/p.parquet#1" {
		t.Errorf("PlacementKey = %q, %v, want s3://b/t/p.parquet#1", got, err)
	}
	if _, err := PlacementKey("", 0, 1, 1); !errors.Is(err, ErrEmptyURI) {
		t.Errorf("PlacementKey with empty uri: %v, want ErrEmptyURI", err)
	}
	if _, err := PlacementKey("s3://b/k", -1, 1, 1); !errors.Is(err, ErrNegativeOffset) {
		t.Errorf("PlacementKey with negative offset: %v, want ErrNegativeOffset", err)
	}
}
