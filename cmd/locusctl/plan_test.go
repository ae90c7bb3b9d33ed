package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/localcluster"
	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/ring"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// dataset writes 8 row groups (2 files), 8000 rows, under dir.
func dataset(t *testing.T, dir string) localcluster.Dataset {
	t.Helper()
	ds, err := localcluster.WriteDataset(context.Background(), dir, localcluster.DatasetSpec{RowGroups: 8, PerFile: 4, Rows: 8000})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func fileURI(p string) string { return origin.URI{Scheme: origin.SchemeFile, Path: p}.String() }

func plan(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := planMain(context.Background(), args, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// planJSON runs plan --json and decodes its lines.
func planJSON(t *testing.T, args ...string) ([]planRow, string) {
	t.Helper()
	out, errOut, err := plan(t, append(args, "--json")...)
	if err != nil {
		t.Fatalf("plan %q: %v\n%s", args, err, errOut)
	}
	var rows []planRow
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var r planRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		rows = append(rows, r)
	}
	return rows, errOut
}

// checkRows checks the splits against the dataset and each row's placement
// key against ring.PlacementKey with blockSize, and owners against want
// (nil: no owners).
func checkRows(t *testing.T, rows []planRow, rowsWant int64, blockSize int64, owners func(key string) []ring.Node) {
	t.Helper()
	if len(rows) != 8 {
		t.Fatalf("%d splits, want 8", len(rows))
	}
	var n int64
	for i, r := range rows {
		n += r.NumRows
		if r.RowGroup != i%4 || r.Length <= 0 || (i%4 == 0 && r.Offset != 4) {
			t.Errorf("split %d: %+v: want row group %d, the first at offset 4", i, r, i%4)
		}
		key, err := ring.PlacementKey(r.URI, r.Offset, r.Length, blockSize)
		if err != nil || key != r.PlacementKey || !strings.HasSuffix(key, fmt.Sprintf("#%d", r.Block)) {
			t.Errorf("split %d: key %q (block %d), want %q (%v)", i, r.PlacementKey, r.Block, key, err)
		}
		if owners == nil {
			if r.Owner != "" || r.Rack != "" || len(r.Replicas) != 0 {
				t.Errorf("split %d has owners %+v without a ring", i, r)
			}
			continue
		}
		want := owners(key)
		got := append([]string{r.Owner}, r.Replicas...)
		if len(want) != len(got) || r.Rack != want[0].Rack {
			t.Errorf("split %d: owners %v rack %q, want %v", i, got, r.Rack, want)
			continue
		}
		for j := range want {
			if got[j] != want[j].ID {
				t.Errorf("split %d: owners %v, want %v", i, got, want)
			}
		}
	}
	if n != rowsWant {
		t.Errorf("splits hold %d rows, want %d", n, rowsWant)
	}
}

// TestPlanFile: a file:// prefix, no ring: the table lists every row
// group with its placement key, owners "-"; hidden files are ignored; an
// unreadable footer is skipped with a warning and fails the command at
// the end.
func TestPlanFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake", "events")
	ds := dataset(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "_SUCCESS"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := plan(t, fileURI(dir+"/"))
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 9 || !strings.HasPrefix(lines[0], "URI") || !strings.Contains(lines[0], "PLACEMENT KEY") {
		t.Fatalf("want a header and 8 rows:\n%s", out)
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 8 || f[6] != "-" || f[7] != "-" || !strings.HasSuffix(f[5], "#0") || !strings.HasPrefix(f[0], fileURI(dir)) {
			t.Errorf("row %q: want uri, row group, offset, length, rows, key ...#0 (128MiB blocks), owner -, rack -", l)
		}
	}
	if !strings.Contains(errOut, "8 splits in 2 files (8000 rows") {
		t.Errorf("summary: %q", errOut)
	}
	rows, _ := planJSON(t, "--block-size", "256KiB", fileURI(dir+"/"))
	checkRows(t, rows, ds.Rows, 256<<10, nil)

	// The URI may name one file; its directory is the default file root.
	out, _, err = plan(t, fileURI(ds.Files[1]))
	if err != nil || strings.Count(out, "\n") != 5 {
		t.Errorf("one file: %v\n%s", err, out)
	}

	if err := os.WriteFile(filepath.Join(dir, "broken.parquet"), []byte("PAR1 this is not a footer PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err = plan(t, fileURI(dir+"/"))
	if !errors.Is(err, errSkipped) || !strings.Contains(errOut, "warning: skipping "+fileURI(filepath.Join(dir, "broken.parquet"))) {
		t.Errorf("a broken file: %v, stderr %q; want a warning naming it and errSkipped", err, errOut)
	}
	if strings.Count(out, "\n") != 9 {
		t.Errorf("the readable files are still printed:\n%s", out)
	}
}

// TestPlanSimulatedRing: --nodes N owners are those of a ring of N nodes
// named node-0000..., with --replication preference lists.
func TestPlanSimulatedRing(t *testing.T) {
	dir := t.TempDir()
	ds := dataset(t, dir)
	r, err := ring.New([]ring.Node{{ID: "node-0000", Weight: 1}, {ID: "node-0001", Weight: 1}, {ID: "node-0002", Weight: 1}, {ID: "node-0003", Weight: 1}}, ring.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rows, errOut := planJSON(t, fileURI(dir+"/"), "--nodes", "4", "--replication", "2", "--block-size", "128KiB")
	checkRows(t, rows, ds.Rows, 128<<10, func(key string) []ring.Node { return r.Owners(key, 2) })
	if !strings.Contains(errOut, "simulated, 4 nodes") || !strings.Contains(errOut, "splits per owner") {
		t.Errorf("summary %q", errOut)
	}
	out, _, err := plan(t, fileURI(dir+"/"), "--nodes", "4", "--replication", "2")
	if err != nil || !strings.Contains(out, "REPLICAS") {
		t.Errorf("table with replicas: %v\n%s", err, out)
	}
}

// TestPlanScheduler: owners from a scheduler's GET /v1/ring, rebuilt here,
// are the scheduler's own ring's, with its block size.
func TestPlanScheduler(t *testing.T) {
	dir := t.TempDir()
	ds := dataset(t, dir)
	const bs = 256 << 10
	node := func(id, rack string) membership.Member {
		m := schedulertest.Node(id, rack, 2)
		m.BlockSize = bs
		return m
	}
	views := schedulertest.NewViews(t, node("n1", "r1"), node("n2", "r1"), node("n3", "r2"))
	s := schedulertest.Start(t, scheduler.Config{Membership: views, BlockSize: bs})
	v := views.View()
	rows, errOut := planJSON(t, fileURI(dir+"/"), "--scheduler", "http://"+s.HTTPAddr())
	checkRows(t, rows, ds.Rows, bs, func(key string) []ring.Node { return v.Ring.Owners(key, v.Replication()) })
	if strings.Contains(errOut, "warning") || !strings.Contains(errOut, fmt.Sprintf("epoch %016x", v.Epoch)) {
		t.Errorf("stderr %q: want the scheduler's epoch and no warning", errOut)
	}
	_, errOut, _ = plan(t, fileURI(dir+"/"), "--scheduler", "http://"+s.HTTPAddr(), "--block-size", "1MiB")
	if !strings.Contains(errOut, "warning: --block-size 1MiB differs from the cluster's 256KiB") {
		t.Errorf("overriding the cluster's block size: stderr %q, want a warning", errOut)
	}
	if _, _, err := plan(t, fileURI(dir+"/"), "--scheduler", "http://127.0.0.1:1"); err == nil || errors.Is(err, errUsage) {
		t.Errorf("unreachable scheduler: %v, want a failure", err)
	}
}

// TestPlanJoin: owners from the gossip, joined as an observer.
func TestPlanJoin(t *testing.T) {
	dir := t.TempDir()
	ds := dataset(t, dir)
	const bs = 512 << 10
	var seed *membership.Membership
	for i, rack := range []string{"r1", "r2"} {
		m, err := membership.New(membership.Config{
			Meta:     membership.NodeMeta{ID: fmt.Sprintf("c%d", i), Rack: rack, GRPCAddr: "127.0.0.1:1", Slots: 2, BlockSize: bs},
			BindAddr: "127.0.0.1:0", Tuning: membership.LoopbackTuning(),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Shutdown() })
		if seed == nil {
			seed = m
		} else if _, err := m.Join([]string{seed.GossipAddr()}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := seed.WaitFor(ctx, func(v *membership.View) bool { return v.Ring != nil && v.Ring.Len() == 2 })
	if err != nil {
		t.Fatal(err)
	}
	rows, errOut := planJSON(t, fileURI(dir+"/"), "--join", seed.GossipAddr())
	checkRows(t, rows, ds.Rows, bs, func(key string) []ring.Node { return v.Ring.Owners(key, v.Replication()) })
	if !strings.Contains(errOut, "the gossip at "+seed.GossipAddr()+" (2 nodes") {
		t.Errorf("summary %q", errOut)
	}
	// The observer left: the seed's view has no locusctl member.
	time.Sleep(100 * time.Millisecond)
	for _, m := range seed.View().Members {
		if strings.Contains(m.ID, "locusctl-plan") {
			t.Errorf("the observer %s is still a member", m.ID)
		}
	}
}

// TestPlanS3: the same dataset in a real S3 server (versitygw).
func TestPlanS3(t *testing.T) {
	gw := origintest.StartVersityGW(t)
	ds := dataset(t, t.TempDir())
	for i, f := range ds.Files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		gw.Put(t, fmt.Sprintf("tables/events/part-%d.parquet", i), b)
	}
	gw.Put(t, "tables/events/_SUCCESS", nil)
	gw.Put(t, "tables/other/x.parquet", []byte("not under the prefix"))
	t.Setenv("AWS_ACCESS_KEY_ID", gw.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", gw.SecretKey)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	rows, _ := planJSON(t, gw.URI("tables/events/"), "--origin-s3-endpoint", gw.Endpoint, "--origin-s3-region", gw.Region,
		"--origin-s3-path-style", "--nodes", "3", "--block-size", "256KiB")
	r, err := ring.New([]ring.Node{{ID: "node-0000", Weight: 1}, {ID: "node-0001", Weight: 1}, {ID: "node-0002", Weight: 1}}, ring.Config{})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, rows, ds.Rows, 256<<10, func(key string) []ring.Node { return r.Owners(key, 1) })
	for _, row := range rows {
		if !strings.HasPrefix(row.URI, gw.URI("tables/events/part-")) || row.Version == "" {
			t.Errorf("row %+v: want an s3:// URI under the prefix with its ETag", row)
		}
	}
	if _, _, err := plan(t, gw.URI("tables/events/"), "--origin-s3-endpoint", gw.Endpoint, "--origin-s3-path-style",
		"--origin-s3-region", gw.Region, "--json"); err != nil {
		t.Errorf("without a ring: %v", err)
	}
}

func TestPlanBadArguments(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{},
		{"http://example.com/x"},
		{"s3://"},
		{"file://relative/path"},
		{fileURI(dir + "/"), fileURI(dir + "/x/")},
		{fileURI(dir + "/"), "--nodes", "3", "--scheduler", "http://127.0.0.1:1"},
		{fileURI(dir + "/"), "--nodes", "-1"},
		{fileURI(dir + "/"), "--nodes", "0"},
		{fileURI(dir + "/"), "--nodes", "0", "--scheduler", "http://127.0.0.1:1"},
		{fileURI(dir + "/"), "--replication", "0"},
		{fileURI(dir + "/"), "--block-size", "0"},
		{fileURI(dir + "/"), "--concurrency", "0"},
		{fileURI(dir + "/"), "--nope"},
		{fileURI(dir + "/"), "--scheduler", "ftp://x"},
	} {
		if _, _, err := plan(t, args...); !errors.Is(err, errUsage) {
			t.Errorf("plan %q: %v, want a usage error", args, err)
		}
	}
	if out, errOut, err := plan(t, "--help"); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out, "placement key") || errOut != "" {
		t.Errorf("--help: %v, stdout %q, stderr %q; want the usage on stdout", err, out, errOut)
	}
	if _, _, err := plan(t, fileURI(filepath.Join(dir, "missing")+"/")); err == nil {
		t.Errorf("a file root that does not exist: no error")
	}
	out, _, err := plan(t, "--nodes", "3", fileURI(dir+"/")) // flags before the URI; an empty prefix
	if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "no Parquet objects under") || out != "" {
		t.Errorf("empty prefix: %v, %q; want exit 1 naming the prefix, as warm does, and no output", err, out)
	}
}
