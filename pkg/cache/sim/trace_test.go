package sim

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func hashed(ks ...uint64) []uint64 {
	out := make([]uint64, len(ks))
	for i, k := range ks {
		out[i] = HashKey(k)
	}
	return out
}

func TestRead(t *testing.T) {
	tests := []struct {
		name     string
		format   Format
		in       string
		want     []uint64
		distinct int
		err      error
		errText  string
	}{
		{"keys", FormatKeys, "1\n2\n1\n", hashed(1, 2, 1), 2, nil, ""},
		{"keys without final newline", FormatKeys, "7\n8", hashed(7, 8), 2, nil, ""},
		{"keys blank lines and spaces", FormatKeys, "\n 5 \r\n\n5\n", hashed(5, 5), 1, nil, ""},
		{"keys max uint64", FormatKeys, "18446744073709551615\n", hashed(18446744073709551615), 1, nil, ""},
		{"keys overflow", FormatKeys, "1\n18446744073709551616\n", nil, 0, ErrMalformed, "x:2:"},
		{"keys not a number", FormatKeys, "1\n2\nabc\n", nil, 0, ErrMalformed, "x:3:"},
		{"keys negative", FormatKeys, "-4\n", nil, 0, ErrMalformed, "x:1:"},
		{"keys two fields", FormatKeys, "4 5\n", nil, 0, ErrMalformed, "x:1:"},
		{"lirs with end marker", FormatLIRS, "3\n4\n3\n*\n", hashed(3, 4, 3), 2, nil, ""},
		{"lirs trailing star on a line", FormatLIRS, "3\n4*\n\n", hashed(3, 4), 2, nil, ""},
		{"lirs junk", FormatLIRS, "3\nx4\n", nil, 0, ErrMalformed, "x:2:"},
		{"arc expands runs", FormatARC, "10 3 0 1\n5 1 0 2\n", hashed(10, 11, 12, 5), 4, nil, ""},
		// As Caffeine's reader: the first two fields count, the rest
		// are ignored, and a run of 0 blocks is a line without accesses.
		{"arc two or three fields", FormatARC, "10 3\n7 1 0\n", hashed(10, 11, 12, 7), 4, nil, ""},
		{"arc one field", FormatARC, "10\n", nil, 0, ErrMalformed, "x:1: malformed trace line: want \"start_block num_blocks"},
		{"arc zero blocks", FormatARC, "10 0 0 1\n5 1 0 2\n", hashed(5), 1, nil, ""},
		{"arc only zero blocks", FormatARC, "10 0 0 1\n", nil, 0, ErrEmpty, ""},
		{"arc request number ignored", FormatARC, "10 1 0 q\n", hashed(10), 1, nil, ""},
		{"arc bad num_blocks", FormatARC, "10 x 0 1\n", nil, 0, ErrMalformed, "x:1: malformed trace line: num_blocks"},
		{"arc too long a run", FormatARC, "10 16777217 0 1\n", nil, 0, ErrMalformed, "out of range"},
		{"arc overflow", FormatARC, "18446744073709551615 2 0 1\n", nil, 0, ErrMalformed, "overflows"},
		{"arc last block", FormatARC, "18446744073709551615 1 0 1\n", hashed(18446744073709551615), 1, nil, ""},
		{"keys after a byte-order mark", FormatKeys, "\ufeff4\n4\n", hashed(4, 4), 1, nil, ""},
		{"empty", FormatKeys, "", nil, 0, ErrEmpty, ""},
		{"only blank lines", FormatLIRS, "\n\n*\n", nil, 0, ErrEmpty, ""},
		{"unknown format", Format("csv"), "1\n", nil, 0, ErrFormat, ""},
	}
	for _, tc := range tests {
		for _, compressed := range []bool{false, true} {
			in := []byte(tc.in)
			if compressed {
				in = gz(t, tc.in)
			}
			got, err := Read(bytes.NewReader(in), tc.format, "x")
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.errText) {
					t.Errorf("%s (gzip %v): got error %v, want %v containing %q", tc.name, compressed, err, tc.err, tc.errText)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s (gzip %v): %v", tc.name, compressed, err)
				continue
			}
			if !slices.Equal(got.Keys, tc.want) || got.Distinct != tc.distinct {
				t.Errorf("%s (gzip %v): got %d keys, %d distinct; want %d, %d", tc.name, compressed, len(got.Keys), got.Distinct, len(tc.want), tc.distinct)
			}
		}
	}
}

