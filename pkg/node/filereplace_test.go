package node_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
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

// A Stat that sniffs an object whose stat entry is stale (it changed in the
// origin since a HEAD cached the entry) stats it again and answers, rather
// than fail with FAILED_PRECONDITION; so do the client's Stat and a
// ReadRange with an origin fallback, which stats first.
func TestStatAfterRewrite(t *testing.T) {
	mem := origintest.NewMemStore()
	uri := "s3://lake/t/data.bin"
	const size = 1 << 20
	mem.Put(uri, randBytes(51, size))
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: mem, StatTTL: time.Hour})
	cl, err := client.New(client.Config{Origin: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	head := func() {
		t.Helper()
		res, err := c.HTTPClient().Head(c.HTTPURL(0) + "/lake/t/data.bin") // caches the stat entry, reads nothing
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("HEAD: %v %v", res, err)
		}
		res.Body.Close()
	}
	ctx := context.Background()
	head()
	v2 := randBytes(52, size)
	mem.Put(uri, v2)
	info, err := cl.Stat(ctx, c.Nodes[0].GRPCAddr(), uri)
	if err != nil {
		t.Fatalf("Stat right after a rewrite: %v", err)
	}
	head()
	v3 := randBytes(53, size)
	mem.Put(uri, v3)
	var buf bytes.Buffer
	if _, err := cl.ReadRange(ctx, c.Nodes[0].GRPCAddr(), uri, 0, 100, &buf); err != nil {
		t.Fatalf("ReadRange right after a rewrite: %v (the Stat before: version %s)", err, info.Version)
	}
	// Within the stat TTL a fresh entry whose pages are cached may still
	// serve the version before (pkg/node's doc): one whole version either way.
	if !bytes.Equal(buf.Bytes(), v3[:100]) && !bytes.Equal(buf.Bytes(), v2[:100]) {
		t.Fatal("ReadRange right after a rewrite: bytes of neither version")
	}
}
