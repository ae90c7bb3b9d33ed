// Regression tests for bugs a review found (2026-12-01): each test's
// comment describes the bug as it was before the fix.
package main

import (
	"path/filepath"
	"testing"
)

// TestWarmNodeWithSchedulerEnv: the live-cluster commands take
// every flag from LOCUS_* and promise "a flag on the command line wins";
// jobs' --help even shows LOCUS_SCHEDULER exported. But warm's --node and
// --scheduler exclude each other and the check runs after the environment
// filled the flag the command line left out: with LOCUS_SCHEDULER
// exported, `locusctl warm PREFIX --node HOST:PORT` always fails with
// "give --scheduler or --node, not both" (exit 2) although the operator
// gave only --node (and LOCUS_NODE breaks every --scheduler warm the same
// way). Expected: the mode given on the command line wins over the other
// mode's environment variable.
func TestWarmNodeWithSchedulerEnv(t *testing.T) {
	withEnv(t, map[string]string{"LOCUS_SCHEDULER": "http://127.0.0.1:8080"})
	dir := filepath.Join(t.TempDir(), "lake", "events")
	ds := dataset(t, dir)
	// --dry-run with --node contacts no node and no scheduler.
	r := locusctl(t, "warm", fileURI(ds.Dir)+"/", "--node", "127.0.0.1:7070", "--dry-run")
	if r.code != 0 {
		t.Fatalf("warm --node with LOCUS_SCHEDULER in the environment: %v", r)
	}
}

// TestWarmNodeWithWaitEnv: the same with LOCUS_WAIT (place's and
// warm's locality wait): exported for `locusctl place`, it makes every
// `locusctl warm PREFIX --node HOST:PORT` a usage error "--job and --wait
// need --scheduler", though no --wait was given.
func TestWarmNodeWithWaitEnv(t *testing.T) {
	withEnv(t, map[string]string{"LOCUS_WAIT": "1s"})
	dir := filepath.Join(t.TempDir(), "lake", "events")
	ds := dataset(t, dir)
	r := locusctl(t, "warm", fileURI(ds.Dir)+"/", "--node", "127.0.0.1:7070", "--dry-run")
	if r.code != 0 {
		t.Fatalf("warm --node with LOCUS_WAIT in the environment: %v", r)
	}
}

// TestStatWithWarmColumnsEnv: LOCUS_COLUMNS names two different
// flags: warm's --columns a,b (a list) and stat's --columns (a bool).
// With LOCUS_COLUMNS=id,ts exported for warm, as envHelp invites, every
// `locusctl stat` fails before doing anything: "usage error: environment
// variable LOCUS_COLUMNS="id,ts": parse error" (exit 2). Expected: stat
// runs (here: exit 1, nothing listens on the node address).
func TestStatWithWarmColumnsEnv(t *testing.T) {
	withEnv(t, map[string]string{"LOCUS_COLUMNS": "id,ts"})
	r := locusctl(t, "stat", "--node", "127.0.0.1:1", "--timeout", "2s", "s3://bkt/k.parquet")
	if r.code == 2 {
		t.Fatalf("stat with warm's LOCUS_COLUMNS in the environment: %v", r)
	}
}
