package schedulertest

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// DaemonEnv names the environment variable that makes a test binary run
// the scheduler daemon instead of its tests (see RunIfDaemon).
const DaemonEnv = "LOCUS_SCHEDULERTEST_DAEMON"

var reexec bool

// RunIfDaemon lets the test binary of cmd/scheduler be the daemon for
// StartProcess, which saves a go build (several seconds, more on a loaded
// machine) and runs the daemon with the test's flags (-race included).
// Call it first in TestMain with the daemon's main:
//
//	func TestMain(m *testing.M) {
//		schedulertest.RunIfDaemon(func() int { return run(os.Args[1:], os.LookupEnv, os.Stderr) })
//		...
//	}
//
// Started by StartProcess, the binary runs main and exits; otherwise
// RunIfDaemon returns and BuildScheduler hands out the test binary itself.
func RunIfDaemon(main func() int) {
	if os.Getenv(DaemonEnv) == "1" {
		os.Exit(main())
	}
	reexec = true
}

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
	out  []byte
}

// BuildScheduler returns the path of a scheduler daemon binary: the test
// binary itself after RunIfDaemon, else cmd/scheduler built once per test
// binary (go build into a temporary directory; call RemoveBuilds from
// TestMain).
func BuildScheduler(t testing.TB) string {
	t.Helper()
	if reexec {
		self, err := os.Executable()
		if err != nil {
			t.Fatalf("schedulertest: %v", err)
		}
		return self
	}
	build.once.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			build.err = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		if build.dir, err = os.MkdirTemp("", "locus-scheduler-"); err != nil {
			build.err = err
			return
		}
		build.bin = filepath.Join(build.dir, "scheduler")
		cmd := exec.Command("go", "build", "-o", build.bin, "./cmd/scheduler")
		cmd.Dir = root
		build.out, build.err = cmd.CombinedOutput()
	})
	if build.err != nil {
		t.Fatalf("schedulertest: go build ./cmd/scheduler: %v\n%s", build.err, build.out)
	}
	return build.bin
}

// RemoveBuilds deletes what BuildScheduler built.
func RemoveBuilds() {
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
}

// Process is a scheduler daemon started by StartProcess.
type Process struct {
	ID, HTTPAddr, GRPCAddr, GossipAddr string
	clientTLS                          *tls.Config

	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{}
	err  error
}

// ProcessOptions configure StartProcess.
type ProcessOptions struct {
	ID   string
	Join []string
	// Args are more flags, Env more environment.
	Args []string
	Env  []string
	// ClientTLS, when the flags enable TLS, is what the harness (and
	// Client) dial the HTTP listener with.
	ClientTLS *tls.Config
}

// StartProcess starts the scheduler binary with free loopback ports,
// --gossip-tuning=loopback and debug logs, waits until /healthz answers,
// and SIGKILLs it when the test ends if still running (logging its output
// if the test failed).
func StartProcess(t testing.TB, bin string, o ProcessOptions) *Process {
	t.Helper()
	p := &Process{
		ID:         o.ID,
		HTTPAddr:   fmt.Sprintf("127.0.0.1:%d", FreePort(t)),
		GRPCAddr:   fmt.Sprintf("127.0.0.1:%d", FreePort(t)),
		GossipAddr: fmt.Sprintf("127.0.0.1:%d", FreePort(t)),
		logs:       &syncBuffer{},
		done:       make(chan struct{}),
		clientTLS:  o.ClientTLS,
	}
	args := []string{
		"--node-id=" + o.ID, "--http-addr=" + p.HTTPAddr, "--grpc-addr=" + p.GRPCAddr, "--gossip-addr=" + p.GossipAddr,
		"--gossip-tuning=loopback", "--log-level=debug",
	}
	if len(o.Join) > 0 {
		args = append(args, "--join="+strings.Join(o.Join, ","))
	}
	args = append(args, o.Args...)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(append(os.Environ(), DaemonEnv+"=1"), o.Env...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("schedulertest: start %s: %v", bin, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("log of scheduler %s:\n%s", p.ID, p.Logs())
		}
	})
	c := p.Client()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := c.HTTP.Get(c.Base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.done:
			t.Fatalf("schedulertest: scheduler %s exited (%v):\n%s", o.ID, p.err, p.Logs())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("schedulertest: scheduler %s not serving after 30s:\n%s", o.ID, p.Logs())
		}
	}
}

// Client returns a JSON client of the process (over TLS with
// ProcessOptions.ClientTLS).
func (p *Process) Client() *Client {
	c := NewClient(p.HTTPAddr)
	if p.clientTLS != nil {
		c.Base = "https://" + p.HTTPAddr
		c.HTTP.Transport.(*http.Transport).TLSClientConfig = p.clientTLS
	}
	return c
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Kill sends SIGKILL and reaps the process.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Terminate sends SIGTERM and waits up to timeout for the exit; it returns
// the exit error (nil for exit 0).
func (p *Process) Terminate(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("no exit within %v of SIGTERM", timeout)
	}
}

// Logs returns what the process wrote so far.
func (p *Process) Logs() string { return p.logs.String() }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
