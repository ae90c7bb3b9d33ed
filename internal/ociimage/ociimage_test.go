package ociimage

import (
	"archive/tar"
	"debug/elf"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// entry is what a test reads back from a layer's tar.
type entry struct {
	typ      byte
	mode     int64
	uid, gid int
	mtime    time.Time
	data     string
}

// layerEntries reads the single layer of img, in tar order.
func layerEntries(t *testing.T, img v1.Image) ([]string, map[string]entry) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("got %d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var names []string
	got := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		got[h.Name] = entry{h.Typeflag, h.Mode, h.Uid, h.Gid, h.ModTime, string(data)}
	}
	return names, got
}

// fakeSpec is a small Spec with a file, a sticky directory and labels.
func fakeSpec(created time.Time) Spec {
	return Spec{
		Files: []File{
			{Path: "/usr/local/bin/tool", Mode: 0o755, Data: []byte("#!tool\n")},
			{Path: "/etc/passwd", Mode: 0o644, Data: []byte(passwd)},
			{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
			{Path: "/data/owned", Mode: 0o600, UID: 65532, GID: 65532, Data: []byte("x")},
		},
		OS:           "linux",
		Architecture: "arm64",
		Created:      created,
		User:         "65532:65532",
		Env:          []string{"PATH=/usr/local/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		WorkingDir:   "/",
		Cmd:          []string{"tool", "--help"},
		Labels:       map[string]string{"org.opencontainers.image.version": "1.2.3", "a": "b"},
		CreatedBy:    "test",
	}
}

// TestBuildReadBack writes a small image as a docker archive and checks
// everything a runtime sees after reading it back: entries, modes,
// owners, times, config and platform.
func TestBuildReadBack(t *testing.T) {
	created := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	img, err := Build(fakeSpec(created))
	if err != nil {
		t.Fatal(err)
	}
	tag, err := ParseTag("registry.example.com/test/tool:1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "img.tar")
	if err := WriteDockerArchive(file, tag, img); err != nil {
		t.Fatal(err)
	}
	back, err := tarball.ImageFromPath(file, &tag)
	if err != nil {
		t.Fatal(err)
	}

	names, got := layerEntries(t, back)
	wantNames := []string{"data/", "data/owned", "etc/", "etc/passwd", "tmp/", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/tool"}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("layer entries: got %q, want %q", names, wantNames)
	}
	want := map[string]entry{
		"data/":              {tar.TypeDir, 0o755, 0, 0, created, ""},
		"data/owned":         {tar.TypeReg, 0o600, 65532, 65532, created, "x"},
		"etc/":               {tar.TypeDir, 0o755, 0, 0, created, ""},
		"etc/passwd":         {tar.TypeReg, 0o644, 0, 0, created, passwd},
		"tmp/":               {tar.TypeDir, 0o1777, 0, 0, created, ""},
		"usr/":               {tar.TypeDir, 0o755, 0, 0, created, ""},
		"usr/local/":         {tar.TypeDir, 0o755, 0, 0, created, ""},
		"usr/local/bin/":     {tar.TypeDir, 0o755, 0, 0, created, ""},
		"usr/local/bin/tool": {tar.TypeReg, 0o755, 0, 0, created, "#!tool\n"},
	}
	for name, w := range want {
		g := got[name]
		if g.typ != w.typ || g.mode != w.mode || g.uid != w.uid || g.gid != w.gid || !g.mtime.Equal(w.mtime) || g.data != w.data {
			t.Errorf("%s: got %+v, want %+v", name, g, w)
		}
	}

	cf, err := back.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "arm64" {
		t.Errorf("platform: got %s/%s, want linux/arm64", cf.OS, cf.Architecture)
	}
	if !cf.Created.Time.Equal(created) {
		t.Errorf("created: got %v, want %v", cf.Created.Time, created)
	}
	c := cf.Config
	if c.User != "65532:65532" || c.WorkingDir != "/" || !slices.Equal(c.Cmd, []string{"tool", "--help"}) || len(c.Entrypoint) != 0 {
		t.Errorf("config: got User %q WorkingDir %q Cmd %q Entrypoint %q", c.User, c.WorkingDir, c.Cmd, c.Entrypoint)
	}
	if !slices.Equal(c.Env, fakeSpec(created).Env) {
		t.Errorf("env: got %q, want %q", c.Env, fakeSpec(created).Env)
	}
	if c.Labels["org.opencontainers.image.version"] != "1.2.3" || c.Labels["a"] != "b" || len(c.Labels) != 2 {
		t.Errorf("labels: got %v", c.Labels)
	}
	if len(cf.RootFS.DiffIDs) != 1 || len(cf.History) != 1 || cf.History[0].CreatedBy != "test" {
		t.Errorf("rootfs/history: got %d diff IDs and history %+v, want one of each", len(cf.RootFS.DiffIDs), cf.History)
	}

	// The archive holds the same image, byte for byte.
	d1, _ := img.Digest()
	d2, err := back.Digest()
	if err != nil || d1 != d2 {
		t.Errorf("digest after reading back: got %v (%v), want %v", d2, err, d1)
	}
}

// TestBuildDeterministic: the same Spec gives the same digest whatever
// the order of Files; changing a byte or the time changes it.
func TestBuildDeterministic(t *testing.T) {
	created := time.Unix(1796095258, 0)
	digest := func(s Spec) v1.Hash {
		t.Helper()
		img, err := Build(s)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a := digest(fakeSpec(created))
	if b := digest(fakeSpec(created)); a != b {
		t.Fatalf("two builds of the same spec: got %v and %v, want equal", a, b)
	}
	reordered := fakeSpec(created)
	slices.Reverse(reordered.Files)
	if b := digest(reordered); a != b {
		t.Errorf("files in another order: got %v, want %v", b, a)
	}
	changed := fakeSpec(created)
	changed.Files[0].Data = []byte("#!tool2\n")
	if b := digest(changed); a == b {
		t.Errorf("changed file content: digest did not change (%v)", a)
	}
	if b := digest(fakeSpec(created.Add(time.Second))); a == b {
		t.Errorf("changed time: digest did not change (%v)", a)
	}
}

// TestBuildBadSpec: impossible specs are refused with ErrBadSpec, not a
// broken image.
func TestBuildBadSpec(t *testing.T) {
	for name, mutate := range map[string]func(*Spec){
		"relative path":   func(s *Spec) { s.Files[0].Path = "usr/bin/x" },
		"unclean path":    func(s *Spec) { s.Files[0].Path = "/usr/../x" },
		"root":            func(s *Spec) { s.Files[0].Path = "/" },
		"duplicate":       func(s *Spec) { s.Files[1].Path = s.Files[0].Path },
		"file under file": func(s *Spec) { s.Files[1].Path = "/usr/local/bin/tool/x" },
		"directory data":  func(s *Spec) { s.Files[2].Data = []byte("x") },
		"no architecture": func(s *Spec) { s.Architecture = "" },
	} {
		t.Run(name, func(t *testing.T) {
			s := fakeSpec(time.Time{})
			mutate(&s)
			if _, err := Build(s); !errors.Is(err, ErrBadSpec) {
				t.Errorf("got %v, want ErrBadSpec", err)
			}
		})
	}
}

// TestParseTag refuses a reference without a tag, which would push to
// :latest without saying so.
func TestParseTag(t *testing.T) {
	for _, ref := range []string{"ghcr.io/locuscache/locus", "localhost:5000/locus", "ghcr.io/Bad/Name:1", "locus:"} {
		if tag, err := ParseTag(ref); err == nil {
			t.Errorf("%s: got %v, want an error", ref, tag)
		}
	}
	for ref, want := range map[string]string{
		"ghcr.io/locuscache/locus:0.1.0": "ghcr.io/locuscache/locus:0.1.0",
		"localhost:5000/locus:dev":       "localhost:5000/locus:dev",
		"locus:1":                        "index.docker.io/library/locus:1",
	} {
		tag, err := ParseTag(ref)
		if err != nil || tag.Name() != want {
			t.Errorf("%s: got %q, %v; want %q", ref, tag.Name(), err, want)
		}
	}
}

// TestWriteOCILayout reads the image back from the layout by its digest;
// an image with Docker media types is refused (oci: readers could not
// find it by tag).
func TestWriteOCILayout(t *testing.T) {
	spec := fakeSpec(time.Time{})
	docker, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := ParseTag("example.com/tool:1")
	if err := WriteOCILayout(t.TempDir(), tag, docker); !errors.Is(err, ErrBadSpec) {
		t.Errorf("WriteOCILayout of a Docker-typed image: %v, want ErrBadSpec", err)
	}
	spec.OCI = true
	img, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteOCILayout(dir, tag, img); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	back, err := p.Image(want)
	if err != nil {
		t.Fatalf("image %v not in the layout: %v", want, err)
	}
	if _, got := layerEntries(t, back); got["usr/local/bin/tool"].data != "#!tool\n" {
		t.Errorf("tool in the layout image: got %q", got["usr/local/bin/tool"].data)
	}
	idx, _ := p.ImageIndex()
	m, _ := idx.IndexManifest()
	if len(m.Manifests) != 1 || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "1" ||
		m.Manifests[0].Platform == nil || m.Manifests[0].Platform.Architecture != "arm64" {
		t.Errorf("index: got %+v, want one linux/arm64 manifest named 1", m.Manifests)
	}
}

// TestCheckStatic: the test binary (built with cgo off or on) is checked
// for what it is, and non-ELF data is refused as the wrong architecture.
func TestCheckStatic(t *testing.T) {
	if err := CheckStatic([]byte("#!/bin/sh\n"), elf.EM_X86_64); !errors.Is(err, ErrWrongArch) {
		t.Errorf("shell script: got %v, want ErrWrongArch", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Skipf("test binary is not ELF: %v", err)
	}
	machine := f.Machine
	dynamic := false
	for _, p := range f.Progs {
		dynamic = dynamic || p.Type == elf.PT_INTERP
	}
	f.Close()
	err = CheckStatic(data, machine)
	if dynamic && !errors.Is(err, ErrNotStatic) {
		t.Errorf("dynamically linked test binary: got %v, want ErrNotStatic", err)
	}
	if !dynamic && err != nil {
		t.Errorf("static test binary: got %v, want nil", err)
	}
	other := elf.EM_AARCH64
	if machine == other {
		other = elf.EM_X86_64
	}
	if err := CheckStatic(data, other); !errors.Is(err, ErrWrongArch) {
		t.Errorf("test binary checked against %v: got %v, want ErrWrongArch", other, err)
	}
}
