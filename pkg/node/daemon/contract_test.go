package daemon_test

// Regression and contract tests from an adversarial review of the cache
// node daemon's operator-facing contracts (2026-11-30; DESIGN.md "Network
// contracts" and "Metrics"). The regression tests failed before their
// fixes; each says what was wrong. The others check contracts not covered
// elsewhere.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/testcert"
	"github.com/locuscache/locus/internal/testproc"
	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/node/daemon"
	"github.com/locuscache/locus/pkg/node/nodetest"
)

func TestMain(m *testing.M) {
	// The test binary is also the cachenode daemon the tests start.
	nodetest.RunIfDaemon()
	code := m.Run()
	nodetest.RemoveBuilds()
	os.Exit(code)
}

func noEnv(string) (string, bool) { return "", false }

// daemonCmd returns a command running the cachenode daemon with args.
func daemonCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	bin := nodetest.BuildCachenode(t)
	cmd := exec.Command(bin, args...)
	cmd.Env = os.Environ()
	if self, err := os.Executable(); err == nil && self == bin {
		cmd.Env = append(cmd.Env, nodetest.DaemonEnv+"=1")
	}
	return cmd
}

// TestSlotsZeroRefused: --slots=0 is refused (exit 2). Was: it was
// accepted and the node announced 4 executor slots in the gossip (the
// scheduler then placed four tasks at a time on it).
//
// Expected: --slots 0 either means what it says (a cache-only node with no
// executor slots: membership.NodeMeta allows Slots 0, "0..MaxSlots") or is
// refused with exit 2; never silently the default. The flag's help
// ("executor slots announced to the scheduler (default 4)") does not say
// that 0 means the default.
//
// Root cause (before the fix): pkg/node/config.go:239-240 (validate: `if c.Slots == 0 {
// c.Slots = DefaultSlots }`), reached from pkg/node/daemon/daemon.go:106,
// whose flag default is already node.DefaultSlots, so the zero value is
// only ever an explicit 0 from the operator.
//
// Fix suggested (the code has the one applied): the daemon passes the flag through as given (add a
// Config field or sentinel such as Slots = -1 meaning "none", or make
// Config.Slots a *int), so that --slots=0 announces 0; or refuse 0 in
// daemon.serve with a usageErrorf("--slots 0: want 1 or more").
func TestSlotsZeroRefused(t *testing.T) {
	root := t.TempDir()
	gossip := nodetest.FreeAddr(t, "127.0.0.1")
	cmd := daemonCmd(t, "--node-id=slots0", "--slots=0", "--gossip-tuning=loopback",
		"--gossip-addr="+gossip, "--grpc-addr="+nodetest.FreeAddr(t, "127.0.0.1"), "--http-addr="+nodetest.FreeAddr(t, "127.0.0.1"),
		"--memory-size=16MiB", "--origin-file-root="+root)
	var logs testproc.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-exited
	}()
	// A refusal (exit 2 naming --slots) is an acceptable fix.
	select {
	case err := <-exited:
		exited <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 2 && strings.Contains(logs.String(), "slots") {
			return
		}
		t.Fatalf("--slots=0: exit %v, want a running node or exit 2 naming --slots\n%s", err, logs.String())
	case <-time.After(1500 * time.Millisecond):
	}
	obs, err := membership.New(membership.Config{
		Meta:     membership.NodeMeta{ID: "review-observer", Role: membership.RoleObserver},
		BindAddr: "127.0.0.1:0",
		Tuning:   membership.LoopbackTuning(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Shutdown()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err = obs.Join([]string{gossip}); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("join: %v\n%s", err, logs.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	v, err := obs.WaitFor(ctx, func(v *membership.View) bool { _, ok := v.Member("slots0"); return ok })
	if err != nil {
		t.Fatalf("node never seen in the gossip: %v\n%s", err, logs.String())
	}
	m, _ := v.Member("slots0")
	if m.Slots != 0 {
		t.Errorf("--slots=0: the node announces %d slots in the gossip; want 0 (or a refusal with exit 2)", m.Slots)
	}
}

// TestLocusVersionEnvironmentIgnored: LOCUS_VERSION, a name container
// images commonly set for their own purposes (`ENV LOCUS_VERSION=0.3.1`
// in a Dockerfile, a Helm value), is read as the --version flag: with a
// version string the daemon refuses to start (exit 2, "environment
// variable LOCUS_VERSION="0.3.1": parse error"); with LOCUS_VERSION=1 it
// prints its version and exits 0 without serving (a pod that "completes").
//
// Expected: --version (like --help) is an action on the command line,
// not configuration; the environment must not trigger it or stop the
// daemon. Here the daemon must go on to validate its other flags (the bad
// --gossip-tuning below), whatever LOCUS_VERSION holds.
//
// Root cause (before the fix): internal/daemonmain/daemonmain.go:92 registers --version as
// an ordinary flag, and internal/flagenv/flagenv.go:23-46 (Parse) fills
// every flag not given on the command line from LOCUS_<NAME>, including
// it; daemonmain.go:130 then acts on its value.
//
// Fix suggested (the code has the one applied): let flagenv.Parse skip flags that are command-line only
// (e.g. a flagenv.CommandLineOnly(fs, "version") set, or skip "version"
// and "help" by name), have daemonmain.Parse test whether --version was
// given on the command line (fs.Visit), and leave [LOCUS_VERSION] out of
// --help.
func TestLocusVersionEnvironmentIgnored(t *testing.T) {
	for _, v := range []string{"0.3.1", "1", "true"} {
		var out bytes.Buffer
		env := func(k string) (string, bool) {
			if k == "LOCUS_VERSION" {
				return v, true
			}
			return "", false
		}
		code := daemon.Main([]string{"--gossip-tuning=wan"}, env, &out, &out)
		if code != 2 || !strings.Contains(out.String(), "gossip-tuning") {
			t.Errorf("LOCUS_VERSION=%s: exit %d, output %q; want the daemon to ignore it and refuse --gossip-tuning=wan (exit 2)", v, code, strings.TrimSpace(out.String()))
		}
	}
}

// TestMetadataFlagsExitUsage: flag values the gossip metadata
// refuses (--slots above membership.MaxSlots, a --node-id or --rack with a
// character outside [A-Za-z0-9._-]) exit 1, "could not start", although
// daemon.Main documents "2 for bad flags" and daemonmain.ExitUsage covers
// "flag values the daemon's Config refuses"; --slots=-1 exits 2.
//
// Root cause (before the fix): pkg/node/daemon/daemon.go:174-184 (isUsage) lists
// membership.ErrInvalidConfig, ErrKeyLength and ErrBadAddress but not
// membership.ErrInvalidMeta, which membership.New returns for these.
//
// Fix suggested (the code has the one applied): add membership.ErrInvalidMeta to isUsage's sentinels (or
// validate the NodeMeta in node.Config.validate, wrapping ErrInvalidConfig).
func TestMetadataFlagsExitUsage(t *testing.T) {
	addrs := []string{"--gossip-addr=127.0.0.1:0", "--grpc-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0", "--memory-size=16MiB"}
	for _, bad := range []string{"--slots=2000000", "--node-id=a,b", "--rack=rack#1"} {
		var out bytes.Buffer
		code := daemon.Main(append([]string{bad}, addrs...), noEnv, &out, &out)
		if code != 2 {
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			t.Errorf("%s: exit %d (%s); want 2, a bad flag value", bad, code, lines[len(lines)-1])
		}
	}
}

// stallServer accepts connections and never answers: an S3 endpoint that
// hangs. accepted receives one value per connection.
func stallServer(t *testing.T) (addr string, accepted <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 16)
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String(), ch
}

// TestSecondSignalKills: while the node shuts down (here: a
// gateway read waits on an S3 origin that does not answer), a second
// SIGINT or SIGTERM is swallowed; the node exits only when its shutdown
// deadline (--drain-timeout + 15 s) passes. An operator's second Ctrl-C,
// or a supervisor's repeated SIGTERM, cannot end it sooner.
//
// Measured by hand with the defaults: SIGTERM, SIGINT 1 s later, SIGTERM
// 1 s after that: exit 45.1 s after the first signal ("drained took=0s"
// because the read was still in the origin's stat, which Inflight does not
// count, then http.Server.Shutdown waited for the handler until the 45 s
// deadline).
//
// Expected: the first signal drains; a second one ends the process at once
// (exit non-zero, or the default signal action), as
// daemonmain.SignalContext's doc promises ("stop releases the signals (a
// second one then kills the process as usual)").
//
// Root cause (before the fix): pkg/node/daemon/daemon.go:144-145 `defer stop()`: the
// signal.NotifyContext registration lives until Main returns, so signals
// during serve's shutdown (daemon.go:260-270) are delivered to a channel
// no one reads.
//
// Fix suggested (the code has the one applied): in serve, call stop() as soon as ctx is done (pass stop
// in, or re-arm: `<-ctx.Done(); stop()`), so the second signal gets the
// default action; or watch a second signal.Notify channel during Stop and
// call n.Abort() then return.
func TestSecondSignalKills(t *testing.T) {
	s3, accepted := stallServer(t)
	httpAddr := nodetest.FreeAddr(t, "127.0.0.1")
	cmd := daemonCmd(t, "--node-id=sig2", "--gossip-tuning=loopback",
		"--gossip-addr="+nodetest.FreeAddr(t, "127.0.0.1"), "--grpc-addr="+nodetest.FreeAddr(t, "127.0.0.1"), "--http-addr="+httpAddr,
		"--memory-size=16MiB", "--origin-s3-endpoint=http://"+s3, "--origin-s3-path-style", "--origin-s3-region=us-east-1",
		"--origin-s3-timeout=60s", "--drain-timeout=5s")
	cmd.Env = append(cmd.Env, "AWS_ACCESS_KEY_ID=review", "AWS_SECRET_ACCESS_KEY=review", "AWS_EC2_METADATA_DISABLED=true")
	proc := testproc.Start(t, cmd, testproc.Options{Name: "cachenode sig2", Timeout: 20 * time.Second,
		Ready: testproc.HTTPReady(nil, "http://"+httpAddr+"/readyz", http.StatusOK)})
	client := &http.Client{Timeout: 90 * time.Second}
	go func() {
		if resp, err := client.Get("http://" + httpAddr + "/bucket/key"); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatalf("the gateway read never reached the origin\n%s", proc.Logs())
	}
	time.Sleep(200 * time.Millisecond)
	if err := proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	second := time.Now()
	if err := proc.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-proc.Done():
	case <-time.After(4 * time.Second):
		t.Fatalf("still running 4 s after a second signal (SIGINT during the SIGTERM shutdown); want it to end the process at once\n%s", tail(proc.Logs(), 8))
	}
	t.Logf("exited %v after the second signal", time.Since(second).Round(time.Millisecond))
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// reviewPKI writes a CA, a valid certificate and an expired one (both
// signed by the CA, for 127.0.0.1) and a second CA's certificate.
type reviewPKI struct {
	ca                        *x509.CertPool
	caFile                    string
	certFile, keyFile         string
	good, expired, otherCA    tls.Certificate
	expiredFile, expiredKey   string
	mismatchCert, mismatchKey string
	notPEM                    string
}

func newReviewPKI(t *testing.T) *reviewPKI {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	leaf := func(name string, ca *testcert.CA, notAfter time.Time, serial int64) (string, string, tls.Certificate) {
		certPEM, keyPEM := ca.Leaf(t, serial, notAfter)
		cf, kf := write(name+".pem", certPEM), write(name+"-key.pem", keyPEM)
		c, err := tls.LoadX509KeyPair(cf, kf)
		if err != nil {
			t.Fatal(err)
		}
		return cf, kf, c
	}
	ca, ca2 := testcert.NewCA(t), testcert.NewCA(t)
	p := &reviewPKI{ca: ca.Pool, caFile: write("ca.pem", ca.PEM)}
	p.certFile, p.keyFile, p.good = leaf("node", ca, now.Add(24*time.Hour), 2)
	p.expiredFile, p.expiredKey, p.expired = leaf("expired", ca, now.Add(-24*time.Hour), 3)
	_, otherKey, other := leaf("other", ca2, now.Add(24*time.Hour), 4)
	p.otherCA = other
	p.mismatchCert, p.mismatchKey = p.certFile, otherKey
	p.notPEM = filepath.Join(dir, "not.pem")
	if err := os.WriteFile(p.notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTLSFilesRefused: a certificate with another certificate's key,
// a --tls-ca that holds no certificate, a missing --tls-ca, and gossip keys
// of a wrong length stop the daemon before it serves, with one line naming
// the file or flag (exit 1 for files it cannot use, 2 for a key of the
// wrong length), never a panic.
func TestTLSFilesRefused(t *testing.T) {
	p := newReviewPKI(t)
	dir := t.TempDir()
	key := func(name string, b []byte) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	addrs := []string{"--gossip-addr=127.0.0.1:0", "--grpc-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0", "--memory-size=16MiB"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"cert with another key", []string{"--tls-cert=" + p.mismatchCert, "--tls-key=" + p.mismatchKey}, 1, "private key does not match public key"},
		{"CA file not PEM", []string{"--tls-cert=" + p.certFile, "--tls-key=" + p.keyFile, "--tls-ca=" + p.notPEM}, 1, "holds no PEM certificate"},
		{"CA file missing", []string{"--tls-cert=" + p.certFile, "--tls-key=" + p.keyFile, "--tls-ca=/no/such/ca.pem"}, 1, "/no/such/ca.pem"},
		{"CA without cert", []string{"--tls-ca=" + p.caFile}, 2, "--tls-ca needs --tls-cert"},
		{"gossip key 15 bytes", []string{"--gossip-key-file=" + key("k15", []byte("0123456789abcde"))}, 2, "16, 24 or 32 bytes"},
		{"gossip key 33 bytes", []string{"--gossip-key-file=" + key("k33", bytes.Repeat([]byte{0xa5}, 33))}, 2, "got 33 raw bytes"},
		{"gossip key empty", []string{"--gossip-key-file=" + key("k0", nil)}, 2, "got 0 raw bytes"},
		{"gossip key base64 of 12 bytes", []string{"--gossip-key-file=" + key("k12", []byte("MDEyMzQ1Njc4OWFi\n"))}, 2, "decodes to 12 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			code := daemon.Main(append(tc.args, addrs...), noEnv, &out, &out)
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			last := lines[len(lines)-1]
			if code != tc.code || !strings.HasPrefix(last, "cachenode: ") || !strings.Contains(last, tc.want) {
				t.Fatalf("exit %d, last line %q; want exit %d naming %q", code, last, tc.code, tc.want)
			}
		})
	}
}

// TestMTLSRefusesExpiredPeer: a running node with --tls-ca refuses,
// on HTTPS and gRPC, a client certificate signed by its CA but expired, and
// one signed by another CA; the valid one is served. Also: /healthz needs a
// client certificate under mTLS (a Kubernetes httpGet probe, which sends
// none, cannot use it; see the report).
func TestMTLSRefusesExpiredPeer(t *testing.T) {
	p := newReviewPKI(t)
	files := &nodetest.TLSFiles{CAFile: p.caFile, CertFile: p.certFile, KeyFile: p.keyFile, CA: p.ca, Cert: p.good}
	bin := nodetest.BuildCachenode(t)
	proc := nodetest.StartProcess(t, bin, nodetest.ProcessOptions{ID: "mtls", FileRoot: t.TempDir(), TLS: files, MTLS: true,
		Args: []string{"--memory-size=16MiB"}})
	get := func(cert *tls.Certificate) error {
		cfg := &tls.Config{RootCAs: p.ca, MinVersion: tls.VersionTLS12}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := c.Get("https://" + proc.HTTPAddr + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return &net.AddrError{Err: resp.Status}
		}
		return nil
	}
	if err := get(&p.good); err != nil {
		t.Fatalf("valid client certificate: %v", err)
	}
	for name, cert := range map[string]*tls.Certificate{"expired": &p.expired, "other CA": &p.otherCA, "none": nil} {
		if err := get(cert); err == nil {
			t.Errorf("HTTPS with %s client certificate: served, want refused", name)
		}
	}
	// gRPC: the handshake itself fails.
	for name, cert := range map[string]tls.Certificate{"expired": p.expired, "other CA": p.otherCA} {
		conn, err := tls.Dial("tcp", proc.GRPCAddr, &tls.Config{RootCAs: p.ca, Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12})
		if err == nil {
			// TLS 1.3: the server's verdict arrives with the first read.
			conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
		}
		if err == nil || !(strings.Contains(err.Error(), "certificate") || strings.Contains(err.Error(), "expired")) {
			t.Errorf("gRPC TLS with %s client certificate: %v, want a certificate error", name, err)
		}
	}
}

// TestReadyzWhileJoining: a node whose --join seeds do not answer is
// alive (/healthz 200) but not ready (/readyz 503) while it retries, and
// exits 1 naming the seeds after --join-timeout. The flag wins over its
// LOCUS_* variable: --http-addr is served, LOCUS_HTTP_ADDR is not.
func TestReadyzWhileJoining(t *testing.T) {
	flagAddr, envAddr := nodetest.FreeAddr(t, "127.0.0.1"), nodetest.FreeAddr(t, "127.0.0.1")
	dead := nodetest.FreeAddr(t, "127.0.0.1") // nothing listens there
	cmd := daemonCmd(t, "--node-id=joiner", "--gossip-tuning=loopback", "--join="+dead, "--join-timeout=3s",
		"--gossip-addr="+nodetest.FreeAddr(t, "127.0.0.1"), "--grpc-addr="+nodetest.FreeAddr(t, "127.0.0.1"), "--http-addr="+flagAddr,
		"--memory-size=16MiB", "--origin-file-root="+t.TempDir())
	cmd.Env = append(cmd.Env, "LOCUS_HTTP_ADDR="+envAddr)
	client := &http.Client{Timeout: 2 * time.Second}
	// Alive while it joins: /healthz 200 is the readiness probe here.
	proc := testproc.Start(t, cmd, testproc.Options{Name: "cachenode joiner", Timeout: 10 * time.Second,
		Ready: testproc.HTTPReady(client, "http://"+flagAddr+"/healthz", http.StatusOK)})
	status := func(addr, path string) int {
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := status(flagAddr, "/readyz"); s != 503 {
		t.Errorf("/readyz %d while the join is retried, want 503", s)
	}
	if s := status(envAddr, "/healthz"); s != 0 {
		t.Errorf("LOCUS_HTTP_ADDR's address answered %d although --http-addr was given", s)
	}
	code, err := proc.Wait(15 * time.Second)
	switch {
	case err != nil:
		t.Errorf("still running 15 s after a --join-timeout of 3 s: %v", err)
	case code != 1 || !strings.Contains(proc.Logs(), "could not join"):
		t.Errorf("after --join-timeout: exit %d, want 1 with \"could not join\"\n%s", code, tail(proc.Logs(), 3))
	}
}
