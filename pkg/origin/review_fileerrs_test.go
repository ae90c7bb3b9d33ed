// Regression tests for bugs a review found (2026-12-01): each test's
// comment describes the bug as it was before the fix.
package origin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locuscache/locus/pkg/origin"
)

// TestFileUnreachableNamesAreNotFound: a file:// URI that cannot name a
// file (a path through a regular file, as left behind when a directory is
// replaced by a file; a name longer than the file system allows; a loop of
// symbolic links) was refused with an error wrapping no sentinel
// ("origin: cannot resolve ...: not a directory"), which the node answers
// INTERNAL and the gateway 500 "please try again", where S3 answers 404
// for s3://b/a.bin/x. A List under such a prefix failed instead of listing
// nothing. Now Stat and ReadAt say ErrNotFound and List lists nothing.
func TestFileUnreachableNamesAreNotFound(t *testing.T) {
	f := newFileFixture(t)
	ctx := context.Background()
	if err := os.Symlink("loop2", filepath.Join(f.root, "loop1")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop1", filepath.Join(f.root, "loop2")); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("n", 300) // NAME_MAX is 255 on Linux file systems
	for _, rel := range []string{"a.bin/x", "dir/b.parquet/c", "loop1", "loop1/x", long, "dir/" + long + "/x"} {
		uri := f.uri(rel)
		if _, err := f.store.Stat(ctx, uri); !errors.Is(err, origin.ErrNotFound) {
			t.Errorf("Stat(%.60s) = %v, want ErrNotFound", rel, err)
		}
		if _, err := f.store.ReadAt(ctx, uri, "", make([]byte, 4), 0); !errors.Is(err, origin.ErrNotFound) {
			t.Errorf("ReadAt(%.60s) = %v, want ErrNotFound", rel, err)
		}
		if err := f.store.List(ctx, uri+"/", func(i origin.Info) error {
			t.Errorf("List(%.60s/) listed %s", rel, i.URI)
			return nil
		}); err != nil {
			t.Errorf("List(%.60s/) = %v, want nothing listed and no error", rel, err)
		}
	}
}

// TestFilePermissionDeniedInPath: a file under a directory the node may
// not search (mode 0700 of another user) was refused with an error that
// wraps no sentinel ("origin: cannot resolve ...: permission denied"),
// while the same file in a searchable directory without read permission
// was ErrAccessDenied. Run as root the kernel grants everything, so the
// test skips.
func TestFilePermissionDeniedInPath(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root is never denied; run the test binary as another user")
	}
	f := newFileFixture(t)
	ctx := context.Background()
	if err := os.Chmod(filepath.Join(f.root, "dir"), 0o000); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(f.root, "dir"), 0o755) })
	if err := os.Chmod(filepath.Join(f.root, "a.bin"), 0o000); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"a.bin", "dir/b.parquet"} {
		if _, err := f.store.Stat(ctx, f.uri(rel)); !errors.Is(err, origin.ErrAccessDenied) {
			t.Errorf("Stat(%s) = %v, want ErrAccessDenied", rel, err)
		}
		if _, err := f.store.ReadAt(ctx, f.uri(rel), "", make([]byte, 4), 0); !errors.Is(err, origin.ErrAccessDenied) {
			t.Errorf("ReadAt(%s) = %v, want ErrAccessDenied", rel, err)
		}
	}
	if err := f.store.List(ctx, f.uri("dir")+"/", func(origin.Info) error { return nil }); !errors.Is(err, origin.ErrAccessDenied) {
		t.Errorf("List(dir/) = %v, want ErrAccessDenied", err)
	}
}
