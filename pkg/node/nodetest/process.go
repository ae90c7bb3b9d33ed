package nodetest

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/testproc"
	nodedaemon "github.com/locuscache/locus/pkg/node/daemon"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

// DaemonEnv names the environment variable that makes a test binary run
// the cache node daemon instead of its tests (see RunIfDaemon).
const DaemonEnv = "LOCUS_NODETEST_DAEMON"

// daemon hands out the cachenode binary: this test binary after
// RunIfDaemon, else cmd/cachenode built once.
var daemon = testproc.Reexec{Env: DaemonEnv, Pkg: "./cmd/cachenode"}

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
	daemon.RunIf(func() int { return nodedaemon.Main(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr) })
}

// BuildCachenode returns the path of a cachenode daemon binary: the test
// binary itself after RunIfDaemon, else cmd/cachenode built once per test
// binary (in a temporary directory; call RemoveBuilds from TestMain to
// delete it).
func BuildCachenode(t testing.TB) string {
	t.Helper()
	return daemon.Binary(t)
}

// RemoveBuilds deletes the binary BuildCachenode built, if any. Call it
// from TestMain after m.Run.
func RemoveBuilds() { daemon.Remove() }

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
	// Netns runs the node inside that network namespace (`ip netns
	// exec`); IP is then required and the ports default to fixed ones
	// (7946 gossip, 7070 gRPC, 7080 HTTP: the namespace is fresh), and
	// the Process's HTTP client connects from inside the namespace.
	Netns *Netns
}

// Process is a cachenode daemon started by StartProcess.
type Process struct {
	ID, GossipAddr, GRPCAddr, HTTPAddr string
	Opts                               ProcessOptions

	proc *testproc.Proc
}

// StartProcess starts bin (see BuildCachenode) with the flags opts
// describes plus --gossip-tuning=loopback, waits until its /readyz answers
// 200, and SIGKILLs it when the test ends if it is still running. It fails
// the test (with the node's log) if the node exits or is not ready in 30s.
func StartProcess(t testing.TB, bin string, opts ProcessOptions) *Process {
	t.Helper()
	if opts.IP == "" {
		if opts.Netns != nil {
			t.Fatal("nodetest: ProcessOptions.Netns needs IP")
		}
		opts.IP = "127.0.0.1"
	}
	if opts.Netns != nil {
		for _, a := range []struct {
			addr *string
			port string
		}{{&opts.GossipAddr, "7946"}, {&opts.GRPCAddr, "7070"}, {&opts.HTTPAddr, "7080"}} {
			if *a.addr == "" {
				*a.addr = net.JoinHostPort(opts.IP, a.port)
			}
		}
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
	env = append(env, daemon.Environ(bin)...)

	p := &Process{ID: opts.ID, GossipAddr: opts.GossipAddr, GRPCAddr: opts.GRPCAddr, HTTPAddr: opts.HTTPAddr, Opts: opts}
	cmd := exec.Command(bin, args...)
	if opts.Netns != nil {
		cmd = exec.Command("ip", append([]string{"netns", "exec", opts.Netns.Name, bin}, args...)...)
	}
	cmd.Env = env
	p.proc = testproc.Start(t, cmd, testproc.Options{
		Name:  "node " + opts.ID,
		Ready: func() bool { code, err := p.Readyz(); return err == nil && code == http.StatusOK },
	})
	return p
}

// HTTPClient returns a client for the node's HTTP listener.
func (p *Process) HTTPClient() *http.Client {
	if p.Opts.Netns != nil {
		c := p.Opts.Netns.HTTPClient(30 * time.Second)
		if p.Opts.TLS != nil {
			c.Transport.(*http.Transport).TLSClientConfig = p.Opts.TLS.ClientConfig()
		}
		return c
	}
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
func (p *Process) Signal(sig os.Signal) error { return p.proc.Signal(sig) }

// Kill SIGKILLs the process (if running) and waits for it.
func (p *Process) Kill() { p.proc.Kill() }

// Wait waits for the process to exit and returns its exit code, or an
// error after timeout.
func (p *Process) Wait(timeout time.Duration) (int, error) { return p.proc.Wait(timeout) }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.proc.Done() }

// Logs returns what the process wrote to stdout and stderr so far.
func (p *Process) Logs() string { return p.proc.Logs() }
