package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/flagenv"
	"github.com/locuscache/locus/pkg/node/nodetest"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

func TestMain(m *testing.M) {
	code := m.Run()
	nodetest.RemoveBuilds()
	os.Exit(code)
}

func TestParseSize(t *testing.T) {
	good := map[string]int64{
		"0": 0, "134217728": 134217728, "128MiB": 128 << 20, "10GiB": 10 << 30, "1g": 1 << 30, "1G": 1 << 30,
		"512k": 512 << 10, "64 MiB": 64 << 20, "1.5GiB": 3 << 29, "500MB": 500_000_000, "2TiB": 2 << 40,
		"1t": 1 << 40, "4096B": 4096, "1kb": 1000,
	}
	for in, want := range good {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "abc", "-1", "1.2.3GiB", "10XB", "MiB", "9999999999TiB", "99999999999999999999", "1e9"} {
		if v, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, v)
		}
	}
	for _, n := range []int64{1, 1023, 1 << 10, 3 << 20, 128 << 20, 5 << 30, 1 << 40} {
		back, err := parseSize(formatSize(n))
		if err != nil || back != n {
			t.Errorf("formatSize(%d) = %q does not parse back (%d, %v)", n, formatSize(n), back, err)
		}
	}
}

// TestFlagsPerDesign: every flag DESIGN.md names exists, each with its
// LOCUS_* variable in --help.
func TestFlagsPerDesign(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"--help"}, func(string) (string, bool) { return "", false }, &out); code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	help := out.String()
	for _, f := range []string{"node-id", "rack", "gossip-addr", "join", "grpc-addr", "http-addr", "cache-dir", "cache-size",
		"memory-size", "slots", "block-size", "page-size", "origin-s3-endpoint", "origin-s3-region", "origin-s3-path-style",
		"origin-file-root", "gossip-key-file", "tls-cert", "tls-key", "tls-ca"} {
		if !strings.Contains(help, "--"+f+" ") && !strings.Contains(help, "--"+f+"   ") {
			t.Errorf("--help lacks --%s", f)
		}
		if !strings.Contains(help, flagenv.EnvName(f)) {
			t.Errorf("--help lacks %s", flagenv.EnvName(f))
		}
	}
	for _, d := range []string{"127.0.0.1:7946", "127.0.0.1:7070", "127.0.0.1:7080"} {
		if !strings.Contains(help, d) {
			t.Errorf("--help lacks the default %s", d)
		}
	}
}

// TestBadConfigExits: bad flags exit 2, unusable configurations exit 1,
// each with one line on stderr.
func TestBadConfigExits(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		code int
		want string
	}{
		{"unknown flag", []string{"--no-such-flag"}, nil, 2, "no-such-flag"},
		{"bad size", []string{"--cache-size=lots"}, nil, 2, "cache-size"},
		{"bad size in env", nil, map[string]string{"LOCUS_MEMORY_SIZE": "huge"}, 2, "LOCUS_MEMORY_SIZE"},
		{"positional", []string{"extra"}, nil, 2, "unexpected"},
		{"bad log level", []string{"--log-level=loud"}, nil, 2, "log-level"},
		{"cache dir without size", []string{"--cache-dir=" + dir, "--grpc-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0", "--gossip-addr=127.0.0.1:0"}, nil, 1, "cache-size"},
		{"cert without key", []string{"--tls-cert=/x.pem", "--grpc-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0", "--gossip-addr=127.0.0.1:0"}, nil, 1, "tls-key"},
		{"missing cert file", []string{"--tls-cert=/nope.pem", "--tls-key=/nope-key.pem", "--grpc-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0", "--gossip-addr=127.0.0.1:0"}, nil, 1, "nope.pem"},
		{"page size not dividing block", []string{"--page-size=3MiB", "--grpc-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0", "--gossip-addr=127.0.0.1:0"}, nil, 1, "does not divide"},
		{"bad gossip tuning", []string{"--gossip-tuning=wan"}, nil, 1, "gossip-tuning"},
		{"missing file root", []string{"--origin-file-root=/no/such/dir"}, nil, 1, "origin-file-root"},
		{"missing key file", []string{"--gossip-key-file=/no/key", "--grpc-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0", "--gossip-addr=127.0.0.1:0"}, nil, 1, "key"},
		{"bad gateway bucket", []string{"--gateway-bucket=lake"}, nil, 1, "gateway-bucket"},
		{"unbindable address", []string{"--grpc-addr=192.0.2.1:1", "--http-addr=127.0.0.1:0", "--gossip-addr=127.0.0.1:0"}, nil, 1, "gRPC listener"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			code := run(tc.args, lookup, &out)
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			last := lines[len(lines)-1]
			if code != tc.code || !strings.Contains(last, tc.want) || !strings.HasPrefix(last, "cachenode: ") {
				t.Fatalf("exit %d, last line %q; want exit %d and a line about %q\n%s", code, last, tc.code, tc.want, out.String())
			}
			if tc.code == 2 && len(lines) != 1 {
				t.Fatalf("bad flag printed %d lines, want one:\n%s", len(lines), out.String())
			}
		})
	}
}

// TestDaemonFromEnvironment runs the built daemon configured only through
// LOCUS_* variables: it serves a file, reports the configured capacity on
// /metrics, and exits 0 on SIGINT.
func TestDaemonFromEnvironment(t *testing.T) {
	bin := nodetest.BuildCachenode(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello, locus"), 0o644); err != nil {
		t.Fatal(err)
	}
	grpcAddr, httpAddr := nodetest.FreeAddr(t, "127.0.0.1"), nodetest.FreeAddr(t, "127.0.0.1")
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"LOCUS_NODE_ID=envnode", "LOCUS_GOSSIP_ADDR="+nodetest.FreeAddr(t, "127.0.0.1"),
		"LOCUS_GRPC_ADDR="+grpcAddr, "LOCUS_HTTP_ADDR="+httpAddr,
		"LOCUS_MEMORY_SIZE=16MiB", "LOCUS_PAGE_SIZE=64KiB", "LOCUS_BLOCK_SIZE=4MiB",
		"LOCUS_ORIGIN_FILE_ROOT="+root, "LOCUS_LOG_FORMAT=json")
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cl := nodetest.Dial(t, grpcAddr, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, s, err := nodetest.ReadRange(ctx, cl, &cachev1.ReadRangeRequest{Uri: "file://" + root + "/hello.txt", Offset: 7, Length: 100})
	if err != nil || string(got) != "locus" || s.NodeID != "envnode" {
		t.Fatalf("read: %q %+v %v", got, s, err)
	}
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "locus_cache_capacity_bytes 1.6777216e+07") {
		t.Fatalf("capacity not 16 MiB in /metrics")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, logs.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no exit after SIGINT\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `"msg":"stopped"`) {
		t.Fatalf("JSON logs lack the stop line:\n%s", logs.String())
	}
}
