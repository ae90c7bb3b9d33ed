package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/locuscache/locus/internal/localcluster"
	"github.com/locuscache/locus/internal/units"
	"github.com/locuscache/locus/pkg/client"
	"golang.org/x/sys/unix"
)

const upUsage = `Usage: locusctl up [--dir DIR] [--keep] [--passes N] [--tasks N] [--rows N]
                   [--block-size SIZE] [--slots N] [--wait D] [--http-port-base PORT]
                   [--batch] [--no-wait] [--verbose]

Runs a whole Locus cluster in this process, on 127.0.0.1, with no external
service, and a short workload over it:

  1. an embedded origin: a file:// root in DIR/data;
  2. 3 cache nodes (node1 and node2 on rack r1, node3 on r2: real gossip,
     gRPC, HTTP with /metrics and the S3 gateway, RAM caches) and the
     scheduler, observing their gossip;
  3. a small Parquet dataset, written with arrow-go to DIR/data/lake/events/
     (--tasks row groups, 4 per file, --rows rows in all);
  4. --passes passes over it: each pass is one job ("pass-1", ...) whose
     tasks, one per row group, ask the scheduler for a placement (with a
     --wait locality wait), read their split through the placed node,
     decode its rows with arrow-go, and complete with the bytes by source.
     One line per pass: tasks, DATA_LOCAL / RACK_LOCAL / OTHER_LOCAL, the
     hit ratio overall and by locality, bytes local/peer/origin, time. The
     first pass is cold (hit ratio near 0), the next ones warm.

Then it prints the endpoints and example calls and keeps running until
Ctrl-C (SIGINT or SIGTERM): the nodes drain, the scheduler and the nodes
stop, DIR is removed (unless --keep or --dir), and it exits 0. With
--no-wait it stops right after the workload (CI runs it that way), and
says the endpoints it printed stop with it. It exits 1 if a pass fails or reads a different
number of rows than were written; Ctrl-C before the cluster serves stops
it, says "interrupted" and exits 130, and a second Ctrl-C ends the
process at once.

Flags:
  --dir DIR             working directory (default: a new temporary one,
                        removed at exit unless --keep); a DIR you give is
                        kept, and DIR/data/lake/events/ is rewritten;
                        one up at a time per DIR (a second one fails)
  --keep                keep the temporary directory
  --passes N            passes over the dataset (default 3)
  --tasks N             tasks per pass = row groups in the dataset (default 24)
  --rows N              rows in the dataset (default 100000, about 7 MB)
  --block-size SIZE     cluster block size, the same on nodes and scheduler
                        (default 512KiB, so the dataset spreads over the nodes)
  --slots N             executor slots per node (default 4)
  --wait D              each task's locality wait (default 500ms; 0: none)
  --batch               place each pass with one PlaceBatch call (and
                        resubmit what it deferred) instead of one Place per
                        task: the batch's tasks run only once it returns, so
                        tasks queued behind a busy owner step down to other
                        nodes when their wait runs out (fewer DATA_LOCAL)
  --http-port-base PORT scheduler API on PORT, node i's HTTP on PORT+i
                        (default 0: free ports; gRPC and gossip ports are
                        always free ones)
  --no-wait             exit after the workload instead of waiting for Ctrl-C
  --verbose             log the nodes and the scheduler (info level) on stderr
`

// upOptions are the parsed flags of locusctl up.
type upOptions struct {
	dir          string
	keep         bool
	passes       int
	tasks        int
	rows         int64
	blockSize    int64
	slots        int
	wait         time.Duration
	httpPortBase int
	batch        bool
	noWait       bool
	verbose      bool
}

var runUp = withSignals(upMain)

