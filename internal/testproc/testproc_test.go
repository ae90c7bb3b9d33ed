package testproc

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// helper is the daemon of these tests: this test binary re-executed (TestMain
// calls RunIf, so nothing is built).
var helper = Reexec{Env: "LOCUS_TESTPROC_HELPER"}

func TestMain(m *testing.M) {
	helper.RunIf(helperMain)
	code := m.Run()
	helper.Remove()
	os.Exit(code)
}

// helperMain acts out HELPER_MODE: "serve" answers HTTP on HELPER_ADDR
// (200 on /ready) until SIGTERM, then exits 0; "exit" prints a line and
// exits with HELPER_CODE; "hang" prints and ignores SIGTERM.
func helperMain() int {
	fmt.Println("helper started")
	switch os.Getenv("HELPER_MODE") {
	case "serve":
		l, err := net.Listen("tcp", os.Getenv("HELPER_ADDR"))
		if err != nil {
			fmt.Println("listen:", err)
			return 3
		}
		go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/ready" {
				w.WriteHeader(http.StatusNotFound)
			}
		}))
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		<-sig
		fmt.Fprintln(os.Stderr, "helper stopping")
		return 0
	case "exit":
		code, _ := strconv.Atoi(os.Getenv("HELPER_CODE"))
		return code
	case "hang":
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(time.Minute)
	}
	return 0
}

func helperCmd(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	bin := helper.Binary(t)
	cmd := exec.Command(bin)
	cmd.Env = append(append(os.Environ(), helper.Environ(bin)...), env...)
	return cmd
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestStartServeTerminate: Start waits for the probe, the output is
// captured from stdout and stderr, Terminate gets exit 0 on SIGTERM.
func TestStartServeTerminate(t *testing.T) {
	addr := freeAddr(t)
	p := Start(t, helperCmd(t, "HELPER_MODE=serve", "HELPER_ADDR="+addr), Options{
		Name:  "helper",
		Ready: HTTPReady(nil, "http://"+addr+"/ready", http.StatusOK),
	})
	if !HTTPReady(nil, "http://"+addr+"/ready", http.StatusOK)() {
		t.Fatal("Start returned before the probe passed")
	}
	if HTTPReady(nil, "http://"+addr+"/other", http.StatusOK)() || !HTTPReady(nil, "http://"+addr+"/other", 0)() {
		t.Error("HTTPReady: a 404 passes only with want 0")
	}
	if p.Pid() <= 0 {
		t.Errorf("Pid %d", p.Pid())
	}
	if err := p.Terminate(10 * time.Second); err != nil {
		t.Fatalf("Terminate: %v\n%s", err, p.Logs())
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Done not closed after Terminate")
	}
	if logs := p.Logs(); !strings.Contains(logs, "helper started") || !strings.Contains(logs, "helper stopping") {
		t.Errorf("logs %q lack the stdout and stderr lines", logs)
	}
	if code, err := p.Wait(time.Second); code != 0 || err != nil {
		t.Errorf("Wait = %d, %v; want 0, nil", code, err)
	}
	p.Kill() // a no-op once exited
}

func TestWaitExitCode(t *testing.T) {
	p := Start(t, helperCmd(t, "HELPER_MODE=exit", "HELPER_CODE=7"), Options{Name: "helper"})
	if code, err := p.Wait(10 * time.Second); code != 7 || err != nil {
		t.Errorf("Wait = %d, %v; want 7, nil", code, err)
	}
}

// TestWaitReadyErrors: a process that exits, or is never ready, makes
// WaitReady fail naming it.
func TestWaitReadyErrors(t *testing.T) {
	never := func() bool { return false }
	p, err := Launch(helperCmd(t, "HELPER_MODE=exit", "HELPER_CODE=1"), Options{Name: "quitter"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReady(never, 10*time.Second, 10*time.Millisecond); err == nil || !strings.Contains(err.Error(), "quitter exited before it was ready") {
		t.Errorf("WaitReady on an exited process: %v", err)
	}

	p, err = Launch(helperCmd(t, "HELPER_MODE=hang"), Options{Name: "sleeper"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if err := p.WaitReady(never, 100*time.Millisecond, 10*time.Millisecond); err == nil || !strings.Contains(err.Error(), "sleeper not ready after") {
		t.Errorf("WaitReady on a process never ready: %v", err)
	}
	if code, err := p.Wait(10 * time.Millisecond); code != -1 || err == nil {
		t.Errorf("Wait on a running process = %d, %v; want -1 and an error", code, err)
	}
	// Wait until the helper ignores SIGTERM before sending it.
	if err := p.WaitReady(func() bool { return strings.Contains(p.Logs(), "helper started") }, 10*time.Second, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := p.Terminate(200 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "no exit within") {
		t.Errorf("Terminate of a process ignoring SIGTERM: %v", err)
	}
	select {
	case <-p.Done():
	default:
		t.Error("Terminate did not kill the process after its timeout")
	}
}

func TestLaunchMissingBinary(t *testing.T) {
	_, err := Launch(exec.Command(filepath.Join(t.TempDir(), "none")), Options{Name: "ghost"})
	if err == nil || !strings.Contains(err.Error(), "starting ghost") {
		t.Errorf("Launch of a missing binary: %v, want an error naming it", err)
	}
}

// TestSyncBuffer: concurrent writes all land (run with -race), and Limit
// drops writes past it while reporting them written.
func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				b.Write([]byte("x"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := len(b.String()); got != 400 {
		t.Errorf("len %d after 400 one-byte writes, want 400", got)
	}

	l := SyncBuffer{Limit: 4}
	for _, w := range []string{"abc", "de", "fg"} {
		if n, err := l.Write([]byte(w)); n != len(w) || err != nil {
			t.Errorf("Write(%q) = %d, %v", w, n, err)
		}
	}
	if got := l.String(); got != "abcde" {
		t.Errorf("limited buffer holds %q, want %q (writes stop once past the limit)", got, "abcde")
	}
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "locus-testproc-tool")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOPATH", dir)
	if got, err := LookPath("locus-testproc-tool"); err != nil || got != bin {
		t.Errorf("LookPath in GOPATH/bin = %q, %v; want %q", got, err, bin)
	}
	if _, err := LookPath("locus-testproc-no-such-tool"); err == nil || !strings.Contains(err.Error(), "not found in PATH") {
		t.Errorf("LookPath of a missing tool: %v", err)
	}
}

func TestModuleRoot(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "testproc", "doc.go")); err != nil {
		t.Errorf("ModuleRoot %s does not hold internal/testproc: %v", root, err)
	}
}

// TestBinaryBuildFailure: without RunIf, Binary builds Pkg and fails the
// test when go build fails (here: no such package).
func TestBinaryBuildFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	r := Reexec{Env: "LOCUS_TESTPROC_UNUSED", Pkg: "./internal/testproc/no-such-package"}
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); r.Binary(ft) }() // Fatalf ends the goroutine
	<-done
	defer r.Remove()
	if !strings.Contains(ft.msg, "go build ./internal/testproc/no-such-package") {
		t.Errorf("Binary's failure: %q", ft.msg)
	}
}

// fatalRecorder records Fatalf instead of failing the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestFreePortBelowEphemeralRange: FreePort's ports lie below the kernel's
// ephemeral range (which outgoing connections draw from) and are free for
// TCP and UDP.
func TestFreePortBelowEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	for range 20 {
		port, err := FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if port < 10000 || port >= low {
			t.Fatalf("FreePort = %d, want in [10000, %d)", port, low)
		}
		if !free("127.0.0.1", port) {
			t.Fatalf("port %d is not free for TCP and UDP", port)
		}
	}
}
