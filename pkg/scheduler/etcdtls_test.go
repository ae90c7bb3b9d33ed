package scheduler_test

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/testcert"
	"github.com/locuscache/locus/internal/tlsreload"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// TestEtcdTLSFailureNamed: a scheduler that cannot connect to etcd for a
// TLS reason (it trusts another CA than the one that signed etcd's
// certificate; etcd refuses its client certificate) fails Start naming
// that reason. Was: "cannot reach etcd at [https://...]: context deadline
// exceeded" either way, as for an etcd that is down (the etcd client's
// error drops the connection's), and only etcd's own log told why.
func TestEtcdTLSFailureNamed(t *testing.T) {
	etcdCA, clientCA, otherCA := testcert.NewCA(t), testcert.NewCA(t), testcert.NewCA(t)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exp := time.Now().Add(24 * time.Hour)
	srvCert, srvKey := etcdCA.Leaf(t, 2, exp)
	cliCertPEM, cliKeyPEM := clientCA.Leaf(t, 3, exp)
	cliCert, err := tls.X509KeyPair(cliCertPEM, cliKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	strangerPEM, strangerKeyPEM := otherCA.Leaf(t, 4, exp)
	stranger, err := tls.X509KeyPair(strangerPEM, strangerKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	e := schedulertest.StartEtcdTLS(t, &schedulertest.EtcdTLS{
		CertFile: write("etcd.pem", srvCert), KeyFile: write("etcd-key.pem", srvKey), ClientCAFile: write("clients.pem", clientCA.PEM),
		Client: &tls.Config{RootCAs: etcdCA.Pool, Certificates: []tls.Certificate{cliCert}, MinVersion: tls.VersionTLS12},
	})
	t.Logf("etcd: %s", e.Kind)

	for _, tc := range []struct {
		name string
		tls  *tls.Config
		want []string // any of them
	}{
		{"another CA trusted", &tls.Config{RootCAs: otherCA.Pool, Certificates: []tls.Certificate{cliCert}}, []string{"certificate signed by unknown authority"}},
		{"client certificate of another CA", &tls.Config{RootCAs: etcdCA.Pool, Certificates: []tls.Certificate{stranger}}, []string{"bad certificate", "unknown certificate authority"}},
		{"no client certificate", &tls.Config{RootCAs: etcdCA.Pool}, []string{"bad certificate", "certificate required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scheduler.New(scheduler.Config{
				NodeID: "s", Membership: schedulertest.NewViews(t),
				HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0",
				Etcd: scheduler.EtcdConfig{Endpoints: e.Endpoints, Prefix: "/" + t.Name() + "/", DialTimeout: 2 * time.Second, TLS: tc.tls},
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err = s.Start(ctx)
			if err == nil {
				s.Shutdown(ctx)
				t.Fatal("Start succeeded")
			}
			named := false
			for _, w := range tc.want {
				named = named || strings.Contains(err.Error(), w)
			}
			t.Logf("Start: %v", err)
			if !named {
				t.Errorf("Start: %v; want the TLS failure named (%s)", err, strings.Join(tc.want, " or "))
			}
		})
	}
}

// TestEtcdTLSFailureNamedWhileRunning: a running scheduler that loses etcd
// for a TLS reason (its --etcd-tls-ca no longer names the CA of etcd's
// certificate, and etcd restarts) says so in its readiness reason. Was:
// "no leader known (etcd unreachable: context deadline exceeded)", as for
// an etcd that is down.
func TestEtcdTLSFailureNamedWhileRunning(t *testing.T) {
	etcdCA, clientCA, otherCA := testcert.NewCA(t), testcert.NewCA(t), testcert.NewCA(t)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exp := time.Now().Add(24 * time.Hour)
	srvCert, srvKey := etcdCA.Leaf(t, 2, exp)
	cliCertPEM, cliKeyPEM := clientCA.Leaf(t, 3, exp)
	cliCert, err := tls.X509KeyPair(cliCertPEM, cliKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	e := schedulertest.StartEtcdTLS(t, &schedulertest.EtcdTLS{
		CertFile: write("etcd.pem", srvCert), KeyFile: write("etcd-key.pem", srvKey), ClientCAFile: write("clients.pem", clientCA.PEM),
		Client: &tls.Config{RootCAs: etcdCA.Pool, Certificates: []tls.Certificate{cliCert}, MinVersion: tls.VersionTLS12},
	})
	caFile := write("etcd-ca.pem", etcdCA.PEM)
	ca, err := tlsreload.LoadCA(caFile, nil, tlsreload.WithInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	base := &tls.Config{Certificates: []tls.Certificate{cliCert}, MinVersion: tls.VersionTLS12}
	s := schedulertest.Start(t, scheduler.Config{
		NodeID: "s", Membership: schedulertest.NewViews(t),
		Etcd: scheduler.EtcdConfig{Endpoints: e.Endpoints, Prefix: "/" + t.Name() + "/", SessionTTL: 2 * time.Second,
			TLS: ca.ClientConfig(base), Credentials: ca.ClientCredentials(base)},
	})
	waitLeader(t, []*scheduler.Scheduler{s}, 10*time.Second)

	write("etcd-ca.pem", otherCA.PEM) // not etcd's CA: the next handshake fails
	e.Restart(t)
	const want = "certificate signed by unknown authority"
	var why string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, why = s.Ready(); strings.Contains(why, want) {
			t.Logf("ready: %s", why)
			return
		}
	}
	t.Fatalf("readiness reason %q 30 s after etcd's CA stopped being trusted; want it to say %q", why, want)
}
