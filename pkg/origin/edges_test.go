package origin_test

// Regression and edge-case tests from an adversarial review of the read
// path (2026-11-30; file:// origin).

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/locuscache/locus/pkg/origin"
)

// TestAbsoluteSymlinkInsideRoot: a symbolic link whose target is an
// absolute path that stays inside the root (root/abs-in -> <root>/a.bin,
// as `ln -s "$PWD/a.bin" abs-in` or many data-lake tools write them) is
// followed by Stat, ReadAt and List, as FileStore's doc says (only links
// that leave the root are refused). It was refused with ErrOutsideRoot and
// left out of listings: checkLinks accepted it, but the store then opened
// the link through os.Root, which refuses every absolute link target.
// Fixed: the store opens (and List stats) the resolved path.
func TestAbsoluteSymlinkInsideRoot(t *testing.T) {
	f := newFileFixture(t)
	ctx := context.Background()
	if err := os.Symlink(filepath.Join(f.root, "a.bin"), filepath.Join(f.root, "abs-in")); err != nil {
		t.Fatal(err)
	}
	uri := f.uri("abs-in")
	info, err := f.store.Stat(ctx, uri)
	if err != nil {
		t.Fatalf("Stat(%s) = %v; want the file (the link stays inside the root)", uri, err)
	}
	p := make([]byte, 100)
	if n, err := f.store.ReadAt(ctx, uri, info.Version, p, 0); err != nil || !bytes.Equal(p[:n], f.data[:100]) {
		t.Fatalf("ReadAt(%s) = (%d, %v)", uri, n, err)
	}
	var listed []string
	if err := f.store.List(ctx, f.uri("")+"/", func(i origin.Info) error {
		listed = append(listed, i.URI)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(listed, uri) {
		t.Errorf("List of the root = %v; missing %s", listed, uri)
	}
}

// TestAbsoluteSymlinkOutsideRoot: an absolute link to a file outside
// the root stays refused (the counterpart of the case above).
func TestAbsoluteSymlinkOutsideRoot(t *testing.T) {
	f := newFileFixture(t)
	ctx := context.Background()
	if err := os.Symlink(filepath.Join(f.base, "outside", "secret"), filepath.Join(f.root, "abs-out")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Stat(ctx, f.uri("abs-out")); !errors.Is(err, origin.ErrOutsideRoot) {
		t.Fatalf("Stat(abs-out) = %v, want ErrOutsideRoot", err)
	}
	p := make([]byte, 6)
	if _, err := f.store.ReadAt(ctx, f.uri("abs-out"), "", p, 0); !errors.Is(err, origin.ErrOutsideRoot) || bytes.Equal(p, []byte("secret")) {
		t.Fatalf("ReadAt(abs-out) = %v (bytes %q), want ErrOutsideRoot and nothing read", err, p)
	}
}

// TestFileURIEdgeCases: spellings that must never reach a file
// outside the root, or another file than they name: NUL (raw and
// encoded), an encoded slash hiding "..", a backslash (an ordinary
// character on POSIX), a query or fragment. They hold.
func TestFileURIEdgeCases(t *testing.T) {
	f := newFileFixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		uri  string
		want error
	}{
		{"file://" + f.root + "/a.bin%00.txt", origin.ErrInvalidURI},
		{"file://" + f.root + "/a.bin\x00", origin.ErrInvalidURI},
		{"file://" + f.root + "/dir%2F..%2F..%2Foutside%2Fsecret", origin.ErrOutsideRoot},
		{"file://" + f.root + "/..%5Coutside%5Csecret", origin.ErrNotFound},
		{"file://" + f.root + "/a.bin?x=1", origin.ErrInvalidURI},
		{"file://" + f.root + "/a.bin#frag", origin.ErrInvalidURI},
		{"file://" + f.root + "/./a.bin", origin.ErrInvalidURI},
		{"FILE://" + f.root + "/a.bin", origin.ErrInvalidURI},
	} {
		if _, err := f.store.Stat(ctx, tc.uri); !errors.Is(err, tc.want) {
			t.Errorf("Stat(%q) = %v, want %v", tc.uri, err, tc.want)
		}
	}
}
