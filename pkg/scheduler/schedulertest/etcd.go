package schedulertest

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/locuscache/locus/internal/testproc"
)

// EtcdEnv names an environment variable choosing the etcd StartEtcd
// starts: "binary" (Debian's etcd-server, or the path in LOCUS_ETCD; the
// test fails if it is missing), "embed" (go.etcd.io/etcd/server/v3/embed
// in the test process), or unset: the binary when one is found, else the
// embedded server. Client v3.7 works with Debian's etcd 3.4.23 (election,
// leases, transactions, watches).
const EtcdEnv = "LOCUS_ETCD_MODE"

// Etcd is a running single-member etcd on loopback.
type Etcd struct {
	Endpoints []string
	// Kind is "binary <path>" or "embed".
	Kind string
	stop func()
	// restart starts the stopped etcd again on its data and addresses.
	restart func(t testing.TB)
	tls     *tls.Config // a client's, for an etcd serving TLS
}

// EtcdTLS makes StartEtcdTLS's etcd serve its client port over mutual
// TLS: etcd reads CertFile and KeyFile at each handshake (a replaced
// certificate is served without a restart), and takes client certificates
// signed by a CA in ClientCAFile. Client is a client's configuration, for
// the helper's own calls.
type EtcdTLS struct {
	CertFile, KeyFile, ClientCAFile string
	Client                          *tls.Config
}

// Stop stops the etcd now (an outage); the test's cleanup is then a no-op.
func (e *Etcd) Stop() { e.stop() }

// Restart stops the etcd if it runs and starts it again with its data on
// the same addresses (what a restarted etcd member does: its leases come
// back with their full TTL), and waits until it answers. It is stopped
// when the test ends.
func (e *Etcd) Restart(t testing.TB) {
	t.Helper()
	e.stop()
	e.restart(t)
	waitEtcd(t, e)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := testproc.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// StartEtcd starts an etcd for the test (see EtcdEnv) and stops it when
// the test ends.
func StartEtcd(t testing.TB) *Etcd {
	t.Helper()
	return StartEtcdTLS(t, nil)
}

// StartEtcdTLS is StartEtcd with the client port over mutual TLS (https
// endpoints), or plain with nil.
func StartEtcdTLS(t testing.TB, tc *EtcdTLS) *Etcd {
	t.Helper()
	mode := os.Getenv(EtcdEnv)
	path := os.Getenv("LOCUS_ETCD")
	if path == "" {
		path = "etcd"
	}
	bin, lookErr := exec.LookPath(path)
	switch {
	case mode == "embed" || (mode == "" && lookErr != nil):
		return startEmbedded(t, tc)
	case lookErr != nil:
		t.Fatalf("%s=binary but no etcd binary: %v (install Debian's etcd-server or set LOCUS_ETCD)", EtcdEnv, lookErr)
	}
	return startBinary(t, bin, tc)
}

func startBinary(t testing.TB, bin string, tc *EtcdTLS) *Etcd {
	t.Helper()
	dir := t.TempDir()
	cport, pport := FreePort(t), FreePort(t)
	scheme := "http"
	var tlsArgs []string
	if tc != nil {
		scheme = "https"
		tlsArgs = []string{"--cert-file", tc.CertFile, "--key-file", tc.KeyFile,
			"--trusted-ca-file", tc.ClientCAFile, "--client-cert-auth"}
	}
	curl := fmt.Sprintf("%s://127.0.0.1:%d", scheme, cport)
	purl := fmt.Sprintf("http://127.0.0.1:%d", pport)
	logPath := filepath.Join(dir, "etcd.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--name", "default",
		"--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", curl, "--advertise-client-urls", curl,
		"--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
		"--initial-cluster", "default=" + purl,
		"--log-level", "warn"}
	args = append(args, tlsArgs...)
	var (
		mu   sync.Mutex
		cmd  *exec.Cmd // the running etcd, nil when stopped
		done bool      // the test ended
	)
	start := func(t testing.TB) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if done {
			t.Fatal("etcd restarted after the test ended")
		}
		c := exec.Command(bin, args...)
		c.Stdout, c.Stderr = logf, logf
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatalf("start %s: %v", bin, err)
		}
		cmd = c
	}
	stop := func() {
		mu.Lock()
		defer mu.Unlock()
		if cmd != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			cmd = nil
		}
	}
	start(t)
	t.Cleanup(func() {
		stop()
		mu.Lock()
		done = true
		mu.Unlock()
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil && len(b) > 0 {
				t.Logf("etcd log:\n%s", tail(b, 4000))
			}
		}
	})
	e := &Etcd{Endpoints: []string{curl}, Kind: "binary " + bin, stop: stop, restart: start}
	if tc != nil {
		e.tls = tc.Client
	}
	waitEtcd(t, e)
	return e
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func startEmbedded(t testing.TB, tc *EtcdTLS) *Etcd {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(t.TempDir(), "etcd")
	cport, pport := FreePort(t), FreePort(t)
	scheme := "http"
	if tc != nil {
		scheme = "https"
		cfg.ClientTLSInfo = transport.TLSInfo{CertFile: tc.CertFile, KeyFile: tc.KeyFile,
			TrustedCAFile: tc.ClientCAFile, ClientCertAuth: true}
	}
	cu, _ := url.Parse(fmt.Sprintf("%s://127.0.0.1:%d", scheme, cport))
	pu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", pport))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	var (
		mu  sync.Mutex
		srv *embed.Etcd // the running etcd, nil when stopped
	)
	start := func(t testing.TB) {
		t.Helper()
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			t.Fatalf("embedded etcd: %v", err)
		}
		select {
		case <-e.Server.ReadyNotify():
		case <-time.After(30 * time.Second):
			e.Close()
			t.Fatal("embedded etcd not ready within 30s")
		}
		mu.Lock()
		srv = e
		mu.Unlock()
	}
	stop := func() {
		mu.Lock()
		defer mu.Unlock()
		if srv != nil {
			srv.Close()
			srv = nil
		}
	}
	t.Cleanup(stop)
	start(t)
	out := &Etcd{Endpoints: []string{cu.String()}, Kind: "embed", stop: stop, restart: start}
	if tc != nil {
		out.tls = tc.Client
	}
	waitEtcd(t, out)
	return out
}

// waitEtcd waits until the etcd answers a read.
func waitEtcd(t testing.TB, e *Etcd) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints, DialTimeout: 2 * time.Second, TLS: e.tls, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cli.Get(ctx, "/health")
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd (%s) at %v not answering within 30s: %v", e.Kind, e.Endpoints, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Client returns an etcd client of e, closed when the test ends.
func (e *Etcd) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints, DialTimeout: 2 * time.Second, TLS: e.tls, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
