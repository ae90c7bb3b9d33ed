package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/flagenv"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

func TestMain(m *testing.M) {
	// This test binary is also the scheduler daemon, the cache node daemon
	// and the gossip members the tests start as processes.
	schedulertest.RunIfDaemon(func() int { return run(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr) })
	nodetest.RunIfDaemon()
	schedulertest.MemberMain()
	code := m.Run()
	schedulertest.RemoveBuilds()
	nodetest.RemoveBuilds()
	os.Exit(code)
}

// TestFlagsPerDesign: DESIGN.md's scheduler flags exist with its defaults,
// and every flag has a LOCUS_* variable.
func TestFlagsPerDesign(t *testing.T) {
	var o options
	fs := newFlags(&o, io.Discard)
	want := map[string]string{
		"gossip-addr": "127.0.0.1:7947", "join": "", "grpc-addr": "127.0.0.1:7071", "http-addr": "127.0.0.1:8080",
		"etcd-endpoints": "", "locality-wait": "3s", "auth-token-file": "",
		"tls-cert": "", "tls-key": "", "tls-ca": "", "gossip-key-file": "", "node-id": "", "replication": "0",
	}
	for name, def := range want {
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("no --%s", name)
			continue
		}
		if f.DefValue != def {
			t.Errorf("--%s default %q, want %q", name, f.DefValue, def)
		}
	}
	env := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) { env[flagenv.EnvName(f.Name)] = f.Name })
	if env["LOCUS_ETCD_ENDPOINTS"] != "etcd-endpoints" || env["LOCUS_LOCALITY_WAIT"] != "locality-wait" {
		t.Errorf("env names: %v", env)
	}
}

// TestBuildConfig: flags (and their environment variables) map onto the
// Config; bad values are refused before anything starts.
func TestBuildConfig(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("  s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(args []string, env map[string]string) (scheduler.Config, error) {
		var o options
		fs := newFlags(&o, io.Discard)
		if err := flagenv.Parse(fs, args, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
			return scheduler.Config{}, err
		}
		return buildConfig(o, nil)
	}
	cfg, err := parse([]string{"--locality-wait=0", "--block-size=64MiB", "--auth-token-file=" + tok},
		map[string]string{"LOCUS_ETCD_ENDPOINTS": "http://a:2379, http://b:2379", "LOCUS_REPLICATION": "2", "LOCUS_LOCALITY_WAIT": "9s"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LocalityWait != scheduler.NoLocalityWait || cfg.BlockSize != 64<<20 || cfg.AuthToken != "s3cret" ||
		len(cfg.Etcd.Endpoints) != 2 || cfg.Etcd.Endpoints[1] != "http://b:2379" || cfg.Replication != 2 {
		t.Errorf("config %+v", cfg)
	}
	for _, bad := range [][]string{
		{"--gossip-tuning=wan"}, {"--locality-wait=-1s"}, {"--tls-cert=x"}, {"--auth-token-file=" + filepath.Join(dir, "none")},
		{"--block-size=12 bananas"}, {"--etcd-session-ttl=1500ms"},
	} {
		if _, err := parse(bad, nil); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestBadFlagsExit: bad flags exit 2 with one line on stderr, files that
// cannot be read 1; --help 0.
func TestBadFlagsExit(t *testing.T) {
	for _, args := range [][]string{{"--nope"}, {"--replication=x"}, {"extra"}, {"--log-level=loud"}, {"--replication=99"}} {
		var stderr bytes.Buffer
		if code := run(args, func(string) (string, bool) { return "", false }, io.Discard, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, stderr.String())
		}
		if !strings.HasPrefix(stderr.String(), "scheduler: ") {
			t.Errorf("%v: stderr %q", args, stderr.String())
		}
	}
	// A file it cannot read is not a usage error: exit 1, as the cache node.
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--tls-cert=/no/cert.pem", "--tls-key=/no/key.pem"}, {"--auth-token-file=/no/token"},
		{"--auth-token-file=" + empty}, {"--tls-cert=" + empty, "--tls-key=" + empty}} {
		var stderr bytes.Buffer
		args = append(args, "--http-addr=127.0.0.1:0", "--grpc-addr=127.0.0.1:0", "--gossip-addr=127.0.0.1:0")
		if code := run(args, func(string) (string, bool) { return "", false }, io.Discard, &stderr); code != 1 {
			t.Errorf("%v: exit %d, want 1 (%s)", args, code, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--help"}, func(string) (string, bool) { return "", false }, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "LOCUS_ETCD_ENDPOINTS") || stderr.Len() != 0 {
		t.Errorf("--help: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout only", code, stdout.String(), stderr.String())
	}
}

// TestSIGTERM: the daemon exits 0 on SIGTERM, configured through the
// environment only.
func TestSIGTERM(t *testing.T) {
	bin := schedulertest.BuildScheduler(t)
	// No cache node: the configured replication is the one in use.
	p := schedulertest.StartProcess(t, bin, schedulertest.ProcessOptions{ID: "s1", Env: []string{"LOCUS_LOCALITY_WAIT=250ms", "LOCUS_REPLICATION=3"}})
	r, err := p.Client().Ring(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if r.LocalityMS != 250 || r.Replication != 3 || !r.Leader || !r.Standalone {
		t.Errorf("ring %+v", r)
	}
	if err := p.Terminate(15 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, p.Logs())
	}
}

// TestEtcdTLSFlagsChecked: the etcd TLS flags are checked at start. Was: a
// lone --etcd-tls-key was ignored (etcd dialed without a client
// certificate), an http:// endpoint next to --etcd-tls-ca would have
// been dialed over TLS, which it does not speak, and an http:// endpoint
// next to --etcd-tls-cert was dialed in plaintext, the certificate (and
// any --etcd-password-file) going unused or in the clear, without a word.
func TestEtcdTLSFlagsChecked(t *testing.T) {
	files := nodetest.NewTLS(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--etcd-endpoints=https://127.0.0.1:2379", "--etcd-tls-key=" + files.KeyFile}, "--etcd-tls-cert and --etcd-tls-key go together"},
		{[]string{"--etcd-endpoints=https://127.0.0.1:2379,http://127.0.0.2:2379", "--etcd-tls-ca=" + files.CAFile}, `etcd endpoint "http://127.0.0.2:2379" is not TLS`},
		{[]string{"--etcd-endpoints=unix:///run/etcd.sock", "--etcd-tls-ca=" + files.CAFile}, "write it as https://"},
		{[]string{"--etcd-endpoints=http://127.0.0.1:2379", "--etcd-tls-cert=" + files.CertFile, "--etcd-tls-key=" + files.KeyFile}, `etcd endpoint "http://127.0.0.1:2379" is not TLS`},
	} {
		var stderr bytes.Buffer
		args := append(tc.args, "--http-addr=127.0.0.1:0", "--grpc-addr=127.0.0.1:0", "--gossip-addr=127.0.0.1:0")
		if code := run(args, func(string) (string, bool) { return "", false }, io.Discard, &stderr); code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want a failure saying %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