func parseUp(args []string, stdout io.Writer) (upOptions, error) {
	o := upOptions{passes: 3, tasks: localcluster.DefaultRowGroups, rows: localcluster.DefaultRows,
		blockSize: localcluster.DefaultBlockSize, slots: localcluster.DefaultSlots, wait: localcluster.DefaultLocalityWait}
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	fs.StringVar(&o.dir, "dir", "", "")
	fs.BoolVar(&o.keep, "keep", false, "")
	fs.IntVar(&o.passes, "passes", o.passes, "")
	fs.IntVar(&o.tasks, "tasks", o.tasks, "")
	fs.Int64Var(&o.rows, "rows", o.rows, "")
	fs.Var(units.Flag(&o.blockSize), "block-size", "")
	fs.IntVar(&o.slots, "slots", o.slots, "")
	fs.DurationVar(&o.wait, "wait", o.wait, "")
	fs.IntVar(&o.httpPortBase, "http-port-base", 0, "")
	fs.BoolVar(&o.batch, "batch", false, "")
	fs.BoolVar(&o.noWait, "no-wait", false, "")
	fs.BoolVar(&o.verbose, "verbose", false, "")
	if err := parseHelp(fs, upUsage, stdout, func() error { return fs.Parse(args) }); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, usageErrorf("unexpected argument %q (see --help)", fs.Arg(0))
	case o.passes < 1 || o.passes > 1000:
		return o, usageErrorf("--passes must be 1 to 1000, got %d", o.passes)
	case o.tasks < 1 || o.tasks > 10000:
		return o, usageErrorf("--tasks must be 1 to 10000, got %d", o.tasks)
	case o.rows < int64(o.tasks) || o.rows > 100_000_000:
		return o, usageErrorf("--rows must be at least --tasks (%d) and at most 100000000, got %d", o.tasks, o.rows)
	case o.blockSize < localcluster.DefaultPageSize || o.blockSize%localcluster.DefaultPageSize != 0:
		return o, usageErrorf("--block-size must be a multiple of %s, got %s", units.FormatBytes(localcluster.DefaultPageSize), units.FormatBytes(o.blockSize))
	case o.slots < 1 || o.slots > 1024:
		return o, usageErrorf("--slots must be 1 to 1024, got %d", o.slots)
	case o.wait < 0:
		return o, usageErrorf("--wait must not be negative, got %v", o.wait)
	case o.httpPortBase < 0 || o.httpPortBase > 65535-localcluster.DefaultNodes:
		return o, usageErrorf("--http-port-base must be 0 (free ports) or a port up to %d, got %d", 65535-localcluster.DefaultNodes, o.httpPortBase)
	}
	return o, nil
}

// errUpDirBusy: another locusctl up is running in the --dir given.
var errUpDirBusy = errors.New("another locusctl up is running in this directory")

// upLockName is the lock file locusctl up holds in its directory while it
// runs: a second up in the same --dir would rewrite the first one's
// dataset under its running cluster.
const upLockName = ".locusctl-up.lock"

// lockUpDir takes dir's lock file (an exclusive flock, released when the
// process ends however it ends) and writes this process's pid in it; it
// fails with errUpDirBusy, naming the holder's pid, when another process
// holds it. unlock releases it.
func lockUpDir(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, upLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot create the lock file of %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			who := "another process"
			if pid := strings.TrimSpace(string(holder)); pid != "" {
				who = "pid " + pid
			}
			return nil, fmt.Errorf("%w: %s (%s holds %s): stop it first, or give another --dir", errUpDirBusy, dir, who, upLockName)
		}
		return nil, fmt.Errorf("cannot lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}

// upMain runs locusctl up until the workload is done (--no-wait) or ctx
// ends (a signal).
func upMain(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	o, err := parseUp(args, stdout)
	if err != nil {
		return err
	}
	t0 := time.Now()
	dir, removeDir := o.dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "locus-up-"); err != nil {
			return err
		}
		removeDir = !o.keep
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	unlock, err := lockUpDir(dir)
	if err != nil {
		if removeDir {
			os.RemoveAll(dir)
		}
		return err
	}
	defer unlock() // after the directory is removed: no other up takes it before
	defer func() {
		if removeDir {
			if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
				err = fmt.Errorf("removing %s: %w", dir, rerr)
			}
		} else {
			fmt.Fprintf(stdout, "Kept %s\n", dir)
		}
	}()

	logger := slog.New(slog.DiscardHandler)
	if o.verbose {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	// localcluster reads a zero wait as its default: "none" is negative.
	wait := o.wait
	if wait == 0 {
		wait = -1
	}
	fmt.Fprintf(stdout, "Starting a local Locus cluster in %s\n", dir)
	c, err := localcluster.Start(ctx, localcluster.Config{
		Dir: dir, BlockSize: o.blockSize, Slots: o.slots, LocalityWait: wait,
		HTTPPortBase: o.httpPortBase, Logger: logger, Progress: stdout,
	})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(stdout, "Stopping: draining the nodes, stopping the scheduler and the nodes")
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if serr := c.Stop(sctx); serr != nil && err == nil {
			err = fmt.Errorf("stopping the cluster: %w", serr)
		}
	}()

	dataDir := filepath.Join(c.DataRoot, localcluster.GatewayBucket, "events")
	if err := os.RemoveAll(dataDir); err != nil {
		return err
	}
	ds, err := localcluster.WriteDataset(ctx, dataDir, localcluster.DatasetSpec{RowGroups: o.tasks, Rows: o.rows})
	if err != nil {
		return err
	}
	prefix := c.URI(localcluster.GatewayBucket + "/events/")
	plan, err := localcluster.PlanDataset(ctx, c.Origin, prefix)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "  dataset         %s: %d files, %d rows, %s; %d splits (one per row group), block size %s\n",
		prefix, len(ds.Files), ds.Rows, units.HumanBytes(ds.Bytes), len(plan.Splits), units.FormatBytes(o.blockSize))
	fmt.Fprintf(stdout, "Ready in %v.\n\n", time.Since(t0).Round(time.Millisecond))

	sc, err := client.NewScheduler(client.SchedulerConfig{URL: c.SchedulerURL()})
	if err != nil {
		return err
	}
	defer sc.Close()
	cl, err := client.New(client.Config{})
	if err != nil {
		return err
	}
	defer cl.Close()
	w := &localcluster.Workload{Scheduler: sc, Client: cl, Plan: plan, Wait: wait, Batch: o.batch}

	how := "one Place per task"
	if o.batch {
		how = "PlaceBatch"
	}
	fmt.Fprintf(stdout, "Workload: %d passes of %d tasks (%s, locality wait %v); hit ratio = (local + peer hit bytes) / bytes\n", o.passes, len(plan.Splits), how, o.wait)
	const row = "%4s %5s %10s %10s %11s %9s %15s %10s %10s %10s %8s %7s\n"
	fmt.Fprintf(stdout, row, "pass", "tasks", "DATA_LOCAL", "RACK_LOCAL", "OTHER_LOCAL", "hit ratio", "data/rack/other", "local", "peer", "origin", "rows", "time")
	var failed []string
	for i := 1; i <= o.passes; i++ {
		job := fmt.Sprintf("pass-%d", i)
		r, err := w.RunPass(ctx, job)
		if err != nil {
			return fmt.Errorf("%s: %w", job, err)
		}
		jc := r.Counters
		h := jc.HitRatioByLocality
		level := func(tasks int64, ratio float64) string {
			if tasks == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", ratio)
		}
		fmt.Fprintf(stdout, row, strconv.Itoa(i), strconv.Itoa(r.Tasks),
			strconv.FormatInt(jc.DataLocalTasks, 10), strconv.FormatInt(jc.RackLocalTasks, 10), strconv.FormatInt(jc.OtherLocalTasks, 10),
			fmt.Sprintf("%.3f", jc.HitRatio),
			level(jc.DataLocalTasks, h.DataLocal)+"/"+level(jc.RackLocalTasks, h.RackLocal)+"/"+level(jc.OtherLocalTasks, h.OtherLocal),
			units.HumanBytes(jc.LocalHitBytes), units.HumanBytes(jc.PeerHitBytes), units.HumanBytes(jc.MissBytes),
			strconv.FormatInt(r.Rows, 10), r.Duration.Round(time.Millisecond).String())
		if r.Rows != ds.Rows || r.IDSum != ds.IDSum {
			failed = append(failed, fmt.Sprintf("%s read %d rows (id sum %d), %d were written (id sum %d)", job, r.Rows, r.IDSum, ds.Rows, ds.IDSum))
		}
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	fmt.Fprintf(stdout, "Every pass read all %d rows.\n\n", ds.Rows)

	printEndpoints(stdout, c, plan, o)
	if o.noWait {
		fmt.Fprintln(stdout, "\n(--no-wait: the cluster stops now, so these endpoints stop answering; run without --no-wait to keep it up.)")
		return nil
	}
	fmt.Fprintln(stdout, "\nRunning. Press Ctrl-C to stop.")
	<-ctx.Done()
	fmt.Fprintln(stdout)
	return nil
}

