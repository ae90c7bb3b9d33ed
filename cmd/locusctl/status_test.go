package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/locuscache/locus/pkg/client"
)

// TestRingStatus: the table lists the cluster's three nodes with their
// racks, slots and addresses, the header the block size and epoch, and the
// totals line sums them; --json is the scheduler's own /v1/ring answer;
// LOCUS_SCHEDULER stands in for --scheduler.
func TestRingStatus(t *testing.T) {
	c := liveCluster(t)
	withEnv(t, nil)
	r := mustRun(t, "ring", "status", "--scheduler", c.SchedulerURL())
	t.Logf("ring status:\n%s", r.stdout)

	var rs client.RingStatus
	js := mustRun(t, "ring", "status", "--scheduler", c.SchedulerURL(), "--json")
	if err := json.Unmarshal([]byte(js.stdout), &rs); err != nil {
		t.Fatalf("--json: %v\n%s", err, js.stdout)
	}
	if rs.Epoch == 0 || rs.BlockSize != 512<<10 {
		t.Errorf("--json: epoch %x, block size %d; want an epoch and 512KiB", rs.Epoch, rs.BlockSize)
	}
	want := map[string]string{}
	for _, n := range c.Nodes {
		want[n.ID()] = n.Rack() + " " + n.GRPCAddr() + " " + n.HTTPAddr()
	}
	for _, n := range c.Nodes {
		re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(n.ID()) + `\s+` + n.Rack() + `\s+alive\s+0/4\s+0\s+64\.0 MiB\s+[0-9.]+%\s+` +
			regexp.QuoteMeta(n.GRPCAddr()) + `\s+` + regexp.QuoteMeta(n.HTTPAddr()) + `$`)
		if !re.MatchString(r.stdout) {
			t.Errorf("no line for %s (%s) in:\n%s", n.ID(), want[n.ID()], r.stdout)
		}
	}
	var cache int
	for _, m := range rs.Members {
		if m.Role == "cache" {
			cache++
			if _, ok := want[m.Node]; !ok {
				t.Errorf("--json lists unknown cache node %q", m.Node)
			}
		}
	}
	if cache != len(c.Nodes) {
		t.Errorf("--json lists %d cache nodes, want %d", cache, len(c.Nodes))
	}
	for _, frag := range []string{
		"block size 512KiB",
		"Ring epoch " + rs.EpochHex,
		"standalone",
		"3 cache nodes",
	} {
		if !strings.Contains(r.stdout, frag) {
			t.Errorf("ring status lacks %q:\n%s", frag, r.stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^TOTAL\s+2 racks\s+3 alive\s+0/12\s+0\s+192\.0 MiB\s+100\.0%`).MatchString(r.stdout) {
		t.Errorf("no totals line (2 racks, 3 alive, 0/12 slots, 192 MiB, 100%%) in:\n%s", r.stdout)
	}

	withEnv(t, map[string]string{"LOCUS_SCHEDULER": c.SchedulerURL()})
	if env := mustRun(t, "ring", "status"); env.stdout != r.stdout {
		t.Errorf("with LOCUS_SCHEDULER:\n%s\nwant:\n%s", env.stdout, r.stdout)
	}
}

// TestRingStatusUnreachable: a scheduler that is not there is exit 1 and
// one line that says so.
func TestRingStatusUnreachable(t *testing.T) {
	withEnv(t, nil)
	r := locusctl(t, "ring", "status", "--scheduler", "http://127.0.0.1:1")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1: %v", r.code, r)
	}
	if !strings.Contains(r.stderr, "cannot reach the scheduler at http://127.0.0.1:1") || !strings.Contains(r.stderr, "connection refused") ||
		strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || r.stdout != "" {
		t.Errorf("want one line naming the scheduler and the refusal, got %v", r)
	}
}

func TestRingStatusBadArguments(t *testing.T) {
	emptyToken := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(emptyToken, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	checkBadArgs(t, []badArgs{
		{[]string{"ring", "status", "--scheduler", "http://127.0.0.1:1", "--token-file", emptyToken}, "is empty"},
		{[]string{"ring", "status"}, "missing --scheduler"},
		{[]string{"ring", "status", "--scheduler", "ftp://x"}, `--scheduler "ftp://x"`},
		{[]string{"ring", "status", "--scheduler", "http://127.0.0.1:1", "extra"}, `unexpected argument "extra"`},
		{[]string{"ring", "status", "--scheduler", "http://127.0.0.1:1", "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"ring", "status", "--scheduler", "http://127.0.0.1:1", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"ring", "status", "--scheduler", "http://127.0.0.1:1", "--token-file", "/nonexistent/token"}, "--token-file"},
		{[]string{"ring", "status", "--scheduler", "http://127.0.0.1:1", "--tls-cert", "a.pem"}, "--tls-cert and --tls-key go together"},
		{[]string{"ring", "status", "--scheduler", "http://127.0.0.1:1", "--tls-ca", "/nonexistent/ca.pem"}, "--tls-ca"},
	})
	withEnv(t, map[string]string{"LOCUS_TIMEOUT": "soon"})
	r := locusctl(t, "ring", "status", "--scheduler", "http://127.0.0.1:1")
	if r.code != 2 || !strings.Contains(r.stderr, "LOCUS_TIMEOUT") {
		t.Errorf("a bad LOCUS_TIMEOUT: %v; want exit 2 naming the variable", r)
	}
	h := locusctl(t, "ring", "status", "--help")
	if h.code != 0 || !strings.Contains(h.stdout, "Examples:") || !strings.Contains(h.stdout, "LOCUS_SCHEDULER") || h.stderr != "" {
		t.Errorf("ring status --help: %v", h)
	}
}
