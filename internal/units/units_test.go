package units

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"134217728", 134217728},
		{"128MiB", 128 << 20},
		{"10GiB", 10 << 30},
		{"1g", 1 << 30},
		{"1G", 1 << 30},
		{"512k", 512 << 10},
		{"64 MiB", 64 << 20},
		{" 4MiB ", 4 << 20},
		{"1.5GiB", 3 << 29},
		{"0.5k", 512},
		{"500MB", 500_000_000},
		{"2TiB", 2 << 40},
		{"1t", 1 << 40},
		{"4096B", 4096},
		{"4096b", 4096},
		{"1kb", 1000},
		{"1.0001", 1},
		{"9223372036854775807", math.MaxInt64},
		{"8388607TiB", 8388607 << 40},
	} {
		got, err := ParseBytes(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestParseBytesErrors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want error
	}{
		{"", ErrSyntax},
		{"   ", ErrSyntax},
		{"abc", ErrSyntax},
		{"-1", ErrSyntax},
		{"+1", ErrSyntax},
		{"1.2.3GiB", ErrSyntax},
		{".", ErrSyntax},
		{"10XB", ErrSyntax},
		{"MiB", ErrSyntax},
		{"1e9", ErrSyntax},
		{"0x10", ErrSyntax},
		{"1 2", ErrSyntax},
		{"8388608TiB", ErrRange},
		{"9999999999TiB", ErrRange},
		{"9223372036854775808", ErrRange},
		{"99999999999999999999", ErrRange},
		{"9000000000000000000.5k", ErrRange},
	} {
		v, err := ParseBytes(tc.in)
		if !errors.Is(err, tc.want) {
			t.Errorf("ParseBytes(%q) = %d, %v; want an error wrapping %v", tc.in, v, err, tc.want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0"},
		{1, "1"},
		{1000, "1000"},
		{1023, "1023"},
		{1024, "1KiB"},
		{3 << 20, "3MiB"},
		{128 << 20, "128MiB"},
		{1536 << 20, "1536MiB"},
		{5 << 30, "5GiB"},
		{1 << 40, "1TiB"},
		{-4096, "-4096"},
	} {
		if got := FormatBytes(tc.in); got != tc.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRoundTrip: FormatBytes always parses back to the same value.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := []int64{0, 1, math.MaxInt64, math.MaxInt64 &^ (TiB - 1)}
	for range 10000 {
		shift := r.IntN(63)
		vals = append(vals, r.Int64N(1<<shift+1), r.Int64N(1<<20)<<(10*r.IntN(5)))
	}
	for _, n := range vals {
		back, err := ParseBytes(FormatBytes(n))
		if err != nil || back != n {
			t.Fatalf("ParseBytes(FormatBytes(%d) = %q) = %d, %v", n, FormatBytes(n), back, err)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0 B"}, {512, "512 B"}, {1536, "1.5 KiB"}, {3 << 20, "3.0 MiB"}, {3 << 29, "1.5 GiB"}, {-2048, "-2.0 KiB"},
	} {
		if got := HumanBytes(tc.in); got != tc.want {
			t.Errorf("HumanBytes(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFlag(t *testing.T) {
	var v int64
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(Flag(&v), "size", "a size")
	if err := fs.Parse([]string{"--size", "4MiB"}); err != nil || v != 4<<20 {
		t.Fatalf("--size 4MiB: v = %d, err %v", v, err)
	}
	if got := fs.Lookup("size").Value.String(); got != "4MiB" {
		t.Errorf("String() = %q, want 4MiB", got)
	}
	if err := fs.Parse([]string{"--size", "four"}); err == nil {
		t.Errorf("--size four: no error")
	}
	if v != 4<<20 {
		t.Errorf("a failed Set changed the value to %d", v)
	}
	var zero int64
	if s := Flag(&zero).String(); s != "" {
		t.Errorf("zero flag String() = %q, want empty", s)
	}
}

func ExampleParseBytes() {
	for _, s := range []string{"128MiB", "10GiB", "1g", "134217728", "500MB"} {
		v, _ := ParseBytes(s)
		fmt.Println(s, strconv.FormatInt(v, 10), FormatBytes(v))
	}
	// Output:
	// 128MiB 134217728 128MiB
	// 10GiB 10737418240 10GiB
	// 1g 1073741824 1GiB
	// 134217728 134217728 128MiB
	// 500MB 500000000 500000000
}
