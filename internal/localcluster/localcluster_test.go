package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/parquetx"
	"github.com/locuscache/locus/pkg/ring"
)

func TestWriteDataset(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		spec             DatasetSpec
		files, rowGroups int
		rows             int64
	}{
		{DatasetSpec{RowGroups: 8, PerFile: 4, Rows: 1000}, 2, 8, 1000},
		{DatasetSpec{RowGroups: 5, PerFile: 2, Rows: 997}, 3, 5, 997},
		{DatasetSpec{RowGroups: 1, PerFile: 4, Rows: 1}, 1, 1, 1},
	} {
		sub := filepath.Join(dir, filepath.Base(t.Name()), time.Now().Format("150405.000000000"))
		ds, err := WriteDataset(context.Background(), sub, tc.spec)
		if err != nil {
			t.Fatalf("%+v: %v", tc.spec, err)
		}
		if len(ds.Files) != tc.files || ds.Rows != tc.rows || ds.IDSum != tc.rows*(tc.rows-1)/2 {
			t.Errorf("%+v: %d files, %d rows, id sum %d; want %d files, %d rows", tc.spec, len(ds.Files), ds.Rows, ds.IDSum, tc.files, tc.rows)
		}
		store, err := origin.NewFileStore(origin.FileConfig{Root: sub})
		if err != nil {
			t.Fatal(err)
		}
		splits, err := parquetx.Plan(context.Background(), store, origin.URI{Scheme: "file", Path: sub + "/"}.String(), parquetx.PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var rows int64
		for _, s := range splits {
			rows += s.NumRows
		}
		if len(splits) != tc.rowGroups || rows != tc.rows {
			t.Errorf("%+v: planned %d splits of %d rows, want %d and %d", tc.spec, len(splits), rows, tc.rowGroups, tc.rows)
		}
	}
	for _, bad := range []DatasetSpec{{RowGroups: 10, Rows: 5}, {Rows: -1}, {PerFile: -2}} {
		if _, err := WriteDataset(context.Background(), dir, bad); !errors.Is(err, ErrInvalidDataset) {
			t.Errorf("WriteDataset(%+v) = %v, want ErrInvalidDataset", bad, err)
		}
	}
}

// TestClusterPasses: the cluster starts, the scheduler sees its nodes and
// their replication (2 by default, and 1), a cold pass then two warm
// passes read every row, and the warm passes hit: wherever in its list a
// DATA_LOCAL task runs, its node serves the split from its cache or fills
// it from the owner's. The scheduler's preference lists are the nodes'
// (checkRuns).
func TestClusterPasses(t *testing.T) {
	for _, repl := range []int{0, 1} {
		t.Run(fmt.Sprintf("replication=%d", repl), func(t *testing.T) { testClusterPasses(t, repl) })
	}
}

