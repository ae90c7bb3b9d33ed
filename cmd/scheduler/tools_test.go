package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// tool returns the path of a tool, or skips the test (fails it with
// LOCUS_REQUIRE_TOOLS=1).
func tool(t *testing.T, name, hint string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("LOCUS_REQUIRE_TOOLS") == "1" {
			t.Fatalf("%s not found (%s)", name, hint)
		}
		t.Skipf("%s not found (%s)", name, hint)
	}
	return p
}

// TestStandardTools: promtool accepts the scheduler's /metrics after real
// traffic, and grpc-health-probe reports SERVING.
func TestStandardTools(t *testing.T) {
	promtool := tool(t, "promtool", "Debian: prometheus")
	probe := tool(t, "grpc-health-probe", "scripts/install-tools.sh")
	m := schedulertest.StartMember(t, "n1", schedulertest.MemberOptions{Rack: "r1", Slots: 8})
	p := schedulertest.StartProcess(t, schedulertest.BuildScheduler(t), schedulertest.ProcessOptions{ID: "s", Join: []string{m.GossipAddr}})
	c := p.Client()
	waitAlive(t, c, 1, 10*time.Second)
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		pl, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: fmt.Sprint(i), Split: sp(fmt.Sprint("s3://bkt/", i))})
		if err != nil {
			t.Fatal(err)
		}
		if i < 3 {
			if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "j", Task: pl.Task, LocalHitBytes: 10, MissBytes: 5}); err != nil {
				t.Fatal(err)
			}
		}
	}
	metrics := scrape(t, "http://"+p.HTTPAddr+"/metrics")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(metrics)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out.String())
	}
	for _, name := range []string{"locus_tasks_placed_total", "locus_task_bytes_total", "locus_placement_duration_seconds_bucket", "locus_ring_members", "locus_slots", "locus_scheduler_leader 1"} {
		if !strings.Contains(metrics, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	hp, err := exec.Command(probe, "-addr="+p.GRPCAddr).CombinedOutput()
	if err != nil || !strings.Contains(string(hp), "SERVING") {
		t.Errorf("grpc-health-probe: %v %s", err, hp)
	}
}

// TestTLSAndToken: with --tls-cert/--tls-key/--tls-ca both listeners need
// a client certificate signed by the CA, and with --auth-token-file the
// POSTs need the token too.
func TestTLSAndToken(t *testing.T) {
	files := nodetest.NewTLS(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := schedulertest.StartMember(t, "n1", schedulertest.MemberOptions{Rack: "r1", Slots: 2})
	p := schedulertest.StartProcess(t, schedulertest.BuildScheduler(t), schedulertest.ProcessOptions{
		ID: "s", Join: []string{m.GossipAddr}, ClientTLS: files.ClientConfig(),
		Args: []string{"--tls-cert=" + files.CertFile, "--tls-key=" + files.KeyFile, "--tls-ca=" + files.CAFile, "--auth-token-file=" + tokenFile},
	})
	c := p.Client()
	waitAlive(t, c, 1, 10*time.Second)
	ctx := context.Background()
	req := schedapi.PlaceRequest{Job: "j", Task: "t", Split: sp("s3://bkt/k")}
	if _, err := c.Place(ctx, req); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("place without token: %v, want 401", err)
	}
	c.Token = "tok-123"
	if _, err := c.Place(ctx, req); err != nil {
		t.Errorf("place with token over mTLS: %v", err)
	}
	// No client certificate: the handshake fails.
	plain := http.Client{Transport: &http.Transport{TLSClientConfig: files.ClientConfigNoCert()}, Timeout: 5 * time.Second}
	if resp, err := plain.Get("https://" + p.HTTPAddr + "/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("HTTPS without a client certificate answered %d", resp.StatusCode)
	}
	// gRPC over mTLS: health SERVING (grpc-health-probe when installed).
	if probe, err := exec.LookPath("grpc-health-probe"); err == nil {
		out, err := exec.Command(probe, "-addr="+p.GRPCAddr, "-tls", "-tls-ca-cert="+files.CAFile,
			"-tls-client-cert="+files.CertFile, "-tls-client-key="+files.KeyFile).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SERVING") {
			t.Errorf("grpc-health-probe over mTLS: %v %s", err, out)
		}
		if out, err := exec.Command(probe, "-addr="+p.GRPCAddr, "-tls", "-tls-ca-cert="+files.CAFile).CombinedOutput(); err == nil {
			t.Errorf("grpc-health-probe without a client certificate succeeded: %s", out)
		}
	}

	// Rotation: the certificate files are replaced (same CA); without a
	// restart both listeners serve the new one within tlsreload's check
	// interval (was: the first certificate until it expired).
	renewed := files.Renew(t)
	deadline := time.Now().Add(30 * time.Second)
	for _, addr := range []string{p.HTTPAddr, p.GRPCAddr} {
		for {
			conn, err := tls.Dial("tcp", addr, files.ClientConfig())
			if err != nil {
				t.Fatalf("TLS dial %s after rotation: %v", addr, err)
			}
			got := conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
			conn.Close()
			if got == renewed {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s serves serial %d 30 s after the files were replaced, want %d", addr, got, renewed)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// CA rotation: a new CA joins the bundle and the certificate is
	// reissued from it. Once the scheduler has taken both (within the
	// check interval), a client whose certificate comes from the new CA
	// places over mTLS (was: refused until a restart, the bundle being
	// read once).
	files.RotateCA(t)
	deadline = time.Now().Add(30 * time.Second)
	newCA := &http.Client{Transport: &http.Transport{TLSClientConfig: files.ClientConfig()}, Timeout: 5 * time.Second}
	for {
		resp, err := newCA.Get("https://" + p.HTTPAddr + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a client certificate of the new CA is still refused 30 s after it joined the bundle: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
