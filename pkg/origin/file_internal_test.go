package origin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFileRewriteBetweenReadAndCheck rewrites the file in place exactly
// between the read and the second version check, and expects the read to
// be refused.
func TestFileRewriteBetweenReadAndCheck(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "f")
	if err := os.WriteFile(path, []byte("version-one"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := NewFileStore(FileConfig{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	uri := URI{Scheme: SchemeFile, Path: path}.String()
	info, err := s.Stat(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		rewrite func() error
	}{
		{"same size, new mtime", func() error {
			if err := os.WriteFile(path, []byte("version-two"), 0o644); err != nil {
				return err
			}
			ts := info.ModTime.Add(time.Millisecond)
			return os.Chtimes(path, ts, ts)
		}},
		{"truncated", func() error { return os.Truncate(path, 3) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte("version-one"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, info.ModTime, info.ModTime); err != nil {
				t.Fatal(err)
			}
			testHookAfterRead = func() {
				if err := tc.rewrite(); err != nil {
					t.Error(err)
				}
			}
			defer func() { testHookAfterRead = nil }()
			p := make([]byte, 11)
			n, err := s.ReadAt(context.Background(), uri, info.Version, p, 0)
			if !errors.Is(err, ErrVersionChanged) || n != 0 {
				t.Fatalf("ReadAt with a rewrite during the read = (%d, %v), want (0, ErrVersionChanged)", n, err)
			}
		})
	}
}
