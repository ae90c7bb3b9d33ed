package ociimage

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// built is the image buildLocusImage wrote, once per test binary: the
// tests that need it share one build of both daemons.
var built struct {
	once    sync.Once
	dir     string
	archive string
	tag     name.Tag
	digest  v1.Hash
	err     error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildLocusImage builds both daemons (static, for the host's
// architecture) and writes their image with WriteLocus, as
// scripts/build-image.sh does, once for all the tests that call it. It
// skips the test where that cannot run.
func buildLocusImage(t *testing.T) (archive string, tag name.Tag, digest v1.Hash) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds both daemons; skipped under -short")
	}
	if runtime.GOOS != "linux" {
		t.Skipf("runs the linux binaries it builds; host is %s", runtime.GOOS)
	}
	if _, err := os.Stat(CABundlePath); err != nil {
		t.Skipf("no host CA bundle: %v", err)
	}
	built.once.Do(func() { built.err = writeLocusImage() })
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.archive, built.tag, built.digest
}

func writeLocusImage() error {
	dir, err := os.MkdirTemp("", "ociimage-test")
	if err != nil {
		return err
	}
	built.dir = dir
	for _, cmd := range []string{"cachenode", "scheduler"} {
		build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, cmd),
			"github.com/locuscache/locus/cmd/"+cmd)
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", cmd, err, out)
		}
	}
	if built.tag, err = ParseTag("ghcr.io/locuscache/locus:0.0.0-test"); err != nil {
		return err
	}
	l := Locus{
		Cachenode: filepath.Join(dir, "cachenode"),
		Scheduler: filepath.Join(dir, "scheduler"),
		Arch:      runtime.GOARCH,
		Version:   "0.0.0-test",
		Revision:  "test",
		Created:   time.Unix(1796095258, 0),
	}
	built.archive = filepath.Join(dir, "locus.tar")
	var log bytes.Buffer
	if built.digest, err = WriteLocus(l, built.tag, built.archive, "", &log); err != nil {
		return fmt.Errorf("WriteLocus: %v\n%s", err, log.String())
	}
	return nil
}

// TestLocusImage builds the real image as scripts/build-image.sh does
// (static binaries, then WriteLocus), reads the daemons back out of the
// archive and runs them: each prints its version and exits 0, and
// neither asks for a dynamic loader the image does not have.
func TestLocusImage(t *testing.T) {
	archive, tag, digest := buildLocusImage(t)

	img, err := tarball.ImageFromPath(archive, &tag)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := img.Digest(); err != nil || got != digest {
		t.Errorf("archive digest: got %v (%v), want %v", got, err, digest)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || cf.Config.User != "65532:65532" {
		t.Errorf("config: got %s/%s user %q, want linux/%s user 65532:65532", cf.OS, cf.Architecture, cf.Config.User, runtime.GOARCH)
	}

	out := t.TempDir()
	extracted := extract(t, img, out, map[string]string{
		"usr/local/bin/cachenode":           "cachenode",
		"usr/local/bin/scheduler":           "scheduler",
		"etc/ssl/certs/ca-certificates.crt": "ca.crt",
		"etc/passwd":                        "passwd",
	})
	for _, f := range []string{"cachenode", "scheduler", "ca.crt", "passwd"} {
		if _, ok := extracted[f]; !ok {
			t.Fatalf("%s is not in the image", f)
		}
	}
	if h := extracted["cachenode"]; h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 {
		t.Errorf("cachenode: mode %o owner %d:%d, want 755 0:0", h.Mode, h.Uid, h.Gid)
	}
	if !strings.Contains(readString(t, filepath.Join(out, "passwd")), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot 65532 user")
	}

	for _, cmd := range []string{"cachenode", "scheduler"} {
		exe := filepath.Join(out, cmd)
		f, err := elf.Open(exe)
		if err != nil {
			t.Fatalf("%s from the image: %v", cmd, err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s from the image is dynamically linked (PT_INTERP)", cmd)
			}
		}
		f.Close()

		run := exec.Command(exe, "--version")
		var stdout, stderr bytes.Buffer
		run.Stdout, run.Stderr = &stdout, &stderr
		if err := run.Run(); err != nil {
			t.Errorf("%s --version: %v\nstderr: %s", cmd, err, stderr.String())
			continue
		}
		if !strings.HasPrefix(stdout.String(), cmd+" ") {
			t.Errorf("%s --version: stdout %q, want it to start with %q", cmd, stdout.String(), cmd+" ")
		}
	}
}

// extract copies the layer entries named in want's keys into dir, under
// want's values (mode 0700, so that binaries run), and returns their tar
// headers by the new name.
func extract(t *testing.T, img v1.Image, dir string, want map[string]string) map[string]*tar.Header {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: got %d (%v), want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		to, ok := want[h.Name]
		if !ok {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), data, 0o700); err != nil {
			t.Fatal(err)
		}
		got[to] = h
	}
}

func readString(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
