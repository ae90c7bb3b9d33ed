package main

// Regression and contract tests from an adversarial review of the
// scheduler daemon's operator-facing contracts (2026-11-30; DESIGN.md
// "Network contracts" and "Metrics"). The regression tests failed before
// their fixes; each says what was wrong. The others check contracts not
// covered elsewhere.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/locuscache/locus/internal/flagenv"
	"github.com/locuscache/locus/internal/testproc"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// TestSecondSignalKills: while the scheduler shuts down (here:
// one HTTP call whose client is slow to send its body), a second SIGTERM
// or SIGINT is swallowed; it exits only when --shutdown-timeout (30 s)
// passes. Measured by hand: SIGTERM, SIGINT 0.5 s later, SIGTERM 0.5 s
// after that: exit 30.1 s after the first.
//
// Expected: the first signal shuts down gracefully; a second one ends the
// process at once, as daemonmain.SignalContext's doc promises ("stop
// releases the signals (a second one then kills the process as usual)").
//
// Root cause (before the fix): cmd/scheduler/main.go:149-150 `defer stop()`: the
// signal.NotifyContext registration lives until run returns, so signals
// during serve's Shutdown (main.go:327-331) go to a channel no one reads.
//
// Fix suggested (the code has the one applied): in serve, call stop() once ctx is done (before
// s.Shutdown), so that a second signal gets the default action; or watch a
// second signal and cancel the shutdown context.
func TestSecondSignalKills(t *testing.T) {
	bin := schedulertest.BuildScheduler(t)
	p := schedulertest.StartProcess(t, bin, schedulertest.ProcessOptions{ID: "sig2", Args: []string{"--shutdown-timeout=20s"}})
	conn, err := net.Dial("tcp", p.HTTPAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Headers and part of the body: the call is in flight.
	fmt.Fprintf(conn, "POST /v1/place HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"job\":")
	time.Sleep(300 * time.Millisecond)
	if err := syscall.Kill(p.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := syscall.Kill(p.Pid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// Terminate sends one more SIGTERM and waits.
	if err := p.Terminate(4 * time.Second); err != nil && strings.Contains(err.Error(), "no exit within") {
		t.Fatalf("still running 4 s after a second and a third signal during the shutdown: %v; want the second signal to end it\n%s", err, p.Logs())
	}
}

// TestTwoLineAuthTokenRefused: --auth-token-file holding two lines (a
// token and a comment, a CRLF file pasted with a stray line, two tokens
// during a rotation) is accepted: the token is "s3cret\n# rotated ..."
// with the new line inside, which no client can send in an Authorization
// header (Go's client refuses it, curl splits it into two headers), so
// every POST is 401 for good, silently.
//
// Expected: readSecret documents "a one-line secret file"; a token with a
// new line or another character not allowed in a header value (RFC 6750
// b64token: ALPHA DIGIT -._~+/ and trailing =) is refused at start, exit 1
// like an empty file, naming the file.
//
// Root cause (before the fix): cmd/scheduler/main.go:252-262 (readSecret trims only the
// ends); pkg/scheduler/config.go:268-269 checks only leading/trailing
// white space.
//
// Fix suggested (the code has the one applied): in readSecret (or scheduler.Config.validate) refuse a
// token holding any byte outside RFC 6750's b64token set, saying which
// (for example "holds a new line: one line expected").
func TestTwoLineAuthTokenRefused(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("s3cret\n# rotated 2026-11-30\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var o options
	fs := newFlags(&o, io.Discard)
	if err := flagenv.Parse(fs, []string{"--auth-token-file=" + tok}, func(string) (string, bool) { return "", false }); err != nil {
		t.Fatal(err)
	}
	cfg, err := buildConfig(o, nil)
	if err == nil {
		_, err = scheduler.New(cfg)
	}
	if err != nil {
		return // refused: fixed
	}
	// Show that such a token can never be sent.
	req, _ := http.NewRequest("POST", "http://127.0.0.1:1/v1/place", nil)
	req.Header.Set("Authorization", "Bearer "+cfg.AuthToken)
	_, sendErr := http.DefaultClient.Do(req)
	t.Errorf("a two-line --auth-token-file is accepted (token %q); a client sending it gets: %v", cfg.AuthToken, sendErr)
}

// TestBadJoinExitsUsage: a --join entry without a port (or any
// malformed address) exits 1, "failed to start", where the cache node
// exits 2 (bad flag value) for the same --join, and run documents "2 for
// bad flags or an unusable configuration".
//
// Root cause (before the fix): cmd/scheduler/main.go:151-154 maps only
// membership.ErrKeyLength and membership.ErrInvalidConfig from serve to
// ExitUsage, not membership.ErrBadAddress (which the cache node's
// isUsage, pkg/node/daemon/daemon.go:180, includes).
//
// Fix suggested (the code has the one applied): add errors.Is(err, membership.ErrBadAddress) there (or
// validate --join with membership's address check in buildConfig).
func TestBadJoinExitsUsage(t *testing.T) {
	for _, join := range []string{"127.0.0.1", "127.0.0.1:99999", "http://127.0.0.1:7946"} {
		var stderr bytes.Buffer
		code := run([]string{"--join=" + join, "--http-addr=127.0.0.1:0", "--grpc-addr=127.0.0.1:0", "--gossip-addr=127.0.0.1:0", "--join-timeout=2s"},
			func(string) (string, bool) { return "", false }, io.Discard, &stderr)
		if code != 2 {
			t.Errorf("--join=%s: exit %d (%s); want 2 (a bad flag value), as the cache node", join, code, strings.TrimSpace(stderr.String()))
		}
	}
}

// TestShutdownTimeoutValidated: --shutdown-timeout=-1s (or 0)
// is accepted; on SIGTERM the shutdown context is already expired, so the
// calls in flight are cut, and with etcd the final flush and the
// resignation are skipped (followers wait the lease TTL). Every other
// duration flag of both daemons refuses a negative value (--locality-wait,
// --max-wait, the cache node's --drain-timeout), and the cache node's
// --drain-timeout=0 means its default.
//
// Expected: exit 2 naming --shutdown-timeout for a negative value (0 is
// either refused or the default, documented).
//
// Root cause (before the fix): cmd/scheduler/main.go:123 registers the flag and nothing
// checks it; main.go:329 uses it as is.
//
// Fix suggested (the code has the one applied): in buildConfig (or run), refuse shutdownTimeout < 0 with
// "--shutdown-timeout %v: want a duration > 0", and treat 0 as the 30 s
// default or refuse it.
func TestShutdownTimeoutValidated(t *testing.T) {
	bin := schedulertest.BuildScheduler(t)
	for _, v := range []string{"-1s", "0"} {
		cmd := exec.Command(bin, "--shutdown-timeout="+v, "--http-addr=127.0.0.1:0", "--grpc-addr=127.0.0.1:0", "--gossip-addr=127.0.0.1:0")
		cmd.Env = os.Environ()
		if self, err := os.Executable(); err == nil && self == bin {
			cmd.Env = append(cmd.Env, schedulertest.DaemonEnv+"=1")
		}
		var out testproc.SyncBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out.String(), "shutdown-timeout") {
				t.Errorf("--shutdown-timeout=%s: exit %v, want 2 naming the flag\n%s", v, err, out.String())
			}
		case <-time.After(3 * time.Second):
			cmd.Process.Kill()
			<-done
			if !strings.Contains(out.String(), "serving") {
				t.Fatalf("--shutdown-timeout=%s: the test could not start the daemon\n%s", v, out.String())
			}
			t.Errorf("--shutdown-timeout=%s: accepted (the scheduler is serving); want exit 2 naming --shutdown-timeout", v)
		}
	}
}

// TestMetricsPerDesign scrapes a real scheduler process joined to a
// real cache node, after placements and completions, parses /metrics with
// the Prometheus text parser and checks every DESIGN.md scheduler metric
// with its labels and types: locus_tasks_placed_total{locality},
// locus_task_bytes_total{locality,source}, locus_placement_duration_seconds
// (histogram), locus_ring_members{state}, locus_slots{state}. The counters
// match what was done.
func TestMetricsPerDesign(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.bin"), bytes.Repeat([]byte("x"), 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	node := nodetest.StartProcess(t, nodetest.BuildCachenode(t), nodetest.ProcessOptions{ID: "m1", FileRoot: root,
		Args: []string{"--memory-size=16MiB", "--page-size=64KiB", "--block-size=1MiB", "--slots=3", "--rack=r1"}})
	p := schedulertest.StartProcess(t, schedulertest.BuildScheduler(t), schedulertest.ProcessOptions{ID: "s1", Join: []string{node.GossipAddr}})
	c := p.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		r, err := c.Ring(ctx)
		if err == nil && len(r.Members) >= 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("node never in the ring: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	uri := "file://" + root + "/a.bin"
	for i := range 2 {
		pl, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: fmt.Sprint("t", i), Split: schedapi.Split{URI: uri, Offset: int64(i) << 20, Length: 1 << 20}})
		if err != nil || pl.Node != "m1" {
			t.Fatalf("place: %+v %v", pl, err)
		}
	}
	if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "j", Task: "t0", Bytes: 100, LocalHitBytes: 60, PeerHitBytes: 10, MissBytes: 30}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + p.HTTPAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	type want struct {
		typ    string
		labels []string
	}
	for name, w := range map[string]want{
		"locus_tasks_placed_total":         {"COUNTER", []string{"locality"}},
		"locus_task_bytes_total":           {"COUNTER", []string{"locality", "source"}},
		"locus_placement_duration_seconds": {"HISTOGRAM", nil},
		"locus_ring_members":               {"GAUGE", []string{"state"}},
		"locus_slots":                      {"GAUGE", []string{"state"}},
	} {
		f, ok := fams[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if f.GetType().String() != w.typ {
			t.Errorf("%s is a %s, want %s", name, f.GetType(), w.typ)
		}
		for _, m := range f.GetMetric() {
			var got []string
			for _, l := range m.GetLabel() {
				got = append(got, l.GetName())
			}
			if strings.Join(got, ",") != strings.Join(w.labels, ",") {
				t.Errorf("%s has labels %v, want %v", name, got, w.labels)
			}
		}
	}
	val := func(name string, labels map[string]string) float64 {
		for _, m := range fams[name].GetMetric() {
			match := true
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					match = false
				}
			}
			if !match {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			}
		}
		return -1
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"locus_tasks_placed_total", map[string]string{"locality": "DATA_LOCAL"}, 2},
		{"locus_task_bytes_total", map[string]string{"locality": "DATA_LOCAL", "source": "local"}, 60},
		{"locus_task_bytes_total", map[string]string{"locality": "DATA_LOCAL", "source": "peer"}, 10},
		{"locus_task_bytes_total", map[string]string{"locality": "DATA_LOCAL", "source": "origin"}, 30},
		{"locus_ring_members", map[string]string{"state": "alive"}, 1},
		{"locus_slots", map[string]string{"state": "used"}, 1},
		{"locus_slots", map[string]string{"state": "free"}, 2},
	}
	for _, c := range checks {
		if got := val(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if h := fams["locus_placement_duration_seconds"].GetMetric(); len(h) != 1 || h[0].GetHistogram().GetSampleCount() != 2 {
		t.Errorf("locus_placement_duration_seconds: %v, want 2 samples", h)
	}
}
