package cache

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestClampRange(t *testing.T) {
	tests := []struct {
		size, off, length int64
		end               int64
		err               error
	}{
		{100, 0, 100, 100, nil},
		{100, 0, 1, 1, nil},
		{100, 10, 200, 100, nil},
		{100, 99, 1, 100, nil},
		{100, 100, 1, 100, nil}, // at the end: zero bytes
		{100, 101, 1, 0, ErrOutOfRange},
		{0, 0, 1, 0, nil},
		{100, -1, 1, 0, ErrInvalidRange},
		{100, 0, 0, 0, ErrInvalidRange},
		{100, 0, -1, 0, ErrInvalidRange},
		{100, 1, math.MaxInt64, 0, ErrInvalidRange},
		{100, 0, math.MaxInt64, 100, nil},
		{math.MaxInt64, math.MaxInt64 - 1, 1, math.MaxInt64, nil},
	}
	for _, tt := range tests {
		end, err := clampRange(tt.size, tt.off, tt.length)
		if !errors.Is(err, tt.err) || (err == nil && end != tt.end) {
			t.Errorf("clampRange(%d, %d, %d) = %d, %v; want %d, %v", tt.size, tt.off, tt.length, end, err, tt.end, tt.err)
		}
	}
}

// pageSpan, within and pageLen against a byte-by-byte reference.
func TestPageMathAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		ps := 512 * (1 + rng.IntN(4))
		size := rng.Int64N(int64(8 * ps))
		if size == 0 {
			continue
		}
		off := rng.Int64N(size)
		end := off + 1 + rng.Int64N(size-off)
		first, last := pageSpan(off, end, ps)
		counts := map[int64]int{}
		for b := off; b < end; b++ {
			counts[b/int64(ps)]++
		}
		if int64(len(counts)) != last-first+1 {
			t.Fatalf("size %d ps %d [%d,%d): span [%d,%d], brute force %d pages", size, ps, off, end, first, last, len(counts))
		}
		for p := first; p <= last; p++ {
			lo, hi := within(off, end, ps, p)
			if hi-lo != counts[p] || lo < 0 || hi > pageLen(size, ps, p) {
				t.Fatalf("size %d ps %d [%d,%d) page %d: within [%d,%d), want %d bytes inside a %d-byte page", size, ps, off, end, p, lo, hi, counts[p], pageLen(size, ps, p))
			}
		}
		var total int64
		for p := int64(0); p < numPages(size, ps); p++ {
			total += int64(pageLen(size, ps, p))
		}
		if total != size {
			t.Fatalf("size %d ps %d: page lengths add up to %d", size, ps, total)
		}
	}
}

