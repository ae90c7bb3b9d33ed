package node_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// A file:// object replaced the way data-lake writers do (a temporary
// file renamed over the old one) by a file of the same size and the same
// mtime (two writes within one tick of the kernel's file clock, or on a
// file system with 1-second timestamps; here set with Chtimes) is a new
// version: after the stat TTL the node serves the new bytes, never a mix
// of cached old pages and fetched new ones.
func TestFileReplacedWithSameSizeAndMtime(t *testing.T) {
	root := t.TempDir()
	fs, err := origin.NewFileStore(origin.FileConfig{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: fs}) // StatTTL 200ms
	cl := c.Client(t, 0)
	const size = 1 << 20
	v1, v2 := randBytes(31, size), randBytes(32, size)
	p := filepath.Join(root, "part-0.bin")
	uri := "file://" + p
	if err := os.WriteFile(p, v1, 0o644); err != nil {
		t.Fatal(err)
	}
	st1, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, _, err := nodetest.ReadRange(ctx, cl, &cachev1.ReadRangeRequest{Uri: uri, Offset: 0, Length: size / 2})
	if err != nil || !bytes.Equal(got, v1[:size/2]) {
		t.Fatalf("first read: %v (or wrong bytes)", err)
	}

	if err := os.WriteFile(p+".tmp", v2, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p+".tmp", st1.ModTime(), st1.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(p)
	if st2.Size() != st1.Size() || !st2.ModTime().Equal(st1.ModTime()) {
		t.Fatalf("the replacement has size %d mtime %v, want %d and %v", st2.Size(), st2.ModTime(), st1.Size(), st1.ModTime())
	}
	time.Sleep(400 * time.Millisecond) // past the stat TTL

	got, s, err := nodetest.ReadRange(ctx, cl, &cachev1.ReadRangeRequest{Uri: uri, Offset: 0, Length: size})
	if err != nil {
		t.Fatalf("read after the replace: %v", err)
	}
	if !bytes.Equal(got, v2) {
		t.Fatalf("read after the replace (version %s, %d bytes from the local cache): first half new %v, second half new %v; want all new",
			s.Version, s.LocalHitBytes, bytes.Equal(got[:size/2], v2[:size/2]), bytes.Equal(got[size/2:], v2[size/2:]))
	}
}
