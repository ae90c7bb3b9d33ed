package main

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/localcluster"
)

// TestWarmObjectChangedAfterPlan (a regression test: it failed before its fix).
//
// What was wrong: warm plans from the footers it read on the origin (one
// version of each object), then reads the planned row-group ranges
// through the cluster WITHOUT naming that version. When an object is
// replaced between the plan and the reads (here by bytes that are not even
// Parquet, of the same size), the nodes stat the new version and cache its
// bytes at the old version's row-group offsets, and warm reports every
// split of the object warmed, "now cached", exit 0: it warmed bytes of
// a version it never planned, and the planned version is not cached.
//
// Expected: each split read carries the planned version
// (readpath.Request.ExpectedVersion = the listed origin.Info.Version), so
// a changed object fails its splits (FAILED_PRECONDITION, counted as
// failed splits, named on stderr, exit 1) or is re-planned; it is never
// reported as warmed.
//
// Root cause (before the fix): cmd/locusctl/warm.go:640 (warmer.read) and warm.go:621
// (warmReplicas) call w.cl.ReadRange(ctx, addr, uri, off, len, ...), which
// sends no ExpectedVersion, although plan.files[it.file].Version is known
// (warmItem.file).
//
// Suggested fix: use w.cl.Read(ctx, addr, readpath.Request{URI:
// it.split.URI, Offset: r.Offset, Length: r.Length, ExpectedVersion:
// w.plan.files[it.file].Version}, io.Discard) in both places.
//
// Fixed (applied): warm reads each range pinned to the planned version
// (warmer.pinned).
func TestWarmObjectChangedAfterPlan(t *testing.T) {
	c := liveCluster(t)
	withEnv(t, nil)
	ds, prefix := liveDataset(t, c, "review-changed", 4) // one file of 4 row groups
	if len(ds.Files) != 1 {
		t.Fatalf("setup: %d files, want 1", len(ds.Files))
	}
	ctx := context.Background()
	o, err := parseWarm([]string{prefix, "--node", c.Nodes[0].GRPCAddr(), "--concurrency", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	store, err := planOrigin(ctx, o.origin)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := planWarm(ctx, store, o, io.Discard)
	if err != nil || len(plan.items) != 4 {
		t.Fatalf("plan: %v, %d items", err, len(plan.items))
	}
	planned := plan.files[0]

	// The object is replaced between the plan and the reads.
	fi, err := os.Stat(ds.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, fi.Size())
	r := rand.New(rand.NewPCG(7, 7))
	for i := range junk {
		junk[i] = byte(r.Uint32())
	}
	tmp := filepath.Join(filepath.Dir(ds.Files[0]), ".review-tmp")
	if err := os.WriteFile(tmp, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	later := fi.ModTime().Add(time.Second)
	os.Chtimes(tmp, later, later)
	if err := os.Rename(tmp, ds.Files[0]); err != nil {
		t.Fatal(err)
	}
	now, err := store.Stat(ctx, planned.URI)
	if err != nil || now.Version == planned.Version {
		t.Fatalf("setup: the object's version did not change (%v, %q -> %q)", err, planned.Version, now.Version)
	}

	var stderr bytes.Buffer
	w, err := newWarmer(o, plan, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	runErr := w.run(ctx)
	var sum warmSummary
	w.fill(&sum)
	t.Logf("run: %v; summary %+v\n%s", runErr, sum, stderr.String())
	if sum.WarmedSplits != 0 || sum.WarmedObjects != 0 || sum.FailedSplits != len(plan.items) {
		t.Errorf("warm of %s planned at version %q, replaced by %q before the reads: %d splits and %d objects reported warmed (%d bytes, %d from the origin \"now cached\"), %d failed; want every split failed (the planned version is gone)",
			planned.URI, planned.Version, now.Version, sum.WarmedSplits, sum.WarmedObjects, sum.Bytes, sum.OriginBytes, sum.FailedSplits)
	}
}

// TestWarmOutsideNodeRoot: a file:// prefix that locusctl can list
// and plan (its own --origin-file-root) but that lies outside the nodes'
// file root: every split fails on the nodes, the summary says so and warm
// exits 1 (passes: no false "warmed").
func TestWarmOutsideNodeRoot(t *testing.T) {
	c := liveCluster(t)
	withEnv(t, nil)
	dir := t.TempDir()
	if _, err := localcluster.WriteDataset(context.Background(), filepath.Join(dir, "ds"), localcluster.DatasetSpec{RowGroups: 2, PerFile: 2, Rows: 2000}); err != nil {
		t.Fatal(err)
	}
	prefix := "file://" + filepath.Join(dir, "ds") + "/"
	r := locusctl(t, "warm", prefix, "--node", c.Nodes[0].GRPCAddr(), "--origin-file-root", dir, "--json")
	if r.code != 1 || !strings.Contains(r.stderr, "could not be warmed") || !strings.Contains(r.stdout, `"warmed_splits": 0`) {
		t.Errorf("warm of a prefix outside the nodes' root: %v; want exit 1, 0 splits warmed", r)
	}
}
