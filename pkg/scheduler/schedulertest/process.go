package schedulertest

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/testproc"
)

// DaemonEnv names the environment variable that makes a test binary run
// the scheduler daemon instead of its tests (see RunIfDaemon).
const DaemonEnv = "LOCUS_SCHEDULERTEST_DAEMON"

// daemon hands out the scheduler binary: this test binary after
// RunIfDaemon, else cmd/scheduler built once.
var daemon = testproc.Reexec{Env: DaemonEnv, Pkg: "./cmd/scheduler"}

// RunIfDaemon lets the test binary of cmd/scheduler be the daemon for
// StartProcess, which saves a go build (several seconds, more on a loaded
// machine) and runs the daemon with the test's flags (-race included).
// Call it first in TestMain with the daemon's main:
//
//	func TestMain(m *testing.M) {
//		schedulertest.RunIfDaemon(func() int { return run(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr) })
//		...
//	}
//
// Started by StartProcess, the binary runs main and exits; otherwise
// RunIfDaemon returns and BuildScheduler hands out the test binary itself.
func RunIfDaemon(main func() int) { daemon.RunIf(main) }

// BuildScheduler returns the path of a scheduler daemon binary: the test
// binary itself after RunIfDaemon, else cmd/scheduler built once per test
// binary (go build into a temporary directory; call RemoveBuilds from
// TestMain).
func BuildScheduler(t testing.TB) string {
	t.Helper()
	return daemon.Binary(t)
}

// RemoveBuilds deletes what BuildScheduler built.
func RemoveBuilds() { daemon.Remove() }

// Process is a scheduler daemon started by StartProcess.
type Process struct {
	ID, HTTPAddr, GRPCAddr, GossipAddr string
	clientTLS                          *tls.Config

	proc *testproc.Proc
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
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), daemon.Environ(bin)...), o.Env...)
	c := p.Client()
	p.proc = testproc.Start(t, cmd, testproc.Options{
		Name:  "scheduler " + o.ID,
		Ready: testproc.HTTPReady(c.HTTP, c.Base+"/healthz", http.StatusOK),
	})
	return p
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
func (p *Process) Pid() int { return p.proc.Pid() }

// Kill sends SIGKILL and reaps the process.
func (p *Process) Kill() { p.proc.Kill() }

// Terminate sends SIGTERM and waits up to timeout for the exit; it returns
// the exit error (nil for exit 0).
func (p *Process) Terminate(timeout time.Duration) error { return p.proc.Terminate(timeout) }

// Logs returns what the process wrote so far.
func (p *Process) Logs() string { return p.proc.Logs() }
