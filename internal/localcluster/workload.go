package localcluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/parquetx"
)

// Plan is a dataset cut into splits, one per row group, with the footers
// the tasks decode their row groups with.
type Plan struct {
	Prefix  string
	Splits  []parquetx.Split
	Footers map[parquetx.FooterKey]*parquetx.Footer
	Rows    int64 // sum of the splits' NumRows
	Bytes   int64 // sum of the splits' lengths
}

// PlanDataset lists the Parquet objects under prefix in store and reads
// their footers (parquetx.Plan): one split per row group.
func PlanDataset(ctx context.Context, store origin.Store, prefix string) (*Plan, error) {
	// The plan keeps every footer it read (Footers), so the cache it takes
	// them back from must not drop any: default bounds (1,024 footers,
	// 64 MiB) lost those of a larger dataset.
	fc, err := parquetx.NewFooterCache(parquetx.FooterCacheConfig{MaxEntries: math.MaxInt, MaxBytes: math.MaxInt64})
	if err != nil {
		return nil, err
	}
	splits, err := parquetx.Plan(ctx, store, prefix, parquetx.PlanOptions{Cache: fc})
	if err != nil {
		return nil, fmt.Errorf("localcluster: planning %s: %w", prefix, err)
	}
	if len(splits) == 0 {
		return nil, fmt.Errorf("localcluster: no Parquet row groups under %s", prefix)
	}
	p := &Plan{Prefix: prefix, Splits: splits, Footers: make(map[parquetx.FooterKey]*parquetx.Footer)}
	for _, s := range splits {
		k := parquetx.FooterKey{URI: s.URI, Version: s.Version}
		f, ok := fc.Get(k)
		if !ok {
			return nil, fmt.Errorf("localcluster: footer of %s missing from the plan's cache", s.URI)
		}
		p.Footers[k] = f
		p.Rows += s.NumRows
		p.Bytes += s.Length
	}
	return p, nil
}

// Workload runs passes over a Plan the way an engine's executors would:
// ask the scheduler where each task runs, read the task's split through
// that node, decode its rows, and report the task complete with how its
// bytes were served.
type Workload struct {
	Scheduler *client.Scheduler
	Client    *client.Client
	Plan      *Plan
	// Wait is each task's locality wait (default 500ms; negative: no
	// wait): how long it may wait for a slot on its split's owner before
	// going rack-local.
	Wait time.Duration
	// Batch places each pass's tasks with PlaceBatch instead of one Place
	// per task. A batch returns only when every task is placed or no slot
	// is free, so the tasks it placed cannot run (and free their slots)
	// while the others wait for their owners: with more tasks per owner
	// than it has slots, the rest step down to other nodes when their
	// waits run out. One Place per task (the default) lets each task start
	// as soon as it is placed, as an engine's executors do.
	Batch bool
	// Concurrency bounds the tasks asking for a placement or running at
	// once without Batch (default: all of them; the scheduler queues
	// what the slots cannot take).
	Concurrency int
}

// PassResult is the outcome of one pass.
type PassResult struct {
	Job   string
	Tasks int
	// Counters are the scheduler's for the pass's job: tasks per locality
	// level, hit ratio overall and per level, bytes by source.
	Counters client.JobCounters
	// What the tasks read, by their own read summaries.
	Bytes, LocalBytes, PeerBytes, OriginBytes int64
	// Rows decoded and the sum of their id column.
	Rows, IDSum int64
	// Batches is the number of PlaceBatch calls with Workload.Batch (1
	// when every task fit in the cluster's free slots at once), else 0.
	Batches  int
	Duration time.Duration
	// Runs lists the tasks that were placed, in the order they finished.
	Runs []TaskRun
}

// TaskRun is one placed task of a pass: its split, where the scheduler
// ran it, and how its read summary says the split's bytes were served.
type TaskRun struct {
	Split parquetx.Split
	// Node ran the task; Owner is the first node of the split's
	// preference list; Locality is DATA_LOCAL, RACK_LOCAL or OTHER_LOCAL.
	Node, Owner, Locality string
	// Bytes of the split by source.
	Local, Peer, Origin int64
}

// taskResult is what one task reports.
type taskResult struct {
	rows, idSum                int64
	bytes, local, peer, origin int64
	run                        *TaskRun // nil when the task was not placed
	err                        error
}