func TestReadFileErrors(t *testing.T) {
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing.gz"), FormatKeys); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v, want os.ErrNotExist", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.gz")
	// gzip magic, then garbage: detected as gzip, fails to decompress.
	if err := os.WriteFile(bad, []byte{0x1f, 0x8b, 1, 2, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(bad, FormatKeys); err == nil {
		t.Error("corrupt gzip: got nil error")
	}
}

func TestReadSharedTrace(t *testing.T) {
	tr, err := ReadFile(filepath.Join("testdata", "traces", "lirs-loop.keys.gz"), FormatKeys)
	if err != nil {
		t.Fatal(err)
	}
	// README: lirs traces have 6k-505k accesses and 1k-10k distinct keys.
	if tr.Name != "lirs-loop.keys.gz" || len(tr.Keys) < 6000 || tr.Distinct < 1000 || tr.Distinct > 10000 {
		t.Errorf("lirs-loop: name %q, %d accesses, %d distinct", tr.Name, len(tr.Keys), tr.Distinct)
	}
}

// FuzzRead: Read never panics, and a trace it accepts has at least one
// access and between one and that many distinct keys; whatever it refuses
// it refuses with one of its documented errors (or as unreadable, a bad
// gzip stream).
func FuzzRead(f *testing.F) {
	f.Add(byte(0), []byte("1\n2\n1\n"))
	f.Add(byte(1), []byte("5*\n\n6\n*\n"))
	f.Add(byte(2), []byte("0 4 0 0\n2 3 0 1\n"))
	f.Add(byte(2), []byte("18446744073709551615 1 0 0\n"))
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write([]byte("1\n2\n3\n"))
	w.Close()
	f.Add(byte(0), z.Bytes()[:z.Len()-6]) // a truncated gzip stream
	f.Fuzz(func(t *testing.T, format byte, in []byte) {
		fm := []Format{FormatKeys, FormatLIRS, FormatARC}[int(format)%3]
		tr, err := Read(bytes.NewReader(in), fm, "fuzz")
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrEmpty) && !errors.Is(err, ErrTooLong) &&
				!strings.HasPrefix(err.Error(), "cannot read") { // a bad gzip stream
				t.Fatalf("undocumented error: %v", err)
			}
			return
		}
		if len(tr.Keys) == 0 || tr.Distinct < 1 || tr.Distinct > len(tr.Keys) {
			t.Fatalf("%d accesses, %d distinct keys", len(tr.Keys), tr.Distinct)
		}
	})
}

// TestReadMemory: Read keeps 12 bytes per access (the hashed keys and
// their dense ids), and Belady in Run builds no second map of the keys
// (Was: NewOracle numbered the keys again, about 100 bytes per access of
// allocation on a trace of distinct keys; with Read's own map a 240-byte
// ARC trace could reach tens of GiB).
func TestReadMemory(t *testing.T) {
	const n = 1 << 20
	runtime.GC()
	var a, b, c runtime.MemStats
	runtime.ReadMemStats(&a)
	tr, err := Read(strings.NewReader("0 1048576 0 0\n"), FormatARC, "t")
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&b)
	if live := float64(b.HeapAlloc-a.HeapAlloc) / n; live > 13 {
		t.Errorf("a trace of %d accesses keeps %.1f bytes per access after Read, want about 12", n, live)
	}
	if _, err := Run(tr, Options{Policies: []string{NameBelady}, Capacities: []int{1}}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&c)
	// Belady: 4 bytes of next-use positions per access, 4 of due
	// positions per distinct key (here every access), and its heap.
	if alloc := float64(c.TotalAlloc-b.TotalAlloc) / n; alloc > 16 {
		t.Errorf("Belady allocated %.1f bytes per access of a trace Read built, want at most 16 (no second map of the keys)", alloc)
	}
	runtime.KeepAlive(tr)
}

// TestReadDistinctCap: past maxDistinct distinct keys Read fails with
// ErrTooLong and says why, instead of growing its map without bound.
func TestReadDistinctCap(t *testing.T) {
	defer func(m int) { maxDistinct = m }(maxDistinct)
	maxDistinct = 100
	if _, err := Read(strings.NewReader("0 100 0 0\n0 100 0 0\n"), FormatARC, "t"); err != nil {
		t.Fatalf("100 distinct keys read twice: %v", err)
	}
	_, err := Read(strings.NewReader("0 100 0 0\n100 1 0 0\n"), FormatARC, "t")
	if !errors.Is(err, ErrTooLong) || !strings.Contains(err.Error(), "t:2:") || !strings.Contains(err.Error(), "more than 100 distinct keys") {
		t.Errorf("101 distinct keys: got %v, want ErrTooLong naming line 2 and the cap", err)
	}
}
