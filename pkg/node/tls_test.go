package node_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/internal/logtest"
	"github.com/locuscache/locus/pkg/node"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

func dialWith(t *testing.T, addr string, creds credentials.TransportCredentials) cachev1.CacheServiceClient {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr, node.PeerDialOptions(creds)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cachev1.NewCacheServiceClient(cc)
}

func ping(c cachev1.CacheServiceClient) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.Ping(ctx, &cachev1.PingRequest{})
	return err
}

// TestMTLS: two nodes with --tls-cert, --tls-key and --tls-ca. Clients
// without a certificate, with one from another CA, or in plaintext are
// refused on gRPC and HTTP; peer reads between the nodes work over mTLS.
func TestMTLS(t *testing.T) {
	files := nodetest.NewTLS(t)
	other := nodetest.NewTLS(t) // an unrelated CA
	mem := origintest.NewMemStore()
	const size = 3 << 20
	data := randBytes(7, size)
	uri := "s3://bucket/tls.bin"
	mem.Put(uri, data)
	// Replication 1, so that one of the two nodes is outside the block's
	// preference list and reads it through the other.
	c := nodetest.Start(t, nodetest.Options{N: 2, Origin: mem, TLS: files, MTLS: true, Replication: 1})

	// A good client reads; the second read on a non-owner is a peer hit,
	// so the node-to-node stream works over mTLS.
	ni := 0
	if c.Nodes[0] == c.Owner(uri, 0) {
		ni = 1
	}
	cl := c.Client(t, ni)
	rangeRead(t, cl, uri, 0, 1<<20)
	got, s := rangeRead(t, cl, uri, 0, 1<<20)
	if !bytes.Equal(got, data[:1<<20]) || s.PeerHitBytes != 1<<20 {
		t.Fatalf("peer read over mTLS: %+v", s)
	}

	addr := c.Nodes[0].GRPCAddr()
	refused := map[string]credentials.TransportCredentials{
		"no client certificate": credentials.NewTLS(files.ClientConfigNoCert()),
		"certificate of another CA": credentials.NewTLS(&tls.Config{RootCAs: files.CA,
			Certificates: []tls.Certificate{other.Cert}}),
		"plaintext": insecure.NewCredentials(),
	}
	for name, creds := range refused {
		err := ping(dialWith(t, addr, creds))
		if status.Code(err) != codes.Unavailable {
			t.Errorf("gRPC, %s: %v, want refused (UNAVAILABLE)", name, err)
		}
	}
	if err := ping(dialWith(t, addr, credentials.NewTLS(files.ClientConfig()))); err != nil {
		t.Fatalf("gRPC with the right certificate: %v", err)
	}

	url := c.HTTPURL(0) + "/healthz"
	resp, err := c.HTTPClient().Get(url)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HTTPS with a client certificate: %v %v", resp, err)
	}
	resp.Body.Close()
	noCert := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: files.ClientConfigNoCert()}}
	if resp, err := noCert.Get(url); err == nil {
		resp.Body.Close()
		t.Fatalf("HTTPS without a client certificate answered %d", resp.StatusCode)
	}
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + c.Nodes[0].HTTPAddr() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP to the TLS listener answered 200")
		}
	}
}

// TestTLSWithoutClientAuth: with a certificate but no CA the node speaks
// TLS and accepts clients without certificates.
func TestTLSWithoutClientAuth(t *testing.T) {
	files := nodetest.NewTLS(t)
	mem := origintest.NewMemStore()
	mem.Put("s3://bucket/k", []byte("hello"))
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: mem, TLS: files})
	cl := dialWith(t, c.Nodes[0].GRPCAddr(), credentials.NewTLS(files.ClientConfigNoCert()))
	got, _ := rangeRead(t, cl, "s3://bucket/k", 0, 5)
	if string(got) != "hello" {
		t.Fatalf("got %q", got)
	}
	if err := ping(dialWith(t, c.Nodes[0].GRPCAddr(), insecure.NewCredentials())); err == nil {
		t.Fatal("plaintext client accepted by a TLS server")
	}
}

