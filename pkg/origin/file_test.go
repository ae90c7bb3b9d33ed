package origin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/origin"
)

// fileFixture lays out:
//
//	outside/secret               a file outside the root
//	root/a.bin                   random bytes
//	root/dir/b.parquet
//	root/dir/sub/c.parquet
//	root/dir2/d
//	root/link-in  -> dir/b.parquet          (stays inside: allowed)
//	root/link-out -> ../outside/secret      (escapes: refused)
//	root/dirlink-out -> ../outside          (escapes: refused)
type fileFixture struct {
	base, root string
	data       []byte
	store      *origin.FileStore
}

func newFileFixture(t *testing.T) *fileFixture {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "dir", "sub"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "dir2"), 0o755))
	must(os.MkdirAll(filepath.Join(base, "outside"), 0o755))
	data := randomBytes(42, 100_000)
	must(os.WriteFile(filepath.Join(root, "a.bin"), data, 0o644))
	must(os.WriteFile(filepath.Join(root, "dir", "b.parquet"), []byte("bbb"), 0o644))
	must(os.WriteFile(filepath.Join(root, "dir", "sub", "c.parquet"), []byte("cccc"), 0o644))
	must(os.WriteFile(filepath.Join(root, "dir2", "d"), []byte("d"), 0o644))
	must(os.WriteFile(filepath.Join(base, "outside", "secret"), []byte("secret"), 0o644))
	must(os.Symlink("dir/b.parquet", filepath.Join(root, "link-in")))
	must(os.Symlink("../outside/secret", filepath.Join(root, "link-out")))
	must(os.Symlink("../outside", filepath.Join(root, "dirlink-out")))
	s, err := origin.NewFileStore(origin.FileConfig{Root: root})
	must(err)
	t.Cleanup(func() { s.Close() })
	return &fileFixture{base: base, root: root, data: data, store: s}
}

func (f *fileFixture) uri(rel string) string {
	return origin.URI{Scheme: "file", Path: filepath.Join(f.root, rel)}.String()
}

func TestFileStatAndRead(t *testing.T) {
	f := newFileFixture(t)
	ctx := context.Background()
	info, err := f.store.Stat(ctx, f.uri("a.bin"))
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(f.root, "a.bin"))
	if info.Size != int64(len(f.data)) || info.Version != origin.FileVersion(fi) || !info.ModTime.Equal(fi.ModTime()) {
		t.Fatalf("Stat = %+v, want size %d version %s", info, len(f.data), origin.FileVersion(fi))
	}
	cases := []struct {
		off     int64
		n       int
		wantN   int
		wantEOF bool
	}{
		{0, 10, 10, false},
		{5000, 4096, 4096, false},
		{int64(len(f.data)) - 5, 10, 5, true},
		{int64(len(f.data)), 10, 0, true},
		{int64(len(f.data)) + 99, 10, 0, true},
		{7, 0, 0, false},
	}
	for _, tc := range cases {
		p := make([]byte, tc.n)
		n, err := f.store.ReadAt(ctx, info.URI, info.Version, p, tc.off)
		if n != tc.wantN || (err == io.EOF) != tc.wantEOF || (err != nil && err != io.EOF) {
			t.Errorf("ReadAt(off=%d, len=%d) = (%d, %v), want (%d, EOF=%v)", tc.off, tc.n, n, err, tc.wantN, tc.wantEOF)
			continue
		}
		if !bytes.Equal(p[:n], f.data[min(tc.off, int64(len(f.data))):][:n]) {
			t.Errorf("ReadAt(off=%d) bytes differ", tc.off)
		}
	}
	if _, err := f.store.ReadAt(ctx, info.URI, info.Version, make([]byte, 1), -1); !errors.Is(err, origin.ErrRange) {
		t.Errorf("negative offset: %v, want ErrRange", err)
	}
	// The symlink that stays inside the root is served.
	if info, err := f.store.Stat(ctx, f.uri("link-in")); err != nil || info.Size != 3 {
		t.Errorf("Stat(link-in) = (%+v, %v), want the 3-byte target", info, err)
	}
	// localhost form works too.
	if _, err := f.store.Stat(ctx, "file://localhost"+filepath.Join(f.root, "a.bin")); err != nil {
		t.Errorf("Stat(file://localhost/...) = %v", err)
	}
}