// printEndpoints prints the cluster's addresses and calls to try.
func printEndpoints(w io.Writer, c *localcluster.Cluster, plan *localcluster.Plan, o upOptions) {
	sched := c.SchedulerURL()
	fmt.Fprintln(w, "Endpoints:")
	fmt.Fprintf(w, "  %-11s status page and JSON API %s/   gRPC %s   metrics %s/metrics\n", "scheduler", sched, c.Scheduler.GRPCAddr(), sched)
	for _, n := range c.Nodes {
		fmt.Fprintf(w, "  %-11s HTTP http://%s (S3 gateway bucket %q, /metrics)   gRPC %s\n",
			n.ID()+" ("+n.Rack()+")", n.HTTPAddr(), localcluster.GatewayBucket, n.GRPCAddr())
	}
	s := plan.Splits[0]
	rel := strings.TrimPrefix(s.URI, c.URI(localcluster.GatewayBucket+"/"))
	fmt.Fprintf(w, `
Try:
  curl -s %[1]s/v1/ring
  curl -s %[1]s/v1/jobs/pass-%[2]d
  curl -s -X POST %[1]s/v1/place -d '{"job":"demo","task":"t1","split":{"uri":"%[3]s","offset":%[4]d,"length":%[5]d},"wait_ms":500}'
  curl -s -X POST %[1]s/v1/complete -d '{"job":"demo","task":"t1","local_hit_bytes":%[5]d,"duration_ms":3}'
  curl -s -r %[4]d-%[6]d http://%[7]s/%[8]s/%[9]s | wc -c     # a row group through node1's S3 gateway
  curl -s http://%[7]s/metrics | grep '^locus_cache_bytes_read_total'
  go run ./cmd/locusctl plan %[10]s --scheduler %[1]s
  go run ./cmd/locusctl sizing --scheduler %[1]s     # each node's hit ratio at 0.25x-4x its cache
`, sched, o.passes, s.URI, s.Offset, s.Length, s.Offset+s.Length-1, c.Nodes[0].HTTPAddr(), localcluster.GatewayBucket, rel, plan.Prefix)
}