// TestCertificateRotation: the node's certificate files are replaced (a
// new certificate from the same CA, as cert-manager renews one and
// Kubernetes rewrites the mounted Secret). Without a restart, new
// connections to the gRPC and HTTP listeners are served the new
// certificate within tlsreload's check interval, and clients with the
// renewed certificate get through the mTLS listeners.
//
// Was: the pair was read once at start, so a node served its first
// certificate until it expired, and then every handshake failed.
func TestCertificateRotation(t *testing.T) {
	files := nodetest.NewTLS(t)
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: origintest.NewMemStore(), TLS: files, MTLS: true})
	n := c.Nodes[0]
	served := func(addr string) int64 {
		t.Helper()
		conn, err := tls.Dial("tcp", addr, files.ClientConfig())
		if err != nil {
			t.Fatalf("TLS dial %s: %v", addr, err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	}
	first := files.Cert.Leaf.SerialNumber.Int64()
	for _, addr := range []string{n.GRPCAddr(), n.HTTPAddr()} {
		if got := served(addr); got != first {
			t.Fatalf("%s serves serial %d, want %d", addr, got, first)
		}
	}
	renewed := files.Renew(t)
	deadline := time.Now().Add(30 * time.Second) // the check interval is 10 s
	for _, addr := range []string{n.GRPCAddr(), n.HTTPAddr()} {
		for served(addr) != renewed {
			if time.Now().After(deadline) {
				t.Fatalf("%s still serves serial %d 30 s after the files were replaced, want %d", addr, first, renewed)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// A client with the new certificate reads through gRPC.
	cl := dialWith(t, n.GRPCAddr(), credentials.NewTLS(files.ClientConfig()))
	if err := ping(cl); err != nil {
		t.Fatalf("ping with the renewed client certificate: %v", err)
	}
	res, err := (&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: files.ClientConfig()}}).Get("https://" + n.HTTPAddr() + "/healthz")
	if err != nil {
		t.Fatalf("HTTPS after rotation: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("HTTPS /healthz after rotation: %d", res.StatusCode)
	}
}

// TestCARotation: two mTLS nodes go through a CA rotation without a
// restart. A new CA joins the bundle and the nodes' certificates are
// reissued from it: clients with either CA's certificate are served and
// the nodes keep reading each other's pages. Then the old CA leaves the
// bundle: a client certificate of the old CA is refused, and clients of
// the new one read through both nodes (the nodes' peer connections opened
// before stay up, as TLS connections do). Was: the bundle was read once,
// so the reissued certificates were refused by every node until a restart.
func TestCARotation(t *testing.T) {
	files := nodetest.NewTLS(t)
	mem := origintest.NewMemStore()
	size := int64(8 * nodetest.DefaultBlockSize)
	data := randBytes(12, int(size))
	uri := "s3://bkt/ca-rotation.bin"
	mem.Put(uri, data)
	c := nodetest.Start(t, nodetest.Options{N: 2, Origin: mem, TLS: files, MTLS: true, Replication: 1})
	read := func(step string, node int) {
		t.Helper()
		cl := dialWith(t, c.Nodes[node].GRPCAddr(), credentials.NewTLS(files.ClientConfig()))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		got, s, err := nodetest.ReadRange(ctx, cl, &cachev1.ReadRangeRequest{Uri: uri, Offset: 0, Length: size})
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: read through node %d: %v (bytes equal %v)", step, node, err, bytes.Equal(got, data))
		}
		if b := s.Misses[readpath.OwnerUnavailable].Bytes; b != 0 {
			t.Fatalf("%s: node %d read %d bytes around unreachable owners, want peer reads", step, node, b)
		}
	}
	read("before", 0)
	old := files.RotateCA(t)
	// Wait for the nodes to take the bundle and the new certificate (each
	// checked at most every 10 s), then read through the other node, whose
	// peer connections are new or old: both must work.
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := tls.Dial("tcp", c.Nodes[1].GRPCAddr(), files.ClientConfig())
		if err == nil {
			serial := conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
			conn.Close()
			if serial == files.Cert.Leaf.SerialNumber.Int64() {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 1 does not serve the reissued certificate 30 s after the rotation (last error %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	read("both CAs", 1)
	oldCert, oldKey := old.Leaf(t, 99, time.Now().Add(24*time.Hour))
	oldPair, err := tls.X509KeyPair(oldCert, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	oldClient := &tls.Config{RootCAs: files.CA, Certificates: []tls.Certificate{oldPair}, MinVersion: tls.VersionTLS12}
	if err := ping(dialWith(t, c.Nodes[0].GRPCAddr(), credentials.NewTLS(oldClient))); err != nil {
		t.Fatalf("a client certificate of the old CA while both are in the bundle: %v", err)
	}
	files.DropOldCA(t)
	deadline = time.Now().Add(30 * time.Second)
	for ping(dialWith(t, c.Nodes[0].GRPCAddr(), credentials.NewTLS(oldClient))) == nil {
		if time.Now().After(deadline) {
			t.Fatal("node 0 still takes a client certificate of the removed CA 30 s after it left the bundle")
		}
		time.Sleep(200 * time.Millisecond)
	}
	read("new CA", 0)
	read("new CA", 1)
}

// TestProbeConnectionsNotLoggedAtWarn: under mTLS kubelet's probes are
// TCP checks (helm/locus; kubelet has no client certificate), which
// connect and close before any TLS hello. The node logs those at Debug;
// a real handshake failure (a client without a certificate) stays a
// Warn. Was: a Warn "http: TLS handshake error from ...: EOF" for every
// probe, three a pod every 10 s, burying the failures that matter.
func TestProbeConnectionsNotLoggedAtWarn(t *testing.T) {
	files := nodetest.NewTLS(t)
	rec := &logtest.Recorder{}
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: origintest.NewMemStore(), TLS: files, MTLS: true,
		Mutate: func(_ int, cfg *node.Config) { cfg.Logger = slog.New(rec) }})
	addr := c.Nodes[0].HTTPAddr()
	for range 3 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
	noCert := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: files.ClientConfigNoCert()}}
	if resp, err := noCert.Get(c.HTTPURL(0) + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatalf("HTTPS without a client certificate answered %d", resp.StatusCode)
	}
	rec.WaitFor(t, slog.LevelWarn, "TLS handshake error")
	for _, m := range rec.At(slog.LevelWarn) {
		if strings.HasSuffix(m, ": EOF") {
			t.Errorf("a TCP probe logged at Warn: %q", m)
		}
	}
}
