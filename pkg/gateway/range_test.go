package gateway

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

func TestParseRange(t *testing.T) {
	const size = 100
	tests := []struct {
		header string
		size   int64
		want   ByteRange
		ok     bool
		err    error
	}{
		{header: "", size: size},
		{header: "   ", size: size},
		{header: "bytes=0-0", size: size, want: ByteRange{0, 1}, ok: true},
		{header: "bytes=0-99", size: size, want: ByteRange{0, 100}, ok: true},
		{header: "bytes=0-100", size: size, want: ByteRange{0, 100}, ok: true},
		{header: "bytes=0-999999999999999999999999", size: size, want: ByteRange{0, 100}, ok: true},
		{header: "bytes=1-99", size: size, want: ByteRange{1, 99}, ok: true},
		{header: "bytes=50-", size: size, want: ByteRange{50, 50}, ok: true},
		{header: "bytes=0-", size: size, want: ByteRange{0, 100}, ok: true},
		{header: "bytes=99-99", size: size, want: ByteRange{99, 1}, ok: true},
		{header: "bytes=00-01", size: size, want: ByteRange{0, 2}, ok: true},
		{header: "BYTES=2-3", size: size, want: ByteRange{2, 2}, ok: true},
		{header: " bytes=2-3 ", size: size, want: ByteRange{2, 2}, ok: true},
		{header: "bytes=-1", size: size, want: ByteRange{99, 1}, ok: true},
		{header: "bytes=-10", size: size, want: ByteRange{90, 10}, ok: true},
		{header: "bytes=-100", size: size, want: ByteRange{0, 100}, ok: true},
		{header: "bytes=-101", size: size, want: ByteRange{0, 100}, ok: true},
		{header: "bytes=-99999999999999999999999", size: size, want: ByteRange{0, 100}, ok: true},
		// Multi-range: ignored, as S3 does.
		{header: "bytes=0-0,1-2", size: size},
		{header: "bytes=0-1, 5-9", size: size},
		{header: "bytes=x,y", size: size},
		// Unsatisfiable.
		{header: "bytes=-0", size: size, err: ErrUnsatisfiableRange},
		{header: "bytes=100-100", size: size, err: ErrUnsatisfiableRange},
		{header: "bytes=100-110", size: size, err: ErrUnsatisfiableRange},
		{header: "bytes=100-", size: size, err: ErrUnsatisfiableRange},
		{header: "bytes=99999999999999999999999-", size: size, err: ErrUnsatisfiableRange},
		{header: "bytes=0-", size: 0, err: ErrUnsatisfiableRange},
		{header: "bytes=0-0", size: 0, err: ErrUnsatisfiableRange},
		{header: "bytes=-5", size: 0, err: ErrUnsatisfiableRange},
		// Malformed.
		{header: "bytes=", size: size, err: ErrMalformedRange},
		{header: "bytes=-", size: size, err: ErrMalformedRange},
		{header: "bytes=--1", size: size, err: ErrMalformedRange},
		{header: "bytes=0--1", size: size, err: ErrMalformedRange},
		{header: "bytes=0 -1", size: size, err: ErrMalformedRange},
		{header: "bytes=10-5", size: size, err: ErrMalformedRange},
		{header: "bytes=abc", size: size, err: ErrMalformedRange},
		{header: "bytes=a-z", size: size, err: ErrMalformedRange},
		{header: "bytes=100-x", size: size, err: ErrMalformedRange},
		{header: "bytes=+1-2", size: size, err: ErrMalformedRange},
		{header: "bytes=0x10-20", size: size, err: ErrMalformedRange},
		{header: "foo=0-1", size: size, err: ErrMalformedRange},
		{header: "bytes 0-1", size: size, err: ErrMalformedRange},
		{header: "0-1", size: size, err: ErrMalformedRange},
		{header: "bytes=1-2=3", size: size, err: ErrMalformedRange},
		{header: "bytes=１-2", size: size, err: ErrMalformedRange}, // full-width digit
		{header: "bytes=102-101", size: size, err: ErrMalformedRange},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q/%d", tt.header, tt.size), func(t *testing.T) {
			got, ok, err := ParseRange(tt.header, tt.size)
			if !errors.Is(err, tt.err) || (err != nil) != (tt.err != nil) {
				t.Fatalf("ParseRange(%q, %d) error = %v, want %v", tt.header, tt.size, err, tt.err)
			}
			if ok != tt.ok || got != tt.want {
				t.Fatalf("ParseRange(%q, %d) = %+v, %v; want %+v, %v", tt.header, tt.size, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// refParseRange is a deliberately dumb reference: a regular expression for
// the grammar and math/big for the arithmetic, so no overflow shortcut of
// ParseRange is shared with it.
var refSingle = regexp.MustCompile(`^(?i:bytes)=(\d*)-(\d*)$`)

func refParseRange(header string, size int64) (ByteRange, bool, error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return ByteRange{}, false, nil
	}
	if size < 0 {
		size = 0
	}
	unit, spec, found := strings.Cut(header, "=")
	if found && strings.EqualFold(strings.TrimSpace(unit), "bytes") && strings.Contains(spec, ",") {
		return ByteRange{}, false, nil
	}
	m := refSingle.FindStringSubmatch(strings.TrimSpace(unit) + "=" + strings.TrimSpace(spec))
	if !found || m == nil || (m[1] == "" && m[2] == "") {
		return ByteRange{}, false, ErrMalformedRange
	}
	n := func(s string) *big.Int { v, _ := new(big.Int).SetString(s, 10); return v }
	bsize := big.NewInt(size)
	if m[1] == "" {
		k := n(m[2])
		if k.Sign() == 0 || size == 0 {
			return ByteRange{}, false, ErrUnsatisfiableRange
		}
		if k.Cmp(bsize) > 0 {
			k = bsize
		}
		return ByteRange{Start: size - k.Int64(), Length: k.Int64()}, true, nil
	}
	a := n(m[1])
	last := new(big.Int).Sub(bsize, big.NewInt(1))
	if m[2] != "" {
		b := n(m[2])
		if b.Cmp(a) < 0 {
			return ByteRange{}, false, ErrMalformedRange
		}
		if b.Cmp(last) < 0 {
			last = b
		}
	}
	if a.Cmp(bsize) >= 0 {
		return ByteRange{}, false, ErrUnsatisfiableRange
	}
	length := new(big.Int).Sub(last, a)
	length.Add(length, big.NewInt(1))
	return ByteRange{Start: a.Int64(), Length: length.Int64()}, true, nil
}

// checkRange asserts ParseRange's invariants and agreement with the reference.
func checkRange(t *testing.T, header string, size int64) {
	t.Helper()
	got, ok, err := ParseRange(header, size)
	want, wantOK, wantErr := refParseRange(header, size)
	if ok != wantOK || got != want || !errors.Is(err, wantErr) || (err != nil) != (wantErr != nil) {
		t.Fatalf("ParseRange(%q, %d) = %+v, %v, %v; reference says %+v, %v, %v",
			header, size, got, ok, err, want, wantOK, wantErr)
	}
	if ok {
		if got.Start < 0 || got.Length < 1 || got.Start > size-got.Length {
			t.Fatalf("ParseRange(%q, %d) = %+v: outside the object", header, size, got)
		}
	}
}

// TestParseRangeReference compares ParseRange with the reference on random
// headers built from the grammar's pieces, around interesting sizes.
func TestParseRangeReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"", "0", "1", "7", "99", "100", "101", "00", "9223372036854775807",
		"9223372036854775808", "99999999999999999999", " ", "-", "x", "+1"}
	units := []string{"bytes=", "BYTES=", "bytes =", "byte=", "", "bytes= "}
	sizes := []int64{0, 1, 2, 99, 100, 101, math.MaxInt64 - 1, math.MaxInt64}
	for range 20000 {
		h := units[rng.IntN(len(units))] + pieces[rng.IntN(len(pieces))]
		if rng.IntN(8) != 0 {
			h += "-"
		}
		h += pieces[rng.IntN(len(pieces))]
		if rng.IntN(10) == 0 {
			h += "," + pieces[rng.IntN(len(pieces))] + "-" + pieces[rng.IntN(len(pieces))]
		}
		checkRange(t, h, sizes[rng.IntN(len(sizes))])
	}
}

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-0", "bytes=-5", "bytes=5-", "bytes=0-1,2-3", "bytes=9-1",
		"bytes=99999999999999999999-", "foo", "BYTES= 1-2", "bytes=-0"} {
		f.Add(s, int64(100))
	}
	f.Add("bytes=0-", int64(0))
	f.Add("bytes=-9223372036854775807", int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, header string, size int64) {
		checkRange(t, header, size)
	})
}
