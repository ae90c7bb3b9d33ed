package ociimage

// Regression tests from a review of the image builder and its script:
// each failed before its fix.

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/locuscache/locus/internal/testproc"
)

// runBuildScript runs scripts/build-image.sh of the checkout root with
// args, GOOS/GOARCH removed from the environment and then env added, and
// returns its combined output and error.
func runBuildScript(t *testing.T, root string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "scripts", "build-image.sh")}, args...)...)
	cmd.Dir = t.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOOS=") && !strings.HasPrefix(kv, "GOARCH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func skipScript(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds both daemons; skipped under -short")
	}
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skipf("host %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if _, err := os.Stat(CABundlePath); err != nil {
		t.Skipf("no host CA bundle: %v", err)
	}
}

// TestBuildScriptGOARCHFromEnvironment: the script's --arch
// defaults to `go env GOARCH`, so exporting GOARCH is a natural way to
// pick the image's architecture.
//
// Was: GOARCH in the environment also reaches `go run
// ./internal/ociimage/cmd/mkimage`, which then builds mkimage itself for
// the target and fails to exec it on the host ("fork/exec .../mkimage:
// exec format error"), after building both daemons. The same happens with
// `GOARCH=arm64 scripts/build-image.sh --arch amd64` and with any GOOS
// other than the host's exported.
// Fixed: the script runs mkimage with GOOS, GOARCH and CGO_ENABLED
// cleared; the image is for the exported GOARCH.
func TestBuildScriptGOARCHFromEnvironment(t *testing.T) {
	skipScript(t)
	root, err := testproc.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	out := filepath.Join(t.TempDir(), "img.tar")
	log, err := runBuildScript(t, root, []string{"GOARCH=" + other, "SOURCE_DATE_EPOCH=1700000000"},
		"--out", out, "--tag", "locus:review")
	if err != nil {
		t.Fatalf("GOARCH=%s scripts/build-image.sh: %v\n%s", other, err, log)
	}
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Architecture != other {
		t.Errorf("image architecture %s, want %s (the exported GOARCH)", cf.Architecture, other)
	}
}

// TestBuildScriptDirtyTreeRevision: the image's
// org.opencontainers.image.revision label must not claim a clean commit
// for binaries built from modified sources.
//
// Was: in a checkout with uncommitted changes the label is the bare HEAD
// hash, while the daemons inside report "<version>+dirty" / "<hash>+modified"
// (-buildvcs=true), and the usage text promises "rebuilding the same commit
// gives the same digest": two images with different contents carry the
// same revision (and the release tag). Seen with a copy of the checkout
// and one comment appended to cmd/scheduler/main.go.
// Fixed: the script marks the revision "<hash>-dirty" (and says so).
func TestBuildScriptDirtyTreeRevision(t *testing.T) {
	skipScript(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root, err := testproc.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	// A private clone (reads the checkout, changes nothing in it).
	clone := filepath.Join(t.TempDir(), "repo")
	if out, err := exec.Command("git", "clone", "--quiet", "--local", "--no-hardlinks", root, clone).CombinedOutput(); err != nil {
		t.Skipf("cannot clone the checkout: %v\n%s", err, out)
	}
	head, err := exec.Command("git", "-C", clone, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(clone, "cmd", "scheduler", "main.go"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\n// an uncommitted change\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "img.tar")
	log, err := runBuildScript(t, clone, []string{"SOURCE_DATE_EPOCH=1700000000"},
		"--out", out, "--tag", "locus:review", "--arch", runtime.GOARCH)
	if err != nil {
		return // refusing a dirty tree is acceptable
	}
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	rev := cf.Config.Labels["org.opencontainers.image.revision"]
	if rev == strings.TrimSpace(string(head)) {
		t.Errorf("revision label %q is the clean HEAD, but the image was built from a modified tree", rev)
	}
}

// TestOCILayoutReadableByTag: WriteOCILayout's doc promises that
// `skopeo copy oci:dir:TAG ...` reads the layout.
//
// Was: the layout's index entry (and the manifest, config and layer) keep
// the Docker schema 2 media types of empty.Image
// (application/vnd.docker.distribution.manifest.v2+json). containers/image
// as shipped here (podman 4.3.1, and skopeo of the same generation) only
// matches org.opencontainers.image.ref.name on OCI manifest/index
// entries, so `podman pull oci:DIR:0.1.0` of the layout
// scripts/build-image.sh --oci-layout writes fails with 'no descriptor
// found for reference "0.1.0"' (only the tag-less oci:DIR works). With the
// index entry's mediaType edited to OCI the reference is found, then the
// Docker config type is refused ("unsupported image-specific operation on
// artifact with type application/vnd.docker.container.image.v1+json").
// Fixed: WriteLocus writes the layout from the image built with
// Spec.OCI (OCI manifest, config and layer media types), and
// WriteOCILayout refuses a Docker-typed image.
func TestOCILayoutReadableByTag(t *testing.T) {
	spec := fakeSpec(time.Unix(1700000000, 0))
	spec.Architecture = runtime.GOARCH
	// A label unique to this run keeps the image ID apart from any other.
	spec.Labels["review.run"] = time.Now().Format(time.RFC3339Nano)
	spec.OCI = true
	img, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := ParseTag("example.com/tool:1")
	// Lower case: podman names the pulled image after the directory.
	dir, err := os.MkdirTemp("", "reviewoci")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := WriteOCILayout(dir, tag, img); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].MediaType != types.OCIManifestSchema1 {
		t.Errorf("index entries %+v: want one %s", m.Manifests, types.OCIManifestSchema1)
	}

	// The behaviour itself, where podman runs (as root, as podman_test.go).
	if _, err := exec.LookPath("podman"); err != nil || os.Geteuid() != 0 {
		return
	}
	podman := newPodman(t)
	out, err := podman("pull", "-q", "oci:"+dir+":1")
	if cf, cerr := img.ConfigName(); cerr == nil {
		podman("rmi", "-f", cf.Hex) // nothing to remove when the pull failed
	}
	if err != nil {
		t.Errorf("podman pull oci:DIR:1: %v\n%s", err, out)
	}
}