func testClusterPasses(t *testing.T, repl int) {
	ctx := context.Background()
	dir := t.TempDir()
	t0 := time.Now()
	c, err := Start(ctx, Config{Dir: dir, Replication: repl})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started in %v", time.Since(t0).Round(time.Millisecond))
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		t0 := time.Now()
		if err := c.Stop(sctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
		t.Logf("stopped in %v", time.Since(t0).Round(time.Millisecond))
	}()
	if repl == 0 {
		repl = DefaultReplication
	}
	ds, err := WriteDataset(context.Background(), filepath.Join(c.DataRoot, "lake", "events"), DatasetSpec{RowGroups: 12, Rows: 30_000})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := PlanDataset(ctx, c.Origin, c.URI("lake/events/"))
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Splits) != 12 || plan.Rows != ds.Rows {
		t.Fatalf("plan: %d splits, %d rows; want 12, %d", len(plan.Splits), plan.Rows, ds.Rows)
	}
	sc, err := client.NewScheduler(client.SchedulerConfig{URL: c.SchedulerURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close() // before Stop (deferred earlier)
	if rs, err := sc.Ring(ctx); err != nil || rs.Replication != repl {
		t.Errorf("scheduler ring: replication %d (%v), want the nodes' %d", rs.Replication, err, repl)
	}
	cl, err := client.New(client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	w := &Workload{Scheduler: sc, Client: cl, Plan: plan}
	for i, job := range []string{"cold", "warm", "warm-batch"} {
		w.Batch = job == "warm-batch"
		r, err := w.RunPass(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		jc := r.Counters
		t.Logf("%s: %d tasks in %d batches, %v: DATA_LOCAL %d RACK_LOCAL %d OTHER_LOCAL %d, hit ratio %.3f, bytes local %d peer %d origin %d",
			job, r.Tasks, r.Batches, r.Duration.Round(time.Millisecond), jc.DataLocalTasks, jc.RackLocalTasks, jc.OtherLocalTasks, jc.HitRatio, r.LocalBytes, r.PeerBytes, r.OriginBytes)
		if r.Rows != ds.Rows || r.IDSum != ds.IDSum {
			t.Errorf("%s: decoded %d rows (id sum %d), want %d (%d)", job, r.Rows, r.IDSum, ds.Rows, ds.IDSum)
		}
		if jc.DataLocalTasks+jc.RackLocalTasks+jc.OtherLocalTasks != 12 || jc.Completed != 12 || jc.Bytes != plan.Bytes || r.Bytes != plan.Bytes {
			t.Errorf("%s: counters %+v, client bytes %d; want 12 tasks completed, %d bytes", job, jc, r.Bytes, plan.Bytes)
		}
		if jc.DataLocalTasks == 0 {
			t.Errorf("%s: no DATA_LOCAL task: %+v", job, jc)
		}
		if i == 0 && jc.HitRatio > 0.25 || i > 0 && jc.HitRatio < 0.99 {
			t.Errorf("%s: hit ratio %.3f", job, jc.HitRatio)
		}
		if w.Batch != (r.Batches > 0) {
			t.Errorf("%s: %d batches with Batch %v", job, r.Batches, w.Batch)
		}
		if i > 0 && jc.HitRatioByLocality.DataLocal != 1 {
			t.Errorf("warm DATA_LOCAL tasks hit %.3f of their bytes, want 1", jc.HitRatioByLocality.DataLocal)
		}
		if i > 0 && r.OriginBytes != 0 {
			t.Errorf("%s: %d bytes from the origin in a warm pass", job, r.OriginBytes)
		}
		checkRuns(t, c, job, r)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "lake", "events", "part-00000.parquet")); err != nil {
		t.Error(err)
	}
}

// TestClusterManyPasses runs four passes at the default replication (2),
// alternating single and batch placement: however the passes spread the
// tasks over the lists, the origin serves each byte of the dataset once
// (a list's second node fills from its owner's cache, never the origin),
// every pass after the first hits, and the scheduler's lists are the
// nodes'.
func TestClusterManyPasses(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if err := c.Stop(sctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	ds, err := WriteDataset(context.Background(), filepath.Join(c.DataRoot, "lake", "events"), DatasetSpec{RowGroups: 12, Rows: 30_000})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := PlanDataset(ctx, c.Origin, c.URI("lake/events/"))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := client.NewScheduler(client.SchedulerConfig{URL: c.SchedulerURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if rs, err := sc.Ring(ctx); err != nil || rs.Replication != 2 {
		t.Fatalf("scheduler ring: replication %d (%v), want the nodes' 2", rs.Replication, err)
	}
	cl, err := client.New(client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	w := &Workload{Scheduler: sc, Client: cl, Plan: plan}
	var origin int64
	for i := range 4 {
		w.Batch = i%2 == 1
		job := fmt.Sprintf("pass-%d", i)
		r, err := w.RunPass(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		jc := r.Counters
		origin += r.OriginBytes
		t.Logf("%s: DATA_LOCAL %d RACK_LOCAL %d OTHER_LOCAL %d, hit ratio %.3f, bytes local %d peer %d origin %d",
			job, jc.DataLocalTasks, jc.RackLocalTasks, jc.OtherLocalTasks, jc.HitRatio, r.LocalBytes, r.PeerBytes, r.OriginBytes)
		if r.Rows != ds.Rows || r.IDSum != ds.IDSum || jc.Completed != 12 {
			t.Errorf("%s: decoded %d rows (id sum %d), %d tasks; want %d (%d), 12", job, r.Rows, r.IDSum, jc.Completed, ds.Rows, ds.IDSum)
		}
		if jc.DataLocalTasks == 0 {
			t.Errorf("%s: no DATA_LOCAL task: %+v", job, jc)
		}
		if i > 0 && (jc.HitRatio != 1 || r.OriginBytes != 0) {
			t.Errorf("%s: hit ratio %.3f, %d origin bytes; want every byte a hit", job, jc.HitRatio, r.OriginBytes)
		}
		checkRuns(t, c, job, r)
	}
	if origin > plan.Bytes {
		t.Errorf("the origin served %d bytes over 4 passes, more than the dataset's %d: a byte was fetched twice", origin, plan.Bytes)
	}
}

// checkRuns checks a pass's tasks against the nodes' ring: each split's
// owner is the first node of its placement block's list, a DATA_LOCAL task
// ran on a node of that list (the scheduler's lists are the nodes'), and
// the tasks that ran on their split's owner read through a peer at most
// the bytes of their splits outside that block (an owner's cache fills
// from the origin, never from a peer).
func checkRuns(t *testing.T, c *Cluster, job string, r PassResult) {
	t.Helper()
	if len(r.Runs) != r.Tasks {
		t.Errorf("%s: %d task runs listed, %d tasks", job, len(r.Runs), r.Tasks)
	}
	v := c.Nodes[0].View()
	bs := c.Config().BlockSize
	var ownerPeer, ownerOff int64
	for _, run := range r.Runs {
		s := run.Split
		key, err := ring.PlacementKey(s.URI, s.Offset, s.Length, bs)
		if err != nil {
			t.Fatal(err)
		}
		list := v.Ring.Owners(key, v.Replication())
		if run.Owner != list[0].ID {
			t.Errorf("%s: split %s [%d, +%d): the scheduler's owner %s, the nodes' %s", job, s.URI, s.Offset, s.Length, run.Owner, list[0].ID)
		}
		if run.Locality == "DATA_LOCAL" && !slices.ContainsFunc(list, func(n ring.Node) bool { return n.ID == run.Node }) {
			t.Errorf("%s: a DATA_LOCAL task ran on %s, outside its block's list %v", job, run.Node, list)
		}
		if run.Node == run.Owner {
			ownerPeer += run.Peer
			ownerOff += offBlock(s, bs)
		}
	}
	if ownerPeer > ownerOff {
		t.Errorf("%s: tasks on their split's owner read %d bytes through a peer, more than the %d bytes of their splits outside their placement blocks",
			job, ownerPeer, ownerOff)
	}
}

// offBlock returns the bytes of a split outside the block holding most of
// it (its placement block, ring.PlacementKey).
func offBlock(s parquetx.Split, bs int64) int64 {
	var most int64
	for b := s.Offset / bs; b*bs < s.Offset+s.Length; b++ {
		most = max(most, min(s.Offset+s.Length, (b+1)*bs)-max(s.Offset, b*bs))
	}
	return s.Length - most
}

func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	for _, bad := range []Config{
		{},
		{Dir: filepath.Join(dir, "missing")},
		{Dir: dir, Nodes: -1},
		{Dir: dir, BlockSize: 1 << 20, PageSize: 3 << 10},
		{Dir: dir, HTTPPortBase: 70000},
		{Dir: dir, Replication: -1},
		{Dir: dir, Replication: 9},
	} {
		if _, err := Start(context.Background(), bad); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Start(%+v) = %v, want ErrInvalidConfig", bad, err)
		}
	}
}

// TestPlanDatasetManyFiles: PlanDataset keeps the footer of every file
// it planned, however many files the dataset has (locusctl up --tasks
// allows 10,000 row groups, 2,500 files). It took them back from a
// FooterCache of the default bounds (1,024 footers), so a dataset of more
// files failed with "footer of ... missing from the plan's cache".
func TestPlanDatasetManyFiles(t *testing.T) {
	const files = parquetx.DefaultFooterCacheEntries + 6
	dir := t.TempDir()
	ds, err := WriteDataset(context.Background(), dir, DatasetSpec{RowGroups: files, PerFile: 1, Rows: files})
	if err != nil {
		t.Fatal(err)
	}
	store, err := origin.NewFileStore(origin.FileConfig{Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanDataset(context.Background(), store, origin.URI{Scheme: "file", Path: dir + "/"}.String())
	if err != nil {
		t.Fatalf("PlanDataset of %d files: %v", len(ds.Files), err)
	}
	if len(p.Splits) != files || len(p.Footers) != files || p.Rows != files {
		t.Fatalf("plan of %d files: %d splits, %d footers, %d rows; want %d of each", len(ds.Files), len(p.Splits), len(p.Footers), p.Rows, files)
	}
}
