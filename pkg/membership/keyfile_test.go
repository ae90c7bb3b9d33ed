package membership

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	raw := func(n int) []byte { return bytes.Repeat([]byte{0xA5}, n) }
	b64 := func(n int) []byte { return []byte(base64.StdEncoding.EncodeToString(raw(n))) }
	tests := []struct {
		name string
		in   []byte
		want []byte // nil: error ErrKeyLength
	}{
		{"base64 16", b64(16), raw(16)},
		{"base64 24", b64(24), raw(24)},
		{"base64 32", b64(32), raw(32)},
		{"base64 32 with newline", append(b64(32), '\n'), raw(32)},
		{"base64 32 with spaces", append(append([]byte("  "), b64(32)...), " \r\n"...), raw(32)},
		{"raw 16", raw(16), raw(16)},
		{"raw 24", raw(24), raw(24)},
		{"raw 32", raw(32), raw(32)},
		// Valid base64 text is always base64: 24 letters decode to 18 bytes,
		// which is an error, not a raw AES-192 key.
		{"raw 24 that parses as base64", []byte("abcdefghijklmnopqrstuvwx"), nil},
		{"base64 of 10 bytes is 16 chars", b64(10), nil},
		{"raw 32 with trailing newline counts the newline", append(raw(31), '\n'), append(raw(31), '\n')},
		{"empty", nil, nil},
		{"whitespace", []byte(" \n"), nil},
		{"base64 8", b64(8), nil},
		{"base64 33", b64(33), nil},
		{"raw 17", raw(17), nil},
		{"raw 15", raw(15), nil},
		{"24 ASCII bytes, not base64", []byte("this is not a key at all"), []byte("this is not a key at all")},
		{"url base64 is not base64", []byte(strings.NewReplacer("+", "-", "/", "_").Replace(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)))), nil},
	}
	for _, tc := range tests {
		got, err := ParseKey(tc.in)
		if tc.want == nil {
			if !errors.Is(err, ErrKeyLength) {
				t.Errorf("%s: got %x, %v; want ErrKeyLength", tc.name, got, err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("%s: got %x, %v; want %x", tc.name, got, err, tc.want)
		}
	}
}

func TestReadKeyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := bytes.Repeat([]byte{7}, 32)
	good := write("good", []byte(base64.StdEncoding.EncodeToString(key)+"\n"))
	if got, err := ReadKeyFile(good); err != nil || !bytes.Equal(got, key) {
		t.Errorf("good key file: got %x, %v", got, err)
	}
	tests := []struct {
		name, path string
		want       error
	}{
		{"missing", filepath.Join(dir, "missing"), ErrKeyFile},
		{"directory", dir, ErrKeyFile},
		{"empty", write("empty", nil), ErrKeyLength},
		{"wrong length", write("short", []byte(base64.StdEncoding.EncodeToString(key[:10]))), ErrKeyLength},
		{"huge", write("huge", bytes.Repeat([]byte("A"), 10000)), ErrKeyLength},
	}
	for _, tc := range tests {
		_, err := ReadKeyFile(tc.path)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.path) {
			t.Errorf("%s: error %q does not name the file", tc.name, err)
		}
	}
	if _, err := ReadKeyFile(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v should wrap os.ErrNotExist", err)
	}
}
