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

	"github.com/locuscache/locus/pkg/node/nodetest"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

func TestMain(m *testing.M) {
	code := m.Run()
	nodetest.RemoveBuilds()
	os.Exit(code)
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
