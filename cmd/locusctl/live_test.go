package main

// Helpers for the tests of the commands that talk to a running cluster
// (ring status, place, complete, jobs, stat, warm): one in-process local
// cluster (internal/localcluster: 3 real nodes on two racks, gossip, gRPC,
// a standalone scheduler observing them, a file:// origin) shared by the
// tests that need one, started on first use and stopped by TestMain. Each
// test writes its own dataset under its own prefix and uses its own job
// names, so the tests do not see each other's cache or counters.

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/localcluster"
)

var live struct {
	once sync.Once
	dir  string
	c    *localcluster.Cluster
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if live.c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := live.c.Stop(ctx); err != nil {
			log.Printf("stopping the local cluster: %v", err)
		}
		cancel()
	}
	if live.dir != "" {
		os.RemoveAll(live.dir)
	}
	os.Exit(code)
}

// liveCluster returns the shared local cluster, starting it on first use.
func liveCluster(t *testing.T) *localcluster.Cluster {
	t.Helper()
	live.once.Do(func() {
		if live.dir, live.err = os.MkdirTemp("", "locusctl-test-"); live.err != nil {
			return
		}
		live.c, live.err = localcluster.Start(context.Background(), localcluster.Config{Dir: live.dir})
	})
	if live.err != nil {
		t.Fatalf("starting the local cluster: %v", live.err)
	}
	return live.c
}

// datasetSeq numbers the datasets, so a test run again (-count) writes new
// objects: a rewritten object of the same name could be served from the
// old version until the nodes' stat cache expires.
var datasetSeq atomic.Int64

// liveDataset writes a dataset of rowGroups row groups (4 per file, 1000
// rows each) under lake/<name>-<n>/ of the shared cluster's origin and
// returns it with its prefix URI.
func liveDataset(t *testing.T, c *localcluster.Cluster, name string, rowGroups int) (localcluster.Dataset, string) {
	t.Helper()
	name = fmt.Sprintf("%s-%d", name, datasetSeq.Add(1))
	dir := filepath.Join(c.DataRoot, localcluster.GatewayBucket, name)
	ds, err := localcluster.WriteDataset(context.Background(), dir, localcluster.DatasetSpec{RowGroups: rowGroups, PerFile: 4, Rows: int64(rowGroups) * 1000})
	if err != nil {
		t.Fatal(err)
	}
	return ds, c.URI(localcluster.GatewayBucket + "/" + name + "/")
}

// result is what one locusctl run printed and its exit status.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// locusctl runs the CLI in-process, as main does, and returns its output
// and exit status.
func locusctl(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return result{stdout.String(), stderr.String(), code}
}

// mustRun runs locusctl and fails the test unless it exits 0.
func mustRun(t *testing.T, args ...string) result {
	t.Helper()
	r := locusctl(t, args...)
	if r.code != 0 {
		t.Fatalf("locusctl %s: %v", strings.Join(args, " "), r)
	}
	return r
}

// withEnv makes the commands see env as their LOCUS_* environment for the
// rest of the test (and nothing else from the real environment).
func withEnv(t *testing.T, env map[string]string) {
	t.Helper()
	old := lookupEnv
	lookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	t.Cleanup(func() { lookupEnv = old })
}

// badArgs is one row of a bad-arguments table: the arguments and a
// fragment the error must contain.
type badArgs struct {
	args []string
	want string
}

// checkBadArgs runs each row and checks exit status 2 and that stderr
// names the problem, on one line.
func checkBadArgs(t *testing.T, rows []badArgs) {
	t.Helper()
	withEnv(t, nil)
	for _, tc := range rows {
		r := locusctl(t, tc.args...)
		if r.code != 2 {
			t.Errorf("locusctl %q: exit %d, want 2\n%s", tc.args, r.code, r.stderr)
			continue
		}
		if !strings.Contains(r.stderr, tc.want) {
			t.Errorf("locusctl %q: stderr %q does not mention %q", tc.args, r.stderr, tc.want)
		}
		if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 {
			t.Errorf("locusctl %q: the error takes %d lines, want 1: %q", tc.args, n+1, r.stderr)
		}
	}
}
