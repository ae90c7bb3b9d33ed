package nodetest

import (
	"bytes"
	"errors"
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

	"github.com/locuscache/locus/pkg/node/daemon"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

// DaemonEnv names the environment variable that makes a test binary run
// the cache node daemon instead of its tests (see RunIfDaemon).
const DaemonEnv = "LOCUS_NODETEST_DAEMON"

var reexec bool

// RunIfDaemon lets a test binary be the cachenode daemon for StartProcess,
// which saves building cmd/cachenode (a link of several seconds, much more
// on a loaded machine). Call it first in TestMain:
//
//	func TestMain(m *testing.M) {
//		nodetest.RunIfDaemon()
//		code := m.Run()
//		nodetest.RemoveBuilds()
//		os.Exit(code)
//	}
//
// Started by StartProcess, the binary runs daemon.Main with the process's
// arguments and exits; otherwise RunIfDaemon returns and BuildCachenode
// hands out the test binary itself. The daemon code is the same as
// cmd/cachenode's (which is daemon.Main and nothing else), compiled with the
// test's flags (-race included).
func RunIfDaemon() {
	if os.Getenv(DaemonEnv) == "1" {
		os.Exit(daemon.Main(os.Args[1:], os.LookupEnv, os.Stderr))
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

// BuildCachenode returns the path of a cachenode daemon binary: the test
// binary itself after RunIfDaemon, else cmd/cachenode built once per test
// binary (in a temporary directory; call RemoveBuilds from TestMain to
// delete it).
func BuildCachenode(t testing.TB) string {
	t.Helper()
	if reexec {
		self, err := os.Executable()
		if err != nil {
			t.Fatalf("nodetest: %v", err)
		}
		return self
	}
	build.once.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			build.err = err
			return
		}
		if build.dir, err = os.MkdirTemp("", "locus-cachenode-"); err != nil {
			build.err = err
			return
		}
		build.bin = filepath.Join(build.dir, "cachenode")
		cmd := exec.Command("go", "build", "-o", build.bin, "./cmd/cachenode")
		cmd.Dir = root
		build.out, build.err = cmd.CombinedOutput()
	})
	if build.err != nil {
		t.Fatalf("nodetest: go build ./cmd/cachenode: %v\n%s", build.err, build.out)
	}
	return build.bin
}

// RemoveBuilds deletes the binary BuildCachenode built, if any. Call it
// from TestMain after m.Run.
func RemoveBuilds() {
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
}

// ProcessOptions configure StartProcess.
type ProcessOptions struct {
	// ID is the node id (--node-id).
	ID string
	// IP is the loopback address the node listens on (default 127.0.0.1).
	IP string
	// GossipAddr, GRPCAddr and HTTPAddr default to free ports on IP.
	GossipAddr, GRPCAddr, HTTPAddr string
	// Join lists gossip addresses to join.
	Join []string
	// VersityGW adds the --origin-s3-* flags and its credentials.
	VersityGW *origintest.VersityGW
	// FileRoot sets --origin-file-root.
	FileRoot string
	// CacheDir and CacheSize set the disk cache (CacheSize e.g. "64MiB").
	CacheDir, CacheSize string
	// TLS sets --tls-cert/--tls-key, and MTLS --tls-ca as well.
	TLS  *TLSFiles
	MTLS bool
	// Args are more flags (e.g. --block-size=1MiB); Env more environment.
	Args []string
	Env  []string
}

// Process is a cachenode daemon started by StartProcess.
type Process struct {
	ID, GossipAddr, GRPCAddr, HTTPAddr string
	Opts                               ProcessOptions

	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{}
	err  error // the process's exit error, set before done closes
}

