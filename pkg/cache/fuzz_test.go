package cache_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/cache/cachetest"
)

// FuzzGet reads arbitrary ranges of objects of arbitrary sizes through a
// small RAM cache (so pages are evicted and refetched as the reads go) and
// checks each answer against a dumb reference: the origin's bytes for a
// valid range, ErrInvalidRange for a negative offset, a length under 1 or
// an overflowing end, ErrOutOfRange for an offset past the end,
// ErrShortBuffer for a destination shorter than what the range returns.
// Never a panic, never wrong bytes.
func FuzzGet(f *testing.F) {
	le := binary.LittleEndian
	seed := func(vals ...int64) []byte {
		var b []byte
		for _, v := range vals {
			b = le.AppendUint64(b, uint64(v))
		}
		return b
	}
	// Each read is three int64s: offset, length, destination size.
	f.Add(uint32(10*testPage+7), seed(0, 5*testPage, 5*testPage, testPage-1, 3*testPage+2, 3*testPage+2, -1, 10, 10, 10*testPage+7, 1, 1))
	f.Add(uint32(1), seed(0, 1, 1, 1, 0, 0, 0, math.MaxInt64, 1, math.MaxInt64, 1, 1))
	f.Add(uint32(0), seed(0, 1, 1))
	f.Add(uint32(3*testPage), seed(testPage, 2*testPage, testPage)) // a short destination
	f.Fuzz(func(t *testing.T, size uint32, ops []byte) {
		size %= 40 * testPage
		org := cachetest.NewOrigin()
		obj := org.PutGenerated("s3://b/fuzz", "v", int64(size))
		c, err := cache.New(cache.Config{Origin: org, MemoryBytes: 8 * testPage, PageSize: testPage, Shards: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for len(ops) >= 24 {
			off, n := int64(le.Uint64(ops)), int64(le.Uint64(ops[8:]))
			// The destination: up to 64 pages, from the input.
			dst := make([]byte, le.Uint64(ops[16:])%(64*testPage+1))
			ops = ops[24:]
			want, wantErr := reference(obj, off, n)
			if wantErr == nil && len(dst) < len(want) {
				wantErr = cache.ErrShortBuffer
			}
			res, err := c.Get(context.Background(), obj, off, n, dst)
			switch {
			case wantErr != nil:
				if !errors.Is(err, wantErr) {
					t.Fatalf("Get(%d, %d) of %d bytes: got %v, want %v", off, n, size, err, wantErr)
				}
			case err != nil:
				t.Fatalf("Get(%d, %d) of %d bytes: %v", off, n, size, err)
			case res.Bytes != int64(len(want)) || !bytes.Equal(dst[:res.Bytes], want):
				t.Fatalf("Get(%d, %d) of %d bytes: %d bytes, wrong or short (want %d)", off, n, size, res.Bytes, len(want))
			}
		}
	})
}

// reference is what a read of [off, off+n) of obj must return.
func reference(obj cache.Object, off, n int64) ([]byte, error) {
	switch {
	case off < 0 || n < 1 || off > math.MaxInt64-n:
		return nil, cache.ErrInvalidRange
	case off > obj.Size:
		return nil, cache.ErrOutOfRange
	}
	end := min(off+n, obj.Size)
	return cachetest.Generated(obj.URI, obj.Version, off, int(end-off)), nil
}