// RunPass runs every split of the plan as a task of job and returns the
// pass's result, with the scheduler's counters for job. The first task
// error cancels the pass.
//
// By default each task is a goroutine that asks for its placement (Place,
// with the Workload's wait), reads, decodes and completes: the scheduler
// queues the tasks its slots cannot take and hands each a slot as one
// frees, on its owner while its wait lasts. With Batch, tasks are placed
// in batches (PlaceBatch); each placed task then runs in its own
// goroutine, and the tasks a batch deferred (no free slot left) are
// resubmitted as soon as a running task completes.
func (w *Workload) RunPass(ctx context.Context, job string) (PassResult, error) {
	wait := w.Wait
	switch {
	case wait == 0:
		wait = DefaultLocalityWait
	case wait < 0:
		wait = client.NoWait
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	var res PassResult
	var err error
	if w.Batch {
		res, err = w.runBatches(ctx, cancel, job, wait)
	} else {
		res, err = w.runSingles(ctx, cancel, job, wait)
	}
	res.Job, res.Tasks, res.Duration = job, len(w.Plan.Splits), time.Since(start)
	if err != nil {
		return res, err
	}
	c, err := w.Scheduler.JobCounters(ctx, job)
	if err != nil {
		return res, fmt.Errorf("counters of %s: %w", job, err)
	}
	res.Counters = c
	return res, nil
}

func taskID(i int) string { return fmt.Sprintf("t%04d", i) }

// add adds a task's result to r and returns the task's error.
func (r *PassResult) add(t taskResult) error {
	r.Rows += t.rows
	r.IDSum += t.idSum
	r.Bytes += t.bytes
	r.LocalBytes += t.local
	r.PeerBytes += t.peer
	r.OriginBytes += t.origin
	if t.run != nil {
		r.Runs = append(r.Runs, *t.run)
	}
	return t.err
}

// runSingles runs one goroutine per task: Place, read, complete.
func (w *Workload) runSingles(ctx context.Context, cancel context.CancelFunc, job string, wait time.Duration) (PassResult, error) {
	n := len(w.Plan.Splits)
	limit := w.Concurrency
	if limit <= 0 || limit > n {
		limit = n
	}
	sem := make(chan struct{}, limit)
	done := make(chan taskResult, n)
	var wg sync.WaitGroup
	for i, s := range w.Plan.Splits {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				done <- taskResult{err: ctx.Err()}
				return
			}
			defer func() { <-sem }()
			p, err := w.Scheduler.Place(ctx, job, taskID(i), client.Split{URI: s.URI, Offset: s.Offset, Length: s.Length}, wait)
			if err != nil {
				done <- taskResult{err: fmt.Errorf("placing task %s of %s: %w", taskID(i), job, err)}
				return
			}
			done <- w.runTask(ctx, job, p, s)
		})
	}
	var res PassResult
	var firstErr error
	for range n {
		if err := res.add(<-done); err != nil && firstErr == nil {
			firstErr = err
			cancel()
		}
	}
	wg.Wait()
	return res, firstErr
}

// runBatches places the tasks with PlaceBatch, resubmitting the deferred
// ones as running tasks complete.
func (w *Workload) runBatches(ctx context.Context, cancel context.CancelFunc, job string, wait time.Duration) (PassResult, error) {
	var res PassResult
	pending := make([]client.BatchTask, len(w.Plan.Splits))
	index := make(map[string]int, len(pending))
	for i, s := range w.Plan.Splits {
		pending[i] = client.BatchTask{Task: taskID(i), Split: client.Split{URI: s.URI, Offset: s.Offset, Length: s.Length}}
		index[pending[i].Task] = i
	}
	done := make(chan taskResult, len(pending))
	running := 0
	var wg sync.WaitGroup
	defer wg.Wait()
	var firstErr error
	collect := func(r taskResult) {
		running--
		if err := res.add(r); err != nil && firstErr == nil {
			firstErr = err
			cancel()
		}
	}
	for len(pending) > 0 && firstErr == nil {
		ps, err := w.Scheduler.PlaceBatch(ctx, job, pending, wait)
		res.Batches++
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("placing %d tasks of %s: %w", len(pending), job, err)
			}
			break
		}
		var deferred []client.BatchTask
		for i, p := range ps {
			if !p.Placed() {
				deferred = append(deferred, pending[i])
				continue
			}
			split := w.Plan.Splits[index[p.Task]]
			running++
			wg.Go(func() { done <- w.runTask(ctx, job, p, split) })
		}
		pending = deferred
		if len(pending) > 0 {
			if running == 0 {
				firstErr = fmt.Errorf("%s: the scheduler deferred %d tasks while none of ours runs: the cluster has no free slot", job, len(pending))
				break
			}
			collect(<-done) // a slot is free: resubmit
		}
	}
	for running > 0 {
		collect(<-done)
	}
	return res, firstErr
}