func TestMixInverse(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100000; i++ {
		x := rng.Uint64()
		if y := unmix64(mix64(x)); y != x {
			t.Fatalf("unmix64(mix64(%#x)) = %#x", x, y)
		}
	}
	for _, x := range []uint64{0, 1, math.MaxUint64, 1 << 32} {
		if unmix64(mix64(x)) != x {
			t.Fatalf("unmix64(mix64(%#x)) != x", x)
		}
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	const ps = 4096
	h := pageHeader{uri: "s3://bucket/a/b.parquet", version: "\"etag\"", seq: 99, size: 3*ps + 10, page: 3, length: 10, crc: 0xdeadbeef}
	b := make([]byte, headerSize)
	encodeHeader(b, &h)
	got, uri, ver, ok := decodeHeader(b, ps)
	if !ok || string(uri) != h.uri || string(ver) != h.version || got.seq != h.seq || got.size != h.size ||
		got.page != h.page || got.length != h.length || got.crc != h.crc {
		t.Fatalf("round trip: %+v %q %q %v", got, uri, ver, ok)
	}
	// Any flipped byte is caught.
	for i := 0; i < headerSize; i++ {
		c := append([]byte(nil), b...)
		c[i] ^= 0x01
		if _, _, _, ok := decodeHeader(c, ps); ok {
			t.Fatalf("flipped byte %d not detected", i)
		}
	}
	// A zeroed (free) slot and impossible headers are refused.
	if _, _, _, ok := decodeHeader(make([]byte, headerSize), ps); ok {
		t.Fatal("zero header accepted")
	}
	for _, bad := range []pageHeader{
		{uri: "u", size: 10, page: 1, length: 10},      // page past the end
		{uri: "u", size: 3*ps + 1, page: 0, length: 5}, // wrong length
		{uri: "", size: 10, page: 0, length: 10},       // no URI
		// A page of an object of more than 2^32 pages (read through,
		// never cached: its index would not fit the page key).
		{uri: "u", size: (1<<32 + 1) * ps, page: 1 << 32, length: ps},
		{uri: "u", size: (1<<32 + 1) * ps, page: 5, length: ps},
	} {
		encodeHeader(b, &bad)
		if _, _, _, ok := decodeHeader(b, ps); ok {
			t.Fatalf("impossible header %+v accepted", bad)
		}
	}
}

func TestGeometry(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 2000; i++ {
		ps := 512 * (1 + rng.IntN(64))
		budget := rng.Int64N(64 << 20)
		g := geometryFor(budget, ps)
		if g.nslots == 0 {
			if next := geometryFor(budget+1, ps); next.nslots > 1 {
				t.Fatalf("budget %d ps %d: no slot, but %d fit one byte later", budget, ps, next.nslots)
			}
			continue
		}
		// The file is whole 4 KiB blocks (the blocks the file system
		// allocates stay within the budget too).
		if g.fileSize > budget || g.dataOff < g.hdrOff+int64(g.nslots)*headerSize || g.slotSize < ps ||
			g.fileSize != roundUp(g.dataOff+int64(g.nslots)*int64(g.slotSize), 4096) {
			t.Fatalf("budget %d ps %d: bad layout %+v", budget, ps, g)
		}
		more := roundUp(superSize+roundUp(int64(g.nslots+1)*headerSize, 4096)+int64(g.nslots+1)*int64(g.slotSize), 4096)
		if more <= budget {
			t.Fatalf("budget %d ps %d: %d slots, but %d fit", budget, ps, g.nslots, g.nslots+1)
		}
	}
}

func TestHistory(t *testing.T) {
	h := newHistory(20000)
	rng := rand.New(rand.NewPCG(7, 8))
	in := make([]uint64, 10000)
	for i := range in {
		in[i] = rng.Uint64()
		h.add(in[i])
	}
	for _, fp := range in {
		if !h.contains(fp) {
			t.Fatalf("inserted fingerprint %#x forgotten within the window", fp)
		}
	}
	fp := 0
	for i := 0; i < 100000; i++ {
		if h.contains(rng.Uint64()) {
			fp++
		}
	}
	if rate := float64(fp) / 100000; rate > 0.03 {
		t.Fatalf("false positive rate %.3f, want <= 0.03", rate)
	}
	// Past two windows, old entries are forgotten.
	for i := 0; i < 40000; i++ {
		h.add(rng.Uint64())
	}
	forgotten := 0
	for _, fp := range in {
		if !h.contains(fp) {
			forgotten++
		}
	}
	if forgotten < len(in)*9/10 {
		t.Fatalf("only %d of %d old entries forgotten after two windows", forgotten, len(in))
	}
}

// FuzzDecodeHeader: decodeHeader never panics on a slot's bytes, and what
// it accepts is a page the cache could have written: a URI, a key that
// fits, a page index inside an object of at most 2^32 pages, a length
// that matches the page; encoding what it decoded gives a header that
// decodes the same. The fuzzer's bytes get a valid checksum (else nearly
// every input stops at it) unless the first byte is odd.
func FuzzDecodeHeader(f *testing.F) {
	const ps = 4096
	b := make([]byte, headerSize)
	encodeHeader(b, &pageHeader{uri: "s3://b/k", version: "v", seq: 1, size: 3*ps + 10, page: 3, length: 10})
	f.Add(append([]byte{0}, b...))
	f.Add(append([]byte{1}, b...))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		b := make([]byte, headerSize)
		copy(b, in[1:])
		if in[0]&1 == 0 {
			le := binary.LittleEndian
			le.PutUint32(b[0:], pageMagic)
			le.PutUint16(b[8:], headerFormat)
			le.PutUint32(b[4:], checksum(b[8:headerSize]))
		}
		h, uri, ver, ok := decodeHeader(b, ps)
		if !ok {
			return
		}
		if len(uri) == 0 || len(uri)+len(ver) > maxKeyBytes || h.size < 0 || h.page < 0 ||
			h.page >= numPages(h.size, ps) || numPages(h.size, ps) > maxObjectPages ||
			h.length == 0 && h.size > 0 || h.length > ps || int(h.length) != pageLen(h.size, ps, h.page) {
			t.Fatalf("accepted an impossible header: %+v uri %q version %q", h, uri, ver)
		}
		h.uri, h.version = string(uri), string(ver)
		c := make([]byte, headerSize)
		encodeHeader(c, &h)
		g, u2, v2, ok2 := decodeHeader(c, ps)
		g.uri, g.version = string(u2), string(v2)
		if !ok2 || g != h {
			t.Fatalf("re-encoded header decodes to %+v (ok %v), want %+v", g, ok2, h)
		}
	})
}
