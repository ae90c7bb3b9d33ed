package origin_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/locuscache/locus/pkg/origin"
)

// TestFileListResolvedRootWithoutSlash: the root is a symlink (alias ->
// root); URIs may spell paths under either form, and List is a plain
// string prefix. Was: listing the resolved root without a trailing "/"
// walked from the alias and filtered its paths by the resolved root's:
// no objects, where List(root + "/") found them (found by a review).
func TestFileListResolvedRootWithoutSlash(t *testing.T) {
	f := newFileFixture(t)
	alias := filepath.Join(f.base, "alias")
	if err := os.Symlink(f.root, alias); err != nil {
		t.Fatal(err)
	}
	s, err := origin.NewFileStore(origin.FileConfig{Root: alias})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	count := func(prefix string) (int, error) {
		n := 0
		err := s.List(context.Background(), prefix, func(origin.Info) error { n++; return nil })
		return n, err
	}
	withSlash, err1 := count("file://" + f.root + "/")
	noSlash, err2 := count("file://" + f.root)
	if err1 != nil || err2 != nil || withSlash == 0 || noSlash != withSlash {
		t.Fatalf("List(%q/) = (%d, %v); List(%q) = (%d, %v); want the same objects", f.root, withSlash, err1, f.root, noSlash, err2)
	}
}
