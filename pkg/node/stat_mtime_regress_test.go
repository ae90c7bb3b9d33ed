package node

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/origin"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// TestStatMtimeBeyondUnixNano: Stat's last_modified_unix_nano is
// either the object's modification time or 0 ("the origin does not say").
// Was: a file modified after 2262 (or before 1678), which tmpfs, XFS and
// ext4 can store, is answered with time.Time.UnixNano's overflowed value:
// a file modified on 2300-01-01 is reported as modified in 1715.
func TestStatMtimeBeyondUnixNano(t *testing.T) {
	base := "/dev/shm"
	if st, err := os.Stat(base); err != nil || !st.IsDir() {
		base = ""
	}
	root, err := os.MkdirTemp(base, "locus-review")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	files, err := origin.NewFileStore(origin.FileConfig{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	c := newTCluster(t, tclusterOpts{n: 1, repl: 1, store: files})
	p := filepath.Join(root, "f.bin")
	if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	// os.Chtimes cannot set such a time (it goes through UnixNano too).
	if out, err := exec.Command("touch", "-d", "2300-01-01T00:00:00Z", p).CombinedOutput(); err != nil {
		t.Skipf("touch -d: %v %s", err, out)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.ModTime().Year() != 2300 {
		t.Skipf("the file system under %s stored mtime %v, not 2300", root, fi.ModTime())
	}
	r, err := dial(t, c.nodes[0].GRPCAddr()).Stat(context.Background(), &cachev1.StatRequest{Uri: "file://" + p})
	if err != nil {
		t.Fatal(err)
	}
	ns := r.GetLastModifiedUnixNano()
	if ns != 0 && !time.Unix(0, ns).Equal(fi.ModTime()) {
		t.Errorf("last_modified_unix_nano %d (%v), the file was modified at %v: want that time or 0 (unknown)",
			ns, time.Unix(0, ns).UTC(), fi.ModTime().UTC())
	}
}
