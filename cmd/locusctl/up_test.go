package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/testproc"
)

// passRow matches a line of the pass table: pass, tasks, DATA_LOCAL,
// RACK_LOCAL, OTHER_LOCAL, hit ratio, ..., rows, time.
var passRow = regexp.MustCompile(`^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([0-9.]+)\s+\S+\s+.*\s(\d+)\s+\S+$`)

type passLine struct {
	pass, tasks, dataLocal, rackLocal, otherLocal int
	hitRatio                                      float64
	rows                                          int64
}

func parsePasses(t *testing.T, out string) []passLine {
	t.Helper()
	var ps []passLine
	for _, l := range strings.Split(out, "\n") {
		m := passRow.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		atoi := func(s string) int { v, _ := strconv.Atoi(s); return v }
		hr, _ := strconv.ParseFloat(m[6], 64)
		rows, _ := strconv.ParseInt(m[7], 10, 64)
		ps = append(ps, passLine{atoi(m[1]), atoi(m[2]), atoi(m[3]), atoi(m[4]), atoi(m[5]), hr, rows})
	}
	return ps
}

// waitUpRunning waits until up, started with its result going to errc,
// says it runs until Ctrl-C; it fails the test if up returns first or is
// not running within 30 s.
func waitUpRunning(t *testing.T, stdout, stderr *testproc.SyncBuffer, errc <-chan error) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(stdout.String(), "Press Ctrl-C") {
		select {
		case err := <-errc:
			t.Fatalf("up returned before waiting: %v\n%s%s", err, stdout.String(), stderr.String())
		case <-deadline:
			t.Fatalf("up not running within 30s:\n%s", stdout.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestUpNoWait is the README's run command as CI runs it: the local
// cluster starts, every pass reads every row written, tasks run
// data-local, the warm passes hit, and it exits cleanly, removing its
// temporary directory.
func TestUpNoWait(t *testing.T) {
	start := time.Now()
	var stdout, stderr testproc.SyncBuffer
	err := upMain(context.Background(), []string{"--no-wait"}, &stdout, &stderr)
	out := stdout.String()
	if err != nil {
		t.Fatalf("up --no-wait: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	t.Logf("up --no-wait took %v:\n%s", time.Since(start).Round(time.Millisecond), out)
	ps := parsePasses(t, out)
	if len(ps) != 3 {
		t.Fatalf("%d pass lines, want 3:\n%s", len(ps), out)
	}
	for i, p := range ps {
		if p.pass != i+1 || p.tasks != 24 || p.dataLocal+p.rackLocal+p.otherLocal != 24 {
			t.Errorf("pass line %+v: want pass %d with 24 tasks over the three levels", p, i+1)
		}
		if p.rows != 100000 {
			t.Errorf("pass %d read %d rows, 100000 were written", p.pass, p.rows)
		}
		if p.dataLocal == 0 {
			t.Errorf("pass %d: no DATA_LOCAL task", p.pass)
		}
		if i == 0 && p.hitRatio > 0.3 {
			t.Errorf("cold pass hit ratio %.3f, want near 0", p.hitRatio)
		}
		if i > 0 && p.hitRatio < 0.9 {
			t.Errorf("warm pass %d hit ratio %.3f, want >= 0.9", p.pass, p.hitRatio)
		}
	}
	for _, want := range []string{"Every pass read all 100000 rows.", "/v1/place", "/metrics", "Stopping"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	dir := tempDirOf(t, out)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temporary directory %s still there (%v)", dir, err)
	}
}

// TestUpDirInUse: a second up in a --dir that a running up holds fails at
// once, naming the holder, and leaves the directory alone. Was: it rewrote
// DIR/data/lake/events/ under the first one's running cluster.
func TestUpDirInUse(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockUpDir(dir) // as a running up holds it
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr testproc.SyncBuffer
	err = upMain(context.Background(), []string{"--dir", dir, "--no-wait"}, &stdout, &stderr)
	if !errors.Is(err, errUpDirBusy) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second up in %s: got %v, want errUpDirBusy naming the directory and the holder's pid", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Errorf("the second up touched %s/data (%v)", dir, err)
	}
	unlock()
	// Once the first one is gone, the directory is free again.
	if err := upMain(context.Background(), []string{"--dir", dir, "--no-wait", "--passes", "1"}, &stdout, &stderr); err != nil {
		t.Fatalf("up after the holder let go: %v\n%s", err, stdout.String())
	}
}

func tempDirOf(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`Starting a local Locus cluster in (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no directory in the output:\n%s", out)
	}
	return m[1]
}

// TestUpUntilSignal: without --no-wait, up keeps serving until its
// context ends (SIGINT/SIGTERM in runUp), then stops cleanly; a --dir
// given is kept with the dataset in it.
func TestUpUntilSignal(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testproc.SyncBuffer
	errc := make(chan error, 1)
	go func() {
		errc <- upMain(ctx, []string{"--dir", dir, "--passes", "1", "--tasks", "6", "--rows", "6000"}, &stdout, &stderr)
	}()
	waitUpRunning(t, &stdout, &stderr, errc)
	cancel() // Ctrl-C
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("up after Ctrl-C: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("up did not stop within 30s of Ctrl-C")
	}
	out := stdout.String()
	if ps := parsePasses(t, out); len(ps) != 1 || ps[0].rows != 6000 || ps[0].tasks != 6 {
		t.Errorf("passes %+v, want one of 6 tasks reading 6000 rows:\n%s", ps, out)
	}
	if !strings.Contains(out, "Kept "+dir) {
		t.Errorf("output does not say %s was kept:\n%s", dir, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "data", "lake", "events", "*.parquet"))
	if len(files) != 2 {
		t.Errorf("%d Parquet files in %s, want 2 (6 row groups, 4 per file)", len(files), dir)
	}
}

// TestUpZeroWait: --wait 0s means no locality wait, as the workload line
// says, for the scheduler too (localcluster reads 0 as its 500ms default).
func TestUpZeroWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testproc.SyncBuffer
	errc := make(chan error, 1)
	go func() {
		errc <- upMain(ctx, []string{"--wait", "0s", "--passes", "1", "--tasks", "4", "--rows", "400"}, &stdout, &stderr)
	}()
	waitUpRunning(t, &stdout, &stderr, errc)
	out := stdout.String()
	if !strings.Contains(out, "locality wait 0s") {
		t.Errorf("the workload line does not say locality wait 0s:\n%s", out)
	}
	m := regexp.MustCompile(`JSON API (http://\S+?)/?\s`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no scheduler URL in the output:\n%s", out)
	}
	resp, err := http.Get(m[1] + "/v1/ring")
	if err != nil {
		t.Fatal(err)
	}
	var ring struct {
		LocalityWaitMS int64 `json:"locality_wait_ms"`
	}
	err = json.NewDecoder(resp.Body).Decode(&ring)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if ring.LocalityWaitMS != 0 {
		t.Errorf("the scheduler's locality wait is %dms, want none", ring.LocalityWaitMS)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("up after Ctrl-C: %v\n%s", err, stderr.String())
	}
}

func TestUpBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"--passes", "0"},
		{"--tasks", "0"},
		{"--rows", "5", "--tasks", "10"},
		{"--block-size", "1000"},
		{"--block-size", "lots"},
		{"--slots", "0"},
		{"--wait", "-1s"},
		{"--http-port-base", "-1"},
		{"extra"},
		{"--nope"},
	} {
		var stdout, stderr bytes.Buffer
		if err := upMain(context.Background(), args, &stdout, &stderr); !errors.Is(err, errUsage) {
			t.Errorf("up %q: %v, want a usage error", args, err)
		}
	}
	var stdout, stderr bytes.Buffer
	if err := upMain(context.Background(), []string{"--help"}, &stdout, &stderr); !errors.Is(err, flag.ErrHelp) || !strings.Contains(stdout.String(), "Ctrl-C") || stderr.Len() != 0 {
		t.Errorf("up --help: %v, stdout %q, stderr %q; want the usage on stdout", err, stdout.String(), stderr.String())
	}
}
