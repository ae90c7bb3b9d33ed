package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// TestEtcdTLSCARotation runs the scheduler against an etcd that serves
// mutual TLS (--etcd-tls-ca, --etcd-tls-cert, --etcd-tls-key), then
// rotates etcd's CA as an operator does: the new CA joins the bundle file
// and etcd's certificate is reissued from it. Once the connection to etcd
// is cut (a restart of etcd, a network blip), the scheduler connects again
// and its placements, whose counters it persists in etcd before
// answering, go on without a restart. Was: the bundle was read once at
// start, so the scheduler refused etcd's new certificate for good, and
// every placement failed.
func TestEtcdTLSCARotation(t *testing.T) {
	srv := nodetest.NewTLS(t) // etcd's certificate; its CA is the scheduler's --etcd-tls-ca
	cli := nodetest.NewTLS(t) // the scheduler's client certificate; its CA is the one etcd trusts
	e := schedulertest.StartEtcdTLS(t, &schedulertest.EtcdTLS{
		CertFile: srv.CertFile, KeyFile: srv.KeyFile, ClientCAFile: cli.CAFile,
		Client: &tls.Config{RootCAs: srv.CA, Certificates: []tls.Certificate{cli.Cert}, MinVersion: tls.VersionTLS12},
	})
	t.Logf("etcd: %s", e.Kind)
	px := startCutProxy(t, strings.TrimPrefix(e.Endpoints[0], "https://"))

	m := schedulertest.StartMember(t, "n1", schedulertest.MemberOptions{Rack: "r1", Slots: 1000})
	p := schedulertest.StartProcess(t, schedulertest.BuildScheduler(t), schedulertest.ProcessOptions{
		ID: "s", Join: []string{m.GossipAddr},
		Args: []string{"--etcd-endpoints=https://" + px.addr, "--etcd-prefix=/tls/",
			"--etcd-tls-ca=" + srv.CAFile, "--etcd-tls-cert=" + cli.CertFile, "--etcd-tls-key=" + cli.KeyFile},
	})
	c := p.Client()
	waitAlive(t, c, 1, 10*time.Second)
	task := 0
	placeWithin := func(what string, d time.Duration) {
		t.Helper()
		deadline := time.Now().Add(d)
		for {
			task++
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: fmt.Sprint("t", task), Split: sp("s3://bkt/k")})
			cancel()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no placement within %v: %v", what, d, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	placeWithin("over mutual TLS to etcd", 30*time.Second)

	oldCA := srv.RotateCA(t)
	// etcd reads its certificate at each handshake: wait until it serves
	// the reissued one, so that what follows checks the rotation.
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := tls.Dial("tcp", px.addr, &tls.Config{RootCAs: srv.CA, Certificates: []tls.Certificate{cli.Cert}, MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatalf("TLS dial etcd after the rotation: %v", err)
		}
		leaf := conn.ConnectionState().PeerCertificates[0]
		conn.Close()
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: oldCA.Pool}); err != nil {
			break // not the old CA's: the reissued certificate
		}
		if time.Now().After(deadline) {
			t.Fatal("etcd still serves the old CA's certificate 30 s after the files were replaced")
		}
		time.Sleep(200 * time.Millisecond)
	}
	px.cut()
	// tlsreload looks at the bundle at most every 10 s, and the leader's
	// session (5 s) may lapse while it cannot reach etcd: allow both.
	placeWithin("after etcd's CA rotation and a cut connection", 60*time.Second)
}

// cutProxy forwards TCP connections to a target; cut closes every open
// one (as a restart of the target or a network blip does), so clients
// must connect, and handshake, again.
type cutProxy struct {
	addr string
	ln   net.Listener

	mu    sync.Mutex // guards conns
	conns []net.Conn
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{addr: ln.Addr().String(), ln: ln}
	go func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				down.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, down, up)
			p.mu.Unlock()
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				dst.Close()
				src.Close()
			}
			go pipe(up, down)
			go pipe(down, up)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.cut()
	})
	return p
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