func TestFileConfinement(t *testing.T) {
	f := newFileFixture(t)
	ctx := context.Background()
	cases := []struct {
		name string
		uri  string
		want error
	}{
		{"dot-dot", "file://" + f.root + "/../outside/secret", origin.ErrOutsideRoot},
		{"dot-dot inside", "file://" + f.root + "/dir/../a.bin", origin.ErrOutsideRoot},
		{"encoded dot-dot", "file://" + f.root + "/%2e%2e/outside/secret", origin.ErrOutsideRoot},
		{"encoded slash and dot-dot", "file://" + f.root + "/dir%2F%2E%2E%2F%2E%2E%2Foutside/secret", origin.ErrOutsideRoot},
		{"absolute outside", origin.URI{Scheme: "file", Path: filepath.Join(f.base, "outside", "secret")}.String(), origin.ErrOutsideRoot},
		{"etc passwd", "file:///etc/passwd", origin.ErrOutsideRoot},
		{"sibling with root as name prefix", "file://" + f.root + "x/secret", origin.ErrOutsideRoot},
		{"symlink escaping", f.uri("link-out"), origin.ErrOutsideRoot},
		{"through dir symlink escaping", f.uri("dirlink-out/secret"), origin.ErrOutsideRoot},
		{"remote host", "file://example.com" + f.root + "/a.bin", origin.ErrInvalidURI},
		{"not canonical", "file://" + f.root + "//a.bin", origin.ErrInvalidURI},
		{"directory", f.uri("dir"), origin.ErrNotFound},
		{"trailing slash", f.uri("dir") + "/", origin.ErrInvalidURI},
		{"missing", f.uri("nope"), origin.ErrNotFound},
		{"s3 scheme", "s3://bucket/key", origin.ErrUnsupportedScheme},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			info, err := f.store.Stat(ctx, tc.uri)
			if !errors.Is(err, tc.want) {
				t.Errorf("Stat(%s) = (%+v, %v), want %v", tc.uri, info, err, tc.want)
			}
			p := make([]byte, 6)
			n, err := f.store.ReadAt(ctx, tc.uri, "", p, 0)
			if !errors.Is(err, tc.want) {
				t.Errorf("ReadAt(%s) = (%d, %v), want %v", tc.uri, n, err, tc.want)
			}
			if bytes.Equal(p, []byte("secret")) {
				t.Errorf("ReadAt(%s) leaked the file outside the root", tc.uri)
			}
		})
	}
}

func TestFileRootThroughSymlink(t *testing.T) {
	// The root itself may be a symlink; URIs may use either spelling.
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
	ctx := context.Background()
	for _, uri := range []string{"file://" + alias + "/a.bin", "file://" + f.root + "/a.bin"} {
		if _, err := s.Stat(ctx, uri); err != nil {
			t.Errorf("Stat(%s) = %v", uri, err)
		}
	}
	if _, err := s.Stat(ctx, "file://"+alias+"/link-out"); !errors.Is(err, origin.ErrOutsideRoot) {
		t.Errorf("link-out through aliased root: %v, want ErrOutsideRoot", err)
	}
}