// runTask reads one split through the placed node, decodes its row group
// and completes the task (also when the read failed, so its slot is freed).
func (w *Workload) runTask(ctx context.Context, job string, p client.Placement, s parquetx.Split) taskResult {
	start := time.Now()
	buf := &fixedBuffer{b: make([]byte, 0, s.Length)}
	sum, err := w.Client.ReadSplit(ctx, p.Address, client.Split{URI: s.URI, Offset: s.Offset, Length: s.Length}, buf)
	r := taskResult{bytes: sum.Bytes, local: sum.LocalHitBytes, peer: sum.PeerHitBytes, origin: sum.OriginBytes}
	r.run = &TaskRun{Split: s, Node: p.Node, Owner: p.Owner, Locality: p.Locality,
		Local: sum.LocalHitBytes, Peer: sum.PeerHitBytes, Origin: sum.OriginBytes}
	if err != nil {
		r.err = fmt.Errorf("task %s: reading %s [%d, +%d) through %s (%s): %w", p.Task, s.URI, s.Offset, s.Length, p.Node, p.Address, err)
	} else if int64(len(buf.b)) != s.Length {
		r.err = fmt.Errorf("task %s: read %d bytes of %s [%d, +%d), want %d", p.Task, len(buf.b), s.URI, s.Offset, s.Length, s.Length)
	} else {
		footer := w.Plan.Footers[parquetx.FooterKey{URI: s.URI, Version: s.Version}]
		r.rows, r.idSum, r.err = decodeRowGroup(ctx, footer, s, buf.b)
		if r.err == nil && r.rows != s.NumRows {
			r.err = fmt.Errorf("task %s: decoded %d rows from row group %d of %s, the footer says %d", p.Task, r.rows, s.RowGroup, s.URI, s.NumRows)
		}
		if r.err != nil {
			r.err = fmt.Errorf("task %s: %w", p.Task, r.err)
		}
	}
	// Complete even after a failure: the task's slot must be freed.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := w.Scheduler.Complete(cctx, job, p.Task, client.InfoFromSummary(sum, time.Since(start))); err != nil && r.err == nil {
		r.err = fmt.Errorf("task %s: completing: %w", p.Task, err)
	}
	return r
}

// fixedBuffer collects a split's bytes into a preallocated slice.
type fixedBuffer struct{ b []byte }

func (f *fixedBuffer) Write(p []byte) (int, error) {
	if len(f.b)+len(p) > cap(f.b) {
		return 0, errors.New("more bytes than the split's length")
	}
	f.b = append(f.b, p...)
	return len(p), nil
}

// splitReaderAt serves the bytes of one split, [off, off+len(data)), of an
// object of the given size, and nothing else: decoding a row group must
// need only its own bytes (the footer comes parsed from the plan).
type splitReaderAt struct {
	off  int64
	data []byte
}

func (r *splitReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < r.off || off+int64(len(p)) > r.off+int64(len(r.data)) {
		return 0, fmt.Errorf("read [%d, +%d) outside the split [%d, +%d)", off, len(p), r.off, len(r.data))
	}
	return copy(p, r.data[off-r.off:]), nil
}

// decodeRowGroup decodes row group s.RowGroup from the split's bytes with
// arrow-go and returns its row count and the sum of its id column.
func decodeRowGroup(ctx context.Context, footer *parquetx.Footer, s parquetx.Split, data []byte) (rows, idSum int64, err error) {
	if footer == nil {
		return 0, 0, fmt.Errorf("no footer for %s", s.URI)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("arrow-go panicked decoding row group %d of %s: %v", s.RowGroup, s.URI, p)
		}
	}()
	pf, err := parquetx.OpenFile(&splitReaderAt{off: s.Offset, data: data}, footer.Size, footer, nil)
	if err != nil {
		return 0, 0, err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		return 0, 0, err
	}
	cols := make([]int, len(fr.Manifest.Fields)) // every column: nil would read none
	for i := range cols {
		cols[i] = i
	}
	tbl, err := fr.ReadRowGroups(ctx, cols, []int{s.RowGroup})
	if err != nil {
		return 0, 0, fmt.Errorf("decoding row group %d of %s: %w", s.RowGroup, s.URI, err)
	}
	defer tbl.Release()
	if tbl.NumCols() == 0 {
		return 0, 0, fmt.Errorf("%s has no columns", s.URI)
	}
	ids := tbl.Column(0)
	if ids.Name() != "id" || ids.DataType().ID() != arrow.INT64 {
		return 0, 0, fmt.Errorf("%s: first column is %q, want id", s.URI, ids.Name())
	}
	for _, chunk := range ids.Data().Chunks() {
		for _, v := range chunk.(*array.Int64).Int64Values() {
			idSum += v
		}
	}
	return tbl.NumRows(), idSum, nil
}
