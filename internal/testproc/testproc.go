package testproc

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Defaults of Options.
const (
	// DefaultTimeout bounds the wait for readiness: a daemon that joins a
	// gossip and re-indexes a cache on a loaded 2-core machine can take
	// several seconds; 30s only fails a daemon that is stuck.
	DefaultTimeout = 30 * time.Second
	// DefaultPoll is the pause between two readiness probes.
	DefaultPoll = 50 * time.Millisecond
)

// Options configure Start and Launch.
type Options struct {
	// Name names the process in errors and in the log dump of a failed
	// test: "node n1", "scheduler s1". Default: the command's path.
	Name string
	// Ready is the readiness probe (see HTTPReady), called until it
	// returns true. Nil: Start returns as soon as the process started.
	Ready func() bool
	// Timeout bounds the wait for Ready (default DefaultTimeout).
	Timeout time.Duration
	// Poll is the pause between probes (default DefaultPoll).
	Poll time.Duration
	// LogLimit, when > 0, bounds the captured output (see SyncBuffer.Limit).
	LogLimit int
}

func (o Options) withDefaults(cmd *exec.Cmd) Options {
	if o.Name == "" {
		o.Name = cmd.Path
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	return o
}

// Proc is a child process started by Start or Launch, with its stdout and
// stderr captured.
type Proc struct {
	name string
	cmd  *exec.Cmd
	logs *SyncBuffer
	done chan struct{}
	err  error // the exit error of cmd.Wait, set before done closes
}

// Launch starts cmd with its stdout and stderr going to the Proc's log,
// and reaps it in the background. It does not wait for readiness (see
// WaitReady) nor stop the process when a test ends (see Start).
func Launch(cmd *exec.Cmd, o Options) (*Proc, error) {
	o = o.withDefaults(cmd)
	p := &Proc{name: o.Name, cmd: cmd, logs: &SyncBuffer{Limit: o.LogLimit}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", o.Name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Start launches cmd, SIGKILLs it when the test ends if it still runs
// (logging its output if the test failed), and waits until o.Ready
// passes. It fails the test, with the process's output, when the process
// cannot start, exits before it is ready, or is not ready in o.Timeout.
func Start(t testing.TB, cmd *exec.Cmd, o Options) *Proc {
	t.Helper()
	o = o.withDefaults(cmd)
	p, err := Launch(cmd, o)
	if err != nil {
		t.Fatalf("testproc: %v", err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("log of %s:\n%s", p.name, p.Logs())
		}
	})
	if o.Ready != nil {
		if err := p.WaitReady(o.Ready, o.Timeout, o.Poll); err != nil {
			t.Fatalf("testproc: %v:\n%s", err, p.Logs())
		}
	}
	return p
}

// WaitReady calls ready every poll until it returns true (nil), the
// process exits, or timeout passes (errors naming the process).
func (p *Proc) WaitReady(ready func() bool, timeout, poll time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if ready() {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready (%v)", p.name, p.err)
		case <-time.After(poll):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %v", p.name, timeout)
		}
	}
}

// HTTPReady returns a readiness probe: GET url answers want (any status
// when want is 0). A nil client is one with a 2s timeout.
func HTTPReady(c *http.Client, url string, want int) func() bool {
	if c == nil {
		c = &http.Client{Timeout: 2 * time.Second}
	}
	return func() bool {
		resp, err := c.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return want == 0 || resp.StatusCode == want
	}
}

// Pid returns the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill SIGKILLs the process, if it still runs, and waits for it to exit.
func (p *Proc) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Terminate sends SIGTERM and waits up to timeout for the exit, returning
// the exit error (nil for exit 0); after timeout it kills the process and
// returns an error saying so.
func (p *Proc) Terminate(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("no exit within %v of SIGTERM", timeout)
	}
}

// Wait waits up to timeout for the process to exit and returns its exit
// code (-1 with the error when it could not run to an exit code, or is
// still running after timeout).
func (p *Proc) Wait(timeout time.Duration) (int, error) {
	select {
	case <-p.done:
	case <-time.After(timeout):
		return -1, fmt.Errorf("%s still running after %v", p.name, timeout)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode(), nil
	}
	if p.err != nil {
		return -1, p.err
	}
	return 0, nil
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Logs returns what the process wrote to stdout and stderr so far.
func (p *Proc) Logs() string { return p.logs.String() }

// SyncBuffer is a bytes.Buffer that one goroutine may write while others
// read: the log of a child process, the output of a command run in a
// goroutine. The zero value is empty and ready to use.
type SyncBuffer struct {
	// Limit, when > 0, bounds the buffer: once it holds more than Limit
	// bytes, further writes are dropped (and reported as written), so a
	// chatty server cannot fill the memory of a long test.
	Limit int

	mu sync.Mutex // guards b
	b  bytes.Buffer
}

// Write appends p (or drops it past Limit).
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Limit > 0 && s.b.Len() > s.Limit {
		return len(p), nil
	}
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
