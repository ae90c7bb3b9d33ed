package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/parquetx"
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
		ds, err := WriteDataset(sub, tc.spec)
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
		if _, err := WriteDataset(dir, bad); !errors.Is(err, ErrInvalidDataset) {
			t.Errorf("WriteDataset(%+v) = %v, want ErrInvalidDataset", bad, err)
		}
	}
}

// TestClusterPasses: the cluster starts, the scheduler sees its nodes and
// their replication (1 here by default), a cold pass then a warm pass read
// every row, and the warm pass hits. DATA_LOCAL tasks read through a peer
// only the bytes of their splits outside their placement block: the
// scheduler's preference lists are the nodes'.
func TestClusterPasses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t0 := time.Now()
	c, err := Start(ctx, Config{Dir: dir})
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
	ds, err := WriteDataset(filepath.Join(c.DataRoot, "lake", "events"), DatasetSpec{RowGroups: 12, Rows: 30_000})
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
	if rs, err := sc.Ring(ctx); err != nil || rs.Replication != DefaultReplication {
		t.Errorf("scheduler ring: replication %d (%v), want the nodes' %d", rs.Replication, err, DefaultReplication)
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
		if p, max := jc.ByLocality.DataLocal.PeerHitBytes, offBlockBytes(plan, c.Config().BlockSize); p > max {
			t.Errorf("%s: DATA_LOCAL tasks read %d bytes through a peer, more than the %d bytes of the splits outside their placement blocks: the scheduler's lists are not the nodes'", job, p, max)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "lake", "events", "part-00000.parquet")); err != nil {
		t.Error(err)
	}
}

// TestClusterReplicationTwo runs the cluster at the product's default
// replication (2): the scheduler places with the nodes' lists, so a
// DATA_LOCAL task reads its placement block from its node's own cache
// (peer bytes only outside that block), and a block is cached at most on
// the two nodes of its list, so however the passes spread the tasks over
// the lists, the origin serves at most twice the dataset. (A warm pass may still miss where a task runs on a list
// node for the first time; that is the cost of 2.)
func TestClusterReplicationTwo(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Config{Dir: t.TempDir(), Replication: 2})
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
	ds, err := WriteDataset(filepath.Join(c.DataRoot, "lake", "events"), DatasetSpec{RowGroups: 12, Rows: 30_000})
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
		if p, max := jc.ByLocality.DataLocal.PeerHitBytes, offBlockBytes(plan, c.Config().BlockSize); p > max {
			t.Errorf("%s: DATA_LOCAL tasks read %d bytes through a peer, more than the %d bytes of the splits outside their placement blocks: the scheduler's lists are not the nodes'", job, p, max)
		}
	}
	if origin > 2*plan.Bytes {
		t.Errorf("the origin served %d bytes over 4 passes, more than twice the dataset's %d: a block was cached off its list", origin, plan.Bytes)
	}
}

// offBlockBytes sums, over the plan's splits, the bytes outside the block
// holding most of the split (its placement key, ring.PlacementKey): the
// only bytes a task running on a node of its placement block's list may
// read through a peer.
func offBlockBytes(plan *Plan, bs int64) int64 {
	var n int64
	for _, s := range plan.Splits {
		var most int64
		for b := s.Offset / bs; b*bs < s.Offset+s.Length; b++ {
			most = max(most, min(s.Offset+s.Length, (b+1)*bs)-max(s.Offset, b*bs))
		}
		n += s.Length - most
	}
	return n
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
