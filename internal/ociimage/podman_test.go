package ociimage

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/testproc"
)

// TestLocusImageUnderPodman loads the real image into podman and runs a
// cache node from it as the Helm chart runs it: read-only root file
// system, user 65532, /tmp and the cache directory as writable volumes,
// the origin's files mounted read-only. The node must come up (/readyz
// 200), cache on its disk volume and serve an object through its S3
// gateway; the scheduler's binary must run too. It skips without podman
// and runc (CI installs both and sets LOCUS_REQUIRE_TOOLS=1).
//
// Two settings make podman work on these VMs, and neither changes the
// image: runc (crun refuses the hybrid cgroup layout) and no default
// ulimits (the sandbox may not raise RLIMIT_NOFILE).
func TestLocusImageUnderPodman(t *testing.T) {
	for _, tool := range []string{"podman", "runc"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("LOCUS_REQUIRE_TOOLS") == "1" {
				t.Fatalf("%s is required (LOCUS_REQUIRE_TOOLS=1): %v", tool, err)
			}
			t.Skipf("%s not installed: %v", tool, err)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("runs podman as root")
	}
	archive, tag, _ := buildLocusImage(t)
	podman := newPodman(t)
	ref := tag.String()
	if out, err := podman("load", "-i", archive); err != nil {
		t.Fatalf("podman load: %v\n%s", err, out)
	}
	t.Cleanup(func() { podman("rmi", "-f", ref) })

	if out, err := podman("run", "--rm", "--read-only", "--user", "65532:65532", "--network", "none", ref, "scheduler", "--version"); err != nil || !strings.HasPrefix(out, "scheduler ") {
		t.Fatalf("scheduler --version in the image: %v\n%s", err, out)
	}

	data := filepath.Join(t.TempDir(), "data")
	want := []byte("bytes of an object in the lake\n")
	if err := os.MkdirAll(filepath.Join(data, "lake"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "lake", "a.bin"), want, 0o644); err != nil {
		t.Fatal(err)
	}
	ports := make([]int, 3)
	for i := range ports {
		p, err := testproc.FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	name := fmt.Sprintf("locus-image-test-%d", os.Getpid())
	out, err := podman("run", "-d", "--name", name, "--read-only", "--user", "65532:65532", "--network", "host",
		"--tmpfs", "/tmp", "--tmpfs", "/var/cache/locus:mode=1777", "-v", data+":/data:ro", ref,
		"cachenode", "--node-id", "n1",
		fmt.Sprintf("--gossip-addr=127.0.0.1:%d", ports[0]), fmt.Sprintf("--grpc-addr=127.0.0.1:%d", ports[1]),
		fmt.Sprintf("--http-addr=127.0.0.1:%d", ports[2]),
		"--cache-dir=/var/cache/locus", "--cache-size=64MiB", "--origin-file-root=/data", "--gateway-bucket=lake=file:///data/lake/")
	if err != nil {
		t.Fatalf("podman run cachenode: %v\n%s", err, out)
	}
	t.Cleanup(func() { podman("rm", "-f", "-t", "5", name) })
	logs := func() string { out, _ := podman("logs", name); return out }

	base := fmt.Sprintf("http://127.0.0.1:%d", ports[2])
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node in the image was not ready after 30s (last: %v)\nlogs:\n%s", err, logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := range 2 { // a miss that fills the disk cache, then a hit
		res, err := http.Get(base + "/lake/a.bin")
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
			t.Fatalf("GET %d through the image's gateway: status %d, %q, %v; want 200 and %q\nlogs:\n%s", i, res.StatusCode, got, err, want, logs())
		}
	}
	if l := logs(); !strings.Contains(l, "mode=disk") {
		t.Errorf("the node did not cache on its disk volume; logs:\n%s", l)
	}
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(metrics), "locus_cache_hits_total 1") {
		t.Errorf("want one cache hit after two GETs; metrics:\n%s", grepLines(string(metrics), "locus_cache_"))
	}
}

// newPodman returns a function that runs podman with args and returns
// its combined output, with the two settings these VMs need (runc, no
// default ulimits; see TestLocusImageUnderPodman).
func newPodman(t *testing.T) func(args ...string) (string, error) {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "containers.conf")
	if err := os.WriteFile(conf, []byte("[containers]\ndefault_ulimits = []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "podman", append([]string{"--runtime", "runc"}, args...)...)
		cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