// StartProcess starts bin (see BuildCachenode) with the flags opts
// describes plus --gossip-tuning=loopback, waits until its /readyz answers
// 200, and SIGKILLs it when the test ends if it is still running. It fails
// the test (with the node's log) if the node exits or is not ready in 30s.
func StartProcess(t testing.TB, bin string, opts ProcessOptions) *Process {
	t.Helper()
	if opts.IP == "" {
		opts.IP = "127.0.0.1"
	}
	if opts.GossipAddr == "" {
		opts.GossipAddr = FreeAddr(t, opts.IP)
	}
	if opts.GRPCAddr == "" {
		opts.GRPCAddr = FreeAddr(t, opts.IP)
	}
	if opts.HTTPAddr == "" {
		opts.HTTPAddr = FreeAddr(t, opts.IP)
	}
	args := []string{
		"--node-id=" + opts.ID,
		"--gossip-addr=" + opts.GossipAddr,
		"--grpc-addr=" + opts.GRPCAddr,
		"--http-addr=" + opts.HTTPAddr,
		"--gossip-tuning=loopback",
		"--log-level=debug",
	}
	if len(opts.Join) > 0 {
		args = append(args, "--join="+strings.Join(opts.Join, ","))
	}
	env := os.Environ()
	if gw := opts.VersityGW; gw != nil {
		args = append(args, "--origin-s3-endpoint="+gw.Endpoint, "--origin-s3-region="+gw.Region, "--origin-s3-path-style")
		env = append(env, "AWS_ACCESS_KEY_ID="+gw.AccessKey, "AWS_SECRET_ACCESS_KEY="+gw.SecretKey)
	}
	if opts.FileRoot != "" {
		args = append(args, "--origin-file-root="+opts.FileRoot)
	}
	if opts.CacheDir != "" {
		args = append(args, "--cache-dir="+opts.CacheDir, "--cache-size="+opts.CacheSize)
	}
	if opts.TLS != nil {
		args = append(args, "--tls-cert="+opts.TLS.CertFile, "--tls-key="+opts.TLS.KeyFile)
		if opts.MTLS {
			args = append(args, "--tls-ca="+opts.TLS.CAFile)
		}
	}
	args = append(args, opts.Args...)
	env = append(env, opts.Env...)
	if self, err := os.Executable(); err == nil && self == bin {
		env = append(env, DaemonEnv+"=1")
	}

	p := &Process{ID: opts.ID, GossipAddr: opts.GossipAddr, GRPCAddr: opts.GRPCAddr, HTTPAddr: opts.HTTPAddr,
		Opts: opts, logs: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = env
	p.cmd.Stdout = p.logs
	p.cmd.Stderr = p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("nodetest: starting %s: %v", bin, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("log of node %s:\n%s", p.ID, p.Logs())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, err := p.Readyz(); err == nil && code == http.StatusOK {
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("nodetest: node %s exited before it was ready (%v):\n%s", p.ID, p.err, p.Logs())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("nodetest: node %s not ready after 30s:\n%s", p.ID, p.Logs())
		}
	}
}

// HTTPClient returns a client for the node's HTTP listener.
func (p *Process) HTTPClient() *http.Client {
	if p.Opts.TLS == nil {
		return &http.Client{Timeout: 30 * time.Second}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: p.Opts.TLS.ClientConfig()}}
}

// URL returns the base URL of the node's HTTP listener.
func (p *Process) URL() string {
	if p.Opts.TLS != nil {
		return "https://" + p.HTTPAddr
	}
	return "http://" + p.HTTPAddr
}

// Readyz returns the status code of GET /readyz.
func (p *Process) Readyz() (int, error) {
	c := p.HTTPClient()
	c.Timeout = 2 * time.Second
	resp, err := c.Get(p.URL() + "/readyz")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill SIGKILLs the process (if running) and waits for it.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Wait waits for the process to exit and returns its exit code, or an
// error after timeout.
func (p *Process) Wait(timeout time.Duration) (int, error) {
	select {
	case <-p.done:
	case <-time.After(timeout):
		return -1, fmt.Errorf("node %s still running after %v", p.ID, timeout)
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

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Logs returns what the process wrote to stdout and stderr so far.
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