func TestFileVersionChanges(t *testing.T) {
	f := newFileFixture(t)
	ctx := context.Background()
	path := filepath.Join(f.root, "a.bin")
	info, err := f.store.Stat(ctx, f.uri("a.bin"))
	if err != nil {
		t.Fatal(err)
	}
	// Same size, new mtime: a different version.
	if err := os.WriteFile(path, randomBytes(43, len(f.data)), 0o644); err != nil {
		t.Fatal(err)
	}
	later := info.ModTime.Add(time.Second)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 100)
	n, err := f.store.ReadAt(ctx, info.URI, info.Version, p, 0)
	if !errors.Is(err, origin.ErrVersionChanged) || n != 0 {
		t.Fatalf("ReadAt with stale version = (%d, %v), want (0, ErrVersionChanged)", n, err)
	}
	cur, _ := f.store.Stat(ctx, info.URI)
	if cur.Version == info.Version {
		t.Fatalf("version did not change: %s", cur.Version)
	}
	if _, err := f.store.ReadAt(ctx, info.URI, cur.Version, p, 0); err != nil {
		t.Fatalf("ReadAt with the new version: %v", err)
	}
	// Only the mtime changes (touch): a different version as well.
	touched := later.Add(time.Nanosecond)
	if err := os.Chtimes(path, touched, touched); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.ReadAt(ctx, info.URI, cur.Version, p, 0); !errors.Is(err, origin.ErrVersionChanged) {
		t.Fatalf("after a 1ns mtime change: %v, want ErrVersionChanged", err)
	}
	if runtime.GOOS != "linux" {
		return // elsewhere the version is size and mtime only
	}
	// Replaced by rename with a file of the same size and mtime, and then
	// rewritten with its mtime restored (cp -p): new versions both times
	// (a new inode; a new ctime, which user space cannot set).
	cur, _ = f.store.Stat(ctx, info.URI)
	if err := os.WriteFile(path+".tmp", randomBytes(44, len(f.data)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path+".tmp", touched, touched); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	renamed, _ := f.store.Stat(ctx, info.URI)
	if renamed.Version == cur.Version || !renamed.ModTime.Equal(cur.ModTime) {
		t.Fatalf("replaced by rename: version %s (mtime %v), before %s (mtime %v); want a new version, the same mtime",
			renamed.Version, renamed.ModTime, cur.Version, cur.ModTime)
	}
	time.Sleep(20 * time.Millisecond) // past a tick of the kernel's file clock
	if err := os.WriteFile(path, randomBytes(45, len(f.data)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, touched, touched); err != nil {
		t.Fatal(err)
	}
	if restored, _ := f.store.Stat(ctx, info.URI); restored.Version == renamed.Version {
		t.Fatalf("rewritten in place with its mtime restored: version %s unchanged", restored.Version)
	}
}

// TestFileRenameDuringRead replaces the file by write-and-rename (how
// data-lake writers publish files) while reads run, and checks that every
// read returns the bytes of exactly the version it asked for or fails
// with ErrVersionChanged.
func TestFileRenameDuringRead(t *testing.T) {
	f := newFileFixture(t)
	ctx := context.Background()
	path := filepath.Join(f.root, "a.bin")
	const size = 256 << 10
	v := [2][]byte{bytes.Repeat([]byte{0xAA}, size), bytes.Repeat([]byte{0x55}, size)}
	if err := os.WriteFile(path, v[0], 0o644); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tmp := filepath.Join(f.root, ".tmp")
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if os.WriteFile(tmp, v[i%2], 0o644) != nil {
				return
			}
			ts := time.Unix(1_700_000_000, int64(i)) // distinct versions
			os.Chtimes(tmp, ts, ts)
			os.Rename(tmp, path)
		}
	}()
	changed, clean := 0, 0
	for i := 0; i < 300; i++ {
		info, err := f.store.Stat(ctx, f.uri("a.bin"))
		if err != nil {
			t.Fatal(err)
		}
		want := v[0]
		if info.ModTime.UnixNano()%2 == 1 {
			want = v[1]
		}
		if info.ModTime.Unix() != 1_700_000_000 {
			want = v[0] // the initial file
		}
		p := make([]byte, size)
		n, err := f.store.ReadAt(ctx, info.URI, info.Version, p, 0)
		if errors.Is(err, origin.ErrVersionChanged) {
			changed++
			continue
		}
		if err != nil || n != size {
			t.Fatalf("ReadAt = (%d, %v)", n, err)
		}
		if !bytes.Equal(p, want) {
			t.Fatalf("read %d under version %s returned bytes of another version", i, info.Version)
		}
		clean++
	}
	close(stop)
	<-done
	t.Logf("%d clean reads, %d ErrVersionChanged", clean, changed)
}

