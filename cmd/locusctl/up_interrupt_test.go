package main

// Regression tests from an adversarial review of `locusctl up` (the
// README's first command): each failed before its fix.

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/testproc"
)

// TestUpRelativeDir: `locusctl up --dir demo` (a relative DIR, as a new
// user types it) works. Was: localcluster built the file:// URIs from the
// relative path ("file://demo/data/lake/") and the gateway refused it.
func TestUpRelativeDir(t *testing.T) {
	t.Chdir(t.TempDir())
	var stdout, stderr testproc.SyncBuffer
	err := upMain(context.Background(), []string{"--dir", "demo", "--no-wait", "--passes", "1", "--tasks", "4", "--rows", "400"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("up --dir demo: %v\n%s", err, stdout.String())
	}
}

// TestUpRelativeTMPDIR: without --dir, up makes its directory in
// os.TempDir(); a relative TMPDIR works as a relative --dir does. Was: the
// same failure as a relative --dir.
func TestUpRelativeTMPDIR(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.Mkdir("tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", "tmp")
	var stdout, stderr testproc.SyncBuffer
	err := upMain(context.Background(), []string{"--no-wait", "--passes", "1", "--tasks", "4", "--rows", "400"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("up with TMPDIR=tmp: %v\n%s", err, stdout.String())
	}
}

// TestUpInterruptDuringDataset: Ctrl-C while up writes its dataset stops
// it within a few seconds. Was: WriteDataset took no context, so up wrote
// every row first (about 80 s for --rows 30000000, which --help allows up
// to 100000000).
func TestUpInterruptDuringDataset(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testproc.SyncBuffer
	errc := make(chan error, 1)
	go func() {
		errc <- upMain(ctx, []string{"--no-wait", "--passes", "1", "--rows", "5000000"}, &stdout, &stderr)
	}()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(stdout.String(), "  scheduler ") { // the cluster is up: the dataset is being written
		select {
		case err := <-errc:
			t.Fatalf("up returned before the dataset phase: %v\n%s", err, stdout.String())
		case <-deadline:
			t.Fatalf("cluster not up within 30s:\n%s", stdout.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	time.Sleep(200 * time.Millisecond)
	cancel() // Ctrl-C
	start := time.Now()
	err := <-errc
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("up took %v to stop after Ctrl-C during dataset generation, want < 3s (err %v)", d.Round(time.Millisecond), err)
	}
}

// TestUpInterruptMessage: Ctrl-C while the cluster starts is reported as an
// interruption (errInterrupted: "interrupted", exit 130), not as a cluster
// failure. Was: "localcluster: the 3 nodes did not agree on one ring:
// context canceled" (or "planning file://...: context canceled"), exit 1.
func TestUpInterruptMessage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr testproc.SyncBuffer
	errc := make(chan error, 1)
	go func() {
		errc <- runWithSignals(ctx, upMain, []string{"--no-wait", "--passes", "1", "--tasks", "4", "--rows", "400"}, &stdout, &stderr)
	}()
	for !strings.Contains(stdout.String(), "node node1") {
		time.Sleep(time.Millisecond)
	}
	cancel() // Ctrl-C during startup
	err := <-errc
	if err == nil {
		t.Skip("up finished before the interrupt landed")
	}
	if !errors.Is(err, errInterrupted) {
		t.Errorf("Ctrl-C during startup reported as %q; want errInterrupted (\"interrupted\", exit 130)", err)
	}
}