func TestFileList(t *testing.T) {
	f := newFileFixture(t)
	ctx := context.Background()
	list := func(prefix string) ([]string, error) {
		var out []string
		err := f.store.List(ctx, prefix, func(info origin.Info) error {
			if info.Size <= 0 || info.Version == "" {
				t.Errorf("listed %+v without size or version", info)
			}
			out = append(out, info.URI)
			return nil
		})
		return out, err
	}
	cases := []struct {
		prefix string
		want   []string
		err    error
	}{
		{f.uri("dir") + "/", []string{f.uri("dir/b.parquet"), f.uri("dir/sub/c.parquet")}, nil},
		{f.uri("dir"), []string{f.uri("dir/b.parquet"), f.uri("dir/sub/c.parquet"), f.uri("dir2/d")}, nil},
		{f.uri("dir/sub/c"), []string{f.uri("dir/sub/c.parquet")}, nil},
		{f.uri("a"), []string{f.uri("a.bin")}, nil},
		{f.uri("nothing/"), nil, nil},
		// The whole root: link-in is listed (inside), link-out and
		// dirlink-out are not.
		{f.uri("") + "/", []string{f.uri("a.bin"), f.uri("dir/b.parquet"), f.uri("dir/sub/c.parquet"), f.uri("dir2/d"), f.uri("link-in")}, nil},
		{"file://" + f.root, []string{f.uri("a.bin"), f.uri("dir/b.parquet"), f.uri("dir/sub/c.parquet"), f.uri("dir2/d"), f.uri("link-in")}, nil},
		{f.uri("dirlink-out") + "/", nil, origin.ErrOutsideRoot},
		{"file://" + f.base + "/", nil, origin.ErrOutsideRoot},
		{"file://" + f.root + "/../", nil, origin.ErrOutsideRoot},
	}
	for _, tc := range cases {
		got, err := list(tc.prefix)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("List(%s) = (%v, %v), want %v", tc.prefix, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("List(%s) = (%v, %v), want %v", tc.prefix, got, err, tc.want)
		}
	}
	// Listed infos agree with Stat.
	_ = f.store.List(ctx, f.uri("")+"/", func(info origin.Info) error {
		st, err := f.store.Stat(ctx, info.URI)
		if err != nil || !reflect.DeepEqual(st, info) {
			t.Errorf("List gave %+v, Stat gives (%+v, %v)", info, st, err)
		}
		return nil
	})
}

func TestFileConfig(t *testing.T) {
	if _, err := origin.NewFileStore(origin.FileConfig{}); err == nil {
		t.Error("empty root accepted")
	}
	if _, err := origin.NewFileStore(origin.FileConfig{Root: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("missing root accepted")
	}
}

// With SizeMtimeVersions a file's version is its size and mtime only (for
// roots each node mounts with inode numbers of its own), and a replacement
// of the same size and mtime keeps it: the documented cost.
func TestFileSizeMtimeVersions(t *testing.T) {
	root := t.TempDir()
	s, err := origin.NewFileStore(origin.FileConfig{Root: root, SizeMtimeVersions: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := filepath.Join(root, "f")
	if err := os.WriteFile(p, randomBytes(1, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	before, err := s.Stat(ctx, "file://"+p)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("100-%d", before.ModTime.UnixNano()); before.Version != want {
		t.Fatalf("version %q, want %q", before.Version, want)
	}
	if err := os.WriteFile(p+".tmp", randomBytes(2, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p+".tmp", before.ModTime, before.ModTime); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		t.Fatal(err)
	}
	if after, _ := s.Stat(ctx, "file://"+p); after.Version != before.Version {
		t.Fatalf("a same-size, same-mtime replacement: version %q, want it kept (%q)", after.Version, before.Version)
	}
}
