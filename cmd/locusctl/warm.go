package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/locuscache/locus/internal/units"
	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/parquetx"
	"github.com/locuscache/locus/pkg/readpath"
	"github.com/locuscache/locus/pkg/ring"
)

const warmUsage = `Usage: locusctl warm PREFIX (--scheduler URL [--all-replicas] | --node HOST:PORT)
                     [--columns a,b] [--concurrency N] [--dry-run] [--json]
                     [--job J] [--wait D] [--sniff] [--timeout D]
                     [--origin-s3-endpoint URL] [--origin-s3-region R] [--origin-s3-path-style]
                     [--origin-file-root DIR] [--token-file F] [--tls-ca F --tls-cert F --tls-key F]

Loads a dataset into the cluster's cache before the queries that need it,
so their first run hits. PREFIX is an s3://bucket/prefix/ or file:///dir/
(or one object).

How it works:
  1. Plan, as 'locusctl plan' and a query engine's planner do: list the
     Parquet objects under PREFIX on the origin (from this machine, with
     the origin flags below and the standard AWS credential chain) and
     read each footer; every row group is one split. With --columns, a
     split reads only those columns' chunks (parquetx.ChunkRanges), not
     the whole row group.
  2. Read every split through the cluster, --concurrency at a time, and
     throw the bytes away. A page lives on the owner of its block, so the
     owners' caches fill:
       --scheduler URL  each split is a task of job "warm-<time>" (or --job):
                        placed (POST /v1/place, with the locality wait),
                        read through the node it was placed on, and
                        completed with its bytes by source, exactly as a
                        real workload runs. Its counters show in
                        'locusctl jobs'.
       --node HOST:PORT every split is read through this one node, which
                        serves the pages it owns and forwards the others to
                        their owners as peer reads, so the owners fill. No
                        scheduler is involved.
       --scheduler URL --all-replicas
                        no tasks: the ring is rebuilt from the scheduler's
                        /v1/ring (as 'locusctl plan' does) and every block
                        of every split is read through EACH node of its
                        preference list, so every replica fills (see
                        Replication below).
  3. Print progress on stderr (objects, splits, bytes, rate) about every
     second, and a summary on stdout: the bytes fetched from the origin
     (now cached) and those already cached (local and peer hits), from
     the nodes' read summaries. Warming a warm dataset again
     reads no byte from the origin. Bytes whose owner was unavailable are
     read from the origin by the node directly and are NOT cached; the
     summary lists them apart.

Only the row groups' (or chunks') bytes are warmed, not the footers: the
nodes keep footers in memory on their first Stat.

Replication: when the cluster's replication R (the cache nodes'
--replication, which warm reads from the cluster) is above 1, a block's
preference list has R nodes, and a task placed on any of them is DATA_LOCAL and reads the block
from that node's own cache; a miss there fills from the nodes before it in
the list (owner first), which fetch from the origin on their own miss, so
the origin serves each byte once. --scheduler and --node fill the node each
split was read through (the one the task ran on, or --node itself when it
is in the list, else the list's first reachable node) and the nodes before
it in the list. A later task placed on a node of the list the warm did not
fill fills it from them: a peer hit, not an origin read. --all-replicas
fills all R caches, reading each byte R times (from the origin once).

Exits 1 if some splits could not be warmed (each is named on stderr, up to
10), if a footer could not be read (the file is skipped with a warning),
if PREFIX holds no Parquet object, or if the scheduler or --node cannot be
reached; 2 for bad flags.

Flags:
  --scheduler URL      place each split through this scheduler (http://host:port)
  --node HOST:PORT     or read every split through this cache node's --grpc-addr
                       (exactly one of the two)
  --all-replicas       with --scheduler: read every block through each node of
                       its preference list instead of placing tasks (the
                       ring is read as 'locusctl plan --scheduler' reads it:
                       plain http, or https verified by the system roots)
  --columns a,b        warm only these columns' chunks (dotted leaf paths;
                       a struct or list name selects its leaves). A file
                       without one of them is skipped with a warning.
  --concurrency N      splits in flight (default 8; at most 256)
  --dry-run            plan only: print the splits and ranges that would be
                       read (table, or JSON summary with --json), read nothing
  --json               print the summary as one JSON object
  --job J              job name for --scheduler (default warm-<UTC time>)
  --wait D             each task's locality wait with --scheduler (default:
                       the scheduler's --locality-wait; 0: none)
  --sniff              also take objects without a .parquet name whose bytes
                       start and end with the Parquet magic (Hive's 000000_0)
  --timeout D          bound on the whole command (default: none; Ctrl-C stops)
  --token-file F       bearer token for the scheduler (its --auth-token-file)
  --tls-ca F, --tls-cert F, --tls-key F
                       TLS (and mTLS) towards the nodes and an https scheduler
Origin flags, used for listing and footers only (the cache node's names):
  --origin-s3-endpoint URL   S3-compatible endpoint (default: AWS)
  --origin-s3-region R       region (default: the AWS configuration's, else us-east-1)
  --origin-s3-path-style     path-style bucket addressing
  --origin-file-root DIR     the directory file:// URIs may name (default:
                             PREFIX's own directory)

` + envHelp + `
Examples:
  locusctl warm s3://lake/events/dt=2024-06-01/ --scheduler http://127.0.0.1:8080
  locusctl warm s3://lake/events/ --node 127.0.0.1:7070 --columns user_id,ts --concurrency 16 \
      --origin-s3-endpoint http://minio:9000 --origin-s3-path-style
  locusctl warm file:///data/lake/events/ --scheduler http://127.0.0.1:8080 --dry-run
`

// warmProgressEvery is how often warm reports progress on stderr.
var warmProgressEvery = time.Second

// warmMaxWarnings bounds the per-split warnings printed.
const warmMaxWarnings = 10

// warmOptions are the parsed flags of locusctl warm.
type warmOptions struct {
	prefix      string
	sched       schedulerFlags
	allReplicas bool
	node        string
	tls         tlsFlags
	columns     []string
	concurrency int
	dryRun      bool
	asJSON      bool
	job         string
	wait        time.Duration
	sniff       bool
	timeout     time.Duration
	origin      planOptions // the origin flags, for planOrigin
}

func parseWarm(args []string, stdout io.Writer) (warmOptions, error) {
	var o warmOptions
	var columns string
	fs := flag.NewFlagSet("warm", flag.ContinueOnError)
	o.sched.registerURL(fs)
	fs.StringVar(&o.node, "node", "", "")
	fs.BoolVar(&o.allReplicas, "all-replicas", false, "")
	o.tls.register(fs)
	fs.StringVar(&columns, "columns", "", "")
	fs.IntVar(&o.concurrency, "concurrency", 8, "")
	fs.BoolVar(&o.dryRun, "dry-run", false, "")
	fs.BoolVar(&o.asJSON, "json", false, "")
	fs.StringVar(&o.job, "job", "", "")
	fs.DurationVar(&o.wait, "wait", 0, "")
	fs.BoolVar(&o.sniff, "sniff", false, "")
	fs.DurationVar(&o.timeout, "timeout", 0, "")
	fs.StringVar(&o.origin.s3Endpoint, "origin-s3-endpoint", "", "")
	fs.StringVar(&o.origin.s3Region, "origin-s3-region", "", "")
	fs.BoolVar(&o.origin.s3PathStyle, "origin-s3-path-style", false, "")
	fs.StringVar(&o.origin.fileRoot, "origin-file-root", "", "")
	rest, given, err := parseFlagsGiven(fs, args, warmUsage, stdout)
	if err != nil {
		return o, err
	}
	// The mode given on the command line wins over the other mode's
	// environment (LOCUS_SCHEDULER, LOCUS_JOB and LOCUS_WAIT exported for
	// place, LOCUS_NODE for stat).
	switch {
	case given["node"] && !given["scheduler"]:
		o.sched.url = ""
		if !given["job"] {
			o.job = ""
		}
		if !given["wait"] {
			o.wait = 0
		}
	case given["scheduler"] && !given["node"]:
		o.node = ""
	}
	for _, c := range strings.Split(columns, ",") {
		if c = strings.TrimSpace(c); c != "" {
			o.columns = append(o.columns, c)
		}
	}
	switch {
	case len(rest) == 0:
		return o, usageErrorf("missing PREFIX: locusctl warm s3://bucket/prefix/ --scheduler URL (see --help)")
	case len(rest) > 1:
		return o, usageErrorf("one PREFIX at a time, got %q", rest)
	case o.sched.url == "" && o.node == "":
		return o, usageErrorf("give --scheduler URL (place each split as a task) or --node HOST:PORT (read every split through that node)")
	case o.sched.url != "" && o.node != "":
		return o, usageErrorf("give --scheduler or --node, not both: with --scheduler each split is read through the node it is placed on")
	case flagSet(fs, "columns") && len(o.columns) == 0:
		return o, usageErrorf("--columns is empty; name columns, e.g. --columns user_id,ts")
	case o.concurrency < 1 || o.concurrency > 256:
		return o, usageErrorf("--concurrency must be 1 to 256, got %d", o.concurrency)
	case o.wait < 0:
		return o, usageErrorf("--wait must not be negative, got %v (0 means no wait)", o.wait)
	case o.timeout < 0:
		return o, usageErrorf("--timeout must not be negative, got %v", o.timeout)
	case o.sched.url == "" && (given["wait"] || given["job"]):
		return o, usageErrorf("--job and --wait need --scheduler")
	case o.allReplicas && o.sched.url == "":
		return o, usageErrorf("--all-replicas needs --scheduler (the ring and the nodes' addresses come from it)")
	case o.allReplicas && (given["wait"] || given["job"]):
		return o, usageErrorf("--all-replicas places no task: --job and --wait do not apply")
	}
	if _, err := o.tls.config(); err != nil {
		return o, err
	}
	if o.node != "" {
		if err := checkNodeAddr(o.node); err != nil {
			return o, err
		}
	}
	if o.sched.url != "" {
		if err := o.sched.check(true); err != nil {
			return o, err
		}
	}
	u, err := origin.ParseURI(rest[0])
	if err != nil {
		return o, usageErrorf("%v", err)
	}
	o.prefix = u.String()
	o.origin.uri = o.prefix
	if !flagSet(fs, "wait") {
		o.wait = client.DefaultWait
	} else if o.wait == 0 {
		o.wait = client.NoWait
	}
	if o.job == "" {
		o.job = "warm-" + time.Now().UTC().Format("20060102-150405.000")
	}
	return o, nil
}

// runWarm is "locusctl warm".
var runWarm = withSignals(warmMain)

// warmItem is one split to warm: a row group and the ranges of it to read
// (the whole row group, or the chosen column chunks).
type warmItem struct {
	file   int // index into the plan's files
	split  parquetx.Split
	ranges []parquetx.Range
	bytes  int64 // bytes to read: the ranges' lengths, or the reads' with --all-replicas
	// reads, with --all-replicas, are the ranges cut at block boundaries,
	// each once per node of its block's preference list.
	reads []warmRead
}

// warmRead is one read of --all-replicas: a piece of one block, through
// one node of its preference list.
type warmRead struct {
	node, addr     string
	offset, length int64
}

// warmPlan is what warm will read.
type warmPlan struct {
	files   []origin.Info
	items   []warmItem
	bytes   int64
	skipped int // files without a readable footer or without the columns
	empty   int // files with nothing to read (no rows): warmed as they are
}

// warmSummary is the outcome; it is also the --json object.
type warmSummary struct {
	Prefix  string   `json:"prefix"`
	Mode    string   `json:"mode"` // "scheduler" or "node"
	Via     string   `json:"via"`  // the scheduler's URL or the node's address
	Job     string   `json:"job,omitempty"`
	Columns []string `json:"columns,omitempty"`
	DryRun  bool     `json:"dry_run,omitempty"`
	// Replication is the cluster's, as the scheduler reports it (0 with
	// --node: unknown); with --all-replicas each block was read through
	// that many nodes.
	Replication int `json:"replication,omitempty"`

	Objects        int   `json:"objects"`         // objects planned
	SkippedObjects int   `json:"skipped_objects"` // no readable footer, or lacking a column
	Splits         int   `json:"splits"`          // splits planned
	PlannedBytes   int64 `json:"planned_bytes"`   // bytes to read (each replica's with --all-replicas)

	WarmedObjects int `json:"warmed_objects"` // objects whose every split was warmed
	WarmedSplits  int `json:"warmed_splits"`
	FailedSplits  int `json:"failed_splits"`

	// Bytes read, by source, from the nodes' read summaries. Cached =
	// local + peer hits: bytes that were in the cache already.
	Bytes                 int64 `json:"bytes"`
	OriginBytes           int64 `json:"origin_bytes"`
	CachedBytes           int64 `json:"cached_bytes"`
	LocalHitBytes         int64 `json:"local_hit_bytes"`
	PeerHitBytes          int64 `json:"peer_hit_bytes"`
	OwnerUnavailableBytes int64 `json:"owner_unavailable_bytes"` // part of origin_bytes, not cached

	DataLocal  int `json:"DATA_LOCAL_TASKS,omitempty"`
	RackLocal  int `json:"RACK_LOCAL_TASKS,omitempty"`
	OtherLocal int `json:"OTHER_LOCAL_TASKS,omitempty"`

	Seconds float64 `json:"seconds"`
}

func warmMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseWarm(args, stdout)
	if err != nil {
		return err
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	start := time.Now()
	repl := 0
	if o.sched.url != "" {
		// Fail early if the scheduler is not there, and learn the
		// replication for the summary.
		if repl, err = schedulerReplication(ctx, o); err != nil {
			return err
		}
	}
	store, err := planOrigin(ctx, o.origin)
	if err != nil {
		return err
	}
	plan, err := planWarm(ctx, store, o, stderr)
	if err != nil {
		return err
	}
	if o.allReplicas && len(plan.items) > 0 {
		if repl, err = expandReplicas(ctx, o, plan, stderr); err != nil {
			return err
		}
	}
	sum := warmSummary{
		Replication: repl,
		Prefix:      o.prefix, Mode: "node", Via: o.node, Columns: o.columns, DryRun: o.dryRun,
		Objects: len(plan.files) - plan.skipped, SkippedObjects: plan.skipped, Splits: len(plan.items), PlannedBytes: plan.bytes,
	}
	switch {
	case o.allReplicas:
		sum.Mode, sum.Via = "replicas", o.sched.url
	case o.sched.url != "":
		sum.Mode, sum.Via, sum.Job = "scheduler", o.sched.url, o.job
	}
	if len(plan.items) == 0 {
		if plan.skipped > 0 {
			return fmt.Errorf("nothing to warm under %s: all %d Parquet objects were skipped (see the warnings above)", o.prefix, plan.skipped)
		}
		return noParquetError(o.prefix, o.sniff)
	}
	if o.dryRun {
		sum.Seconds = time.Since(start).Seconds()
		if o.asJSON {
			return writeJSON(stdout, sum)
		}
		printWarmPlan(stdout, plan)
		fmt.Fprintf(stdout, "Dry run: would warm %d splits (%s) of %d objects under %s", len(plan.items), units.HumanBytes(plan.bytes), sum.Objects, o.prefix)
		if len(o.columns) > 0 {
			fmt.Fprintf(stdout, ", columns %s", strings.Join(o.columns, ","))
		}
		fmt.Fprintln(stdout)
		if plan.skipped > 0 {
			return fmt.Errorf("%w: %d of %d files were skipped (see the warnings above)", errSkipped, plan.skipped, len(plan.files))
		}
		return nil
	}

	w, err := newWarmer(o, plan, stderr)
	if err != nil {
		return err
	}
	defer w.close()
	runErr := w.run(ctx)
	w.fill(&sum)
	sum.Seconds = time.Since(start).Seconds()
	if o.asJSON {
		if err := writeJSON(stdout, sum); err != nil {
			return err
		}
	} else {
		printWarmSummary(stdout, sum)
	}
	switch {
	case runErr != nil:
		return runErr
	case sum.FailedSplits > 0:
		return fmt.Errorf("%d of %d splits could not be warmed (see the warnings above)", sum.FailedSplits, sum.Splits)
	case plan.skipped > 0:
		return fmt.Errorf("%w: %d of %d files were skipped (see the warnings above)", errSkipped, plan.skipped, len(plan.files))
	}
	return nil
}

// planWarm lists the Parquet objects under the prefix, reads their
// footers (o.concurrency at a time) and cuts them into items. A file
// whose footer cannot be read, or that lacks a --columns column, is
// skipped with a warning.
func planWarm(ctx context.Context, store origin.Store, o warmOptions, stderr io.Writer) (*warmPlan, error) {
	prog := newProgress(stderr, "locusctl warm", 2*time.Second)
	p := &warmPlan{}
	err := parquetx.ListParquet(ctx, store, o.prefix, parquetx.ListOptions{Sniff: o.sniff}, func(info origin.Info) error {
		p.files = append(p.files, info)
		prog.report("listed %d Parquet objects", len(p.files))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", o.prefix, err)
	}
	footers := make([]*parquetx.Footer, len(p.files))
	ferrs := make([]error, len(p.files))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.concurrency)
	var read atomic.Int64
	for i, info := range p.files {
		g.Go(func() error {
			footers[i], ferrs[i] = parquetx.ReadObjectFooter(gctx, store, info)
			prog.report("read %d of %d footers", read.Add(1), len(p.files))
			return nil
		})
	}
	g.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	for i, info := range p.files {
		if ferrs[i] != nil {
			p.skipped++
			fmt.Fprintf(stderr, "locusctl warm: warning: skipping %s: %v\n", info.URI, ferrs[i])
			continue
		}
		var items []warmItem
		var ferr error
		for _, s := range parquetx.PlanSplits(info, footers[i]) {
			it := warmItem{file: i, split: s, ranges: []parquetx.Range{{Offset: s.Offset, Length: s.Length}}}
			if len(o.columns) > 0 {
				if it.ranges, ferr = parquetx.ChunkRanges(footers[i], []int{s.RowGroup}, o.columns, 0); ferr != nil {
					break
				}
			}
			for _, r := range it.ranges {
				it.bytes += r.Length
			}
			if it.bytes > 0 {
				items = append(items, it)
			}
		}
		if ferr != nil {
			p.skipped++
			fmt.Fprintf(stderr, "locusctl warm: warning: skipping %s: %v\n", info.URI, ferr)
			continue
		}
		if len(items) == 0 {
			p.empty++
		}
		for _, it := range items {
			p.items = append(p.items, it)
			p.bytes += it.bytes
		}
	}
	return p, nil
}

// warmer reads the plan's items through the cluster. Its counters are
// updated by the workers and read by the progress reporter.
type warmer struct {
	o      warmOptions
	plan   *warmPlan
	stderr io.Writer
	cl     *client.Client
	sc     *client.Scheduler // nil with --node

	mu       sync.Mutex // guards the fields below and writes to stderr
	left     []int      // splits of each file not yet done
	sum      readpath.Summary
	splits   int // done, warmed or failed
	failed   int
	objects  int // files whose every split is done
	failedIn map[int]bool
	locality map[string]int
	warnings int
}

func newWarmer(o warmOptions, plan *warmPlan, stderr io.Writer) (*warmer, error) {
	w := &warmer{o: o, plan: plan, stderr: stderr, failedIn: map[int]bool{}, locality: map[string]int{}, objects: plan.empty}
	w.left = make([]int, len(plan.files))
	for _, it := range plan.items {
		w.left[it.file]++
	}
	tlsCfg, err := o.tls.config()
	if err != nil {
		return nil, err
	}
	if w.cl, err = client.New(client.Config{TLS: tlsCfg}); err != nil {
		return nil, err
	}
	if o.sched.url != "" {
		if w.sc, err = o.sched.open(tlsCfg); err != nil {
			w.cl.Close()
			return nil, err
		}
	}
	return w, nil
}

func (w *warmer) close() {
	w.cl.Close()
	if w.sc != nil {
		w.sc.Close()
	}
}

// run warms every item, o.concurrency at a time, reporting progress. It
// returns early, with the error, when the scheduler (or, with --node, the
// node) cannot be reached or ctx ends; failures of single splits are
// counted and warned about.
func (w *warmer) run(ctx context.Context) error {
	start := time.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	var reporter sync.WaitGroup
	reporter.Go(func() {
		t := time.NewTicker(warmProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				w.progress(start)
			}
		}
	})

	work := make(chan int)
	var workers sync.WaitGroup
	for range w.o.concurrency {
		workers.Go(func() {
			for i := range work {
				if err := w.warm(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for i := range w.plan.items {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	workers.Wait()
	close(done)
	reporter.Wait()
	w.progress(start)
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}

// warm warms item i. It returns an error only for a failure that dooms
// the whole run (the scheduler or --node unreachable); others are
// recorded.
func (w *warmer) warm(ctx context.Context, i int) error {
	it := w.plan.items[i]
	addr, task := w.o.node, fmt.Sprintf("split-%06d", i)
	start := time.Now()
	if it.reads != nil {
		return w.warmReplicas(ctx, it)
	}
	if w.sc != nil {
		split := client.Split{URI: it.split.URI, Offset: it.split.Offset, Length: it.split.Length}
		p, err := w.sc.Place(ctx, w.o.job, task, split, w.o.wait)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, client.ErrSchedulerUnavailable) && !errors.Is(err, client.ErrNoNode) {
				return schedulerError(w.o.sched.url, "placing "+task, err)
			}
			w.record(it, readpath.Summary{}, "", fmt.Errorf("placing it: %w", err))
			return nil
		}
		addr = p.Address
		sum, rerr := w.read(ctx, addr, it)
		// Complete even after a failure: the task's slot must be freed.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_, cerr := w.sc.Complete(cctx, w.o.job, task, client.InfoFromSummary(sum, time.Since(start)))
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil // stopped: counted as not warmed
		case rerr != nil:
			rerr = fmt.Errorf("reading it through %s (%s): %w", p.Node, addr, rerr)
		case cerr != nil:
			rerr = fmt.Errorf("completing task %s: %w", task, cerr)
		}
		w.record(it, sum, p.Locality, rerr)
		return nil
	}
	sum, err := w.read(ctx, addr, it)
	switch {
	case ctx.Err() != nil:
		return nil // stopped: counted as not warmed
	case errors.Is(err, client.ErrNodeUnavailable):
		w.record(it, sum, "", err)
		return nodeError(addr, "reading "+it.split.URI, err)
	}
	w.record(it, sum, "", err)
	return nil
}

// warmReplicas reads an item's pieces through each node of their
// preference lists. A node that fails fails the item, not the run.
func (w *warmer) warmReplicas(ctx context.Context, it warmItem) error {
	var total readpath.Summary
	var err error
	for _, r := range it.reads {
		s, rerr := w.cl.Read(ctx, r.addr, w.pinned(it, r.offset, r.length), io.Discard)
		addSummary(&total, s)
		if rerr != nil {
			err = fmt.Errorf("[%d, %d) through %s (%s): %w", r.offset, r.offset+r.length, r.node, r.addr, rerr)
			break
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	w.record(it, total, "", err)
	return nil
}

// read reads an item's ranges through the node at addr, discarding the
// bytes, and returns the summed summary.
func (w *warmer) read(ctx context.Context, addr string, it warmItem) (readpath.Summary, error) {
	var total readpath.Summary
	for _, r := range it.ranges {
		s, err := w.cl.Read(ctx, addr, w.pinned(it, r.Offset, r.Length), io.Discard)
		addSummary(&total, s)
		if err != nil {
			return total, fmt.Errorf("[%d, %d): %w", r.Offset, r.End(), err)
		}
	}
	return total, nil
}

// pinned is the read of [off, off+length) of an item's object at the
// version the plan read its footer at: if the object has changed since,
// the read fails (origin.ErrVersionChanged) instead of caching the new
// version's bytes at the old version's row-group offsets.
func (w *warmer) pinned(it warmItem, off, length int64) readpath.Request {
	return readpath.Request{URI: it.split.URI, Offset: off, Length: length, ExpectedVersion: w.plan.files[it.file].Version}
}

func addSummary(dst *readpath.Summary, s readpath.Summary) {
	dst.Bytes += s.Bytes
	dst.LocalHitBytes += s.LocalHitBytes
	dst.PeerHitBytes += s.PeerHitBytes
	dst.OriginBytes += s.OriginBytes
	for c := range dst.Misses {
		dst.Misses[c].Bytes += s.Misses[c].Bytes
		dst.Misses[c].Pages += s.Misses[c].Pages
	}
}

// record counts one finished item.
func (w *warmer) record(it warmItem, s readpath.Summary, locality string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	addSummary(&w.sum, s)
	w.splits++
	if locality != "" {
		w.locality[locality]++
	}
	if err != nil {
		w.failed++
		w.failedIn[it.file] = true
		if w.warnings++; w.warnings <= warmMaxWarnings {
			fmt.Fprintf(w.stderr, "locusctl warm: warning: %s row group %d: %v\n", it.split.URI, it.split.RowGroup, err)
		} else if w.warnings == warmMaxWarnings+1 {
			fmt.Fprintln(w.stderr, "locusctl warm: warning: more splits failed; the summary counts them")
		}
	}
	if w.left[it.file]--; w.left[it.file] == 0 && !w.failedIn[it.file] {
		w.objects++
	}
}

// progress prints one progress line on stderr.
func (w *warmer) progress(start time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	el := time.Since(start)
	rate := float64(w.sum.Bytes) / max(el.Seconds(), 1e-3)
	fmt.Fprintf(w.stderr, "locusctl warm: [%.1fs] %d/%d objects, %d/%d splits, %s of %s (%s/s); from origin %s, already cached %s",
		el.Seconds(), w.objects, len(w.plan.files)-w.plan.skipped, w.splits, len(w.plan.items),
		units.HumanBytes(w.sum.Bytes), units.HumanBytes(w.plan.bytes), units.HumanBytes(int64(rate)),
		units.HumanBytes(w.sum.OriginBytes), units.HumanBytes(w.sum.LocalHitBytes+w.sum.PeerHitBytes))
	if w.failed > 0 {
		fmt.Fprintf(w.stderr, ", %d failed", w.failed)
	}
	fmt.Fprintln(w.stderr)
}

// fill copies the counters into the summary.
func (w *warmer) fill(sum *warmSummary) {
	w.mu.Lock()
	defer w.mu.Unlock()
	sum.WarmedObjects = w.objects
	sum.WarmedSplits = w.splits - w.failed
	sum.FailedSplits = w.failed + (len(w.plan.items) - w.splits) // not reached counts as failed
	sum.Bytes = w.sum.Bytes
	sum.OriginBytes = w.sum.OriginBytes
	sum.LocalHitBytes = w.sum.LocalHitBytes
	sum.PeerHitBytes = w.sum.PeerHitBytes
	sum.CachedBytes = w.sum.LocalHitBytes + w.sum.PeerHitBytes
	sum.OwnerUnavailableBytes = w.sum.Misses[readpath.OwnerUnavailable].Bytes
	sum.DataLocal = w.locality["DATA_LOCAL"]
	sum.RackLocal = w.locality["RACK_LOCAL"]
	sum.OtherLocal = w.locality["OTHER_LOCAL"]
}

// schedulerReplication returns the cluster's replication from the
// scheduler's /v1/ring; an unreachable scheduler is an error.
func schedulerReplication(ctx context.Context, o warmOptions) (int, error) {
	tlsCfg, _ := o.tls.config()
	sc, err := o.sched.open(tlsCfg)
	if err != nil {
		return 0, err
	}
	defer sc.Close()
	rs, err := sc.Ring(ctx)
	if err != nil {
		return 0, schedulerError(o.sched.url, "reading the ring", err)
	}
	return rs.Replication, nil
}

// expandReplicas cuts every item's ranges at block boundaries and lists
// each piece once per node of its block's preference list, on the ring
// rebuilt from the scheduler's /v1/ring (planRing). It returns the
// replication.
func expandReplicas(ctx context.Context, o warmOptions, plan *warmPlan, stderr io.Writer) (int, error) {
	src, err := planRing(ctx, planOptions{schedulerURL: o.sched.url, tokenFile: o.sched.tokenFile}, stderr)
	if err != nil {
		return 0, schedulerError(o.sched.url, "reading the ring", err)
	}
	if src.ring == nil || src.ring.Len() == 0 {
		return 0, fmt.Errorf("the scheduler at %s lists no cache node", o.sched.url)
	}
	tlsCfg, _ := o.tls.config()
	sc, err := o.sched.open(tlsCfg)
	if err != nil {
		return 0, err
	}
	defer sc.Close()
	rs, err := sc.Ring(ctx)
	if err != nil {
		return 0, schedulerError(o.sched.url, "reading the ring", err)
	}
	addrs := map[string]string{}
	for _, m := range rs.Members {
		if m.Address != "" {
			addrs[m.Node] = m.Address
		}
	}
	bs := src.blockSize
	plan.bytes = 0
	for i := range plan.items {
		it := &plan.items[i]
		it.reads, it.bytes = []warmRead{}, 0
		for _, r := range it.ranges {
			for off := r.Offset; off < r.End(); {
				end := min(r.End(), (off/bs+1)*bs)
				for _, n := range src.ring.Owners(ring.BlockKey(it.split.URI, off/bs), src.replication) {
					addr, ok := addrs[n.ID]
					if !ok {
						return 0, fmt.Errorf("the scheduler lists no gRPC address for node %s", n.ID)
					}
					it.reads = append(it.reads, warmRead{node: n.ID, addr: addr, offset: off, length: end - off})
					it.bytes += end - off
				}
				off = end
			}
		}
		plan.bytes += it.bytes
	}
	return src.replication, nil
}

func pct(part, whole int64) string {
	if whole == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}

func printWarmSummary(w io.Writer, s warmSummary) {
	via := "through the node " + s.Via
	switch s.Mode {
	case "scheduler":
		via = fmt.Sprintf("through the scheduler at %s, job %s", s.Via, s.Job)
	case "replicas":
		via = fmt.Sprintf("through each of the %d nodes of every block's preference list (ring of the scheduler at %s)", s.Replication, s.Via)
		if s.Replication == 1 {
			via = fmt.Sprintf("through the owner of every block (replication 1, ring of the scheduler at %s)", s.Via)
		}
	}
	what := "row groups"
	if len(s.Columns) > 0 {
		what = "columns " + strings.Join(s.Columns, ",")
	}
	rate := float64(s.Bytes) / max(s.Seconds, 1e-3)
	took := time.Duration(s.Seconds * float64(time.Second)).Round(time.Millisecond)
	fmt.Fprintf(w, "Warmed %s (%s) %s: %d of %d objects, %d of %d splits, %s in %v (%s/s)\n",
		s.Prefix, what, via, s.WarmedObjects, s.Objects, s.WarmedSplits, s.Splits, units.HumanBytes(s.Bytes), took, units.HumanBytes(int64(rate)))
	cached := s.OriginBytes - s.OwnerUnavailableBytes
	fmt.Fprintf(w, "  fetched from the origin  %10s  %6s  now cached\n", units.HumanBytes(cached), pct(cached, s.Bytes))
	fmt.Fprintf(w, "  already cached           %10s  %6s  local %s, peer %s\n", units.HumanBytes(s.CachedBytes), pct(s.CachedBytes, s.Bytes),
		units.HumanBytes(s.LocalHitBytes), units.HumanBytes(s.PeerHitBytes))
	if s.OwnerUnavailableBytes > 0 {
		fmt.Fprintf(w, "  NOT cached               %10s  %6s  the owner was unavailable: the node read the origin directly\n",
			units.HumanBytes(s.OwnerUnavailableBytes), pct(s.OwnerUnavailableBytes, s.Bytes))
	}
	if s.Mode == "scheduler" {
		fmt.Fprintf(w, "  placements               DATA_LOCAL %d, RACK_LOCAL %d, OTHER_LOCAL %d\n", s.DataLocal, s.RackLocal, s.OtherLocal)
	}
	if s.FailedSplits > 0 {
		fmt.Fprintf(w, "  failed                   %d splits\n", s.FailedSplits)
	}
	if s.Bytes > 0 && s.OriginBytes == 0 {
		fmt.Fprintf(w, "All %s were already cached.\n", units.HumanBytes(s.Bytes))
	}
	if s.Mode == "scheduler" && s.Replication > 1 {
		fmt.Fprintf(w, "Note: replication is %d, and each split filled the node it ran on and the nodes before it in its block's\n"+
			"preference list; a task placed later on another node of the list fills it from them (a peer hit).\n"+
			"--all-replicas fills every node of every list.\n", s.Replication)
	}
}

// printWarmPlan prints the splits a dry run would read.
func printWarmPlan(w io.Writer, p *warmPlan) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "URI\tROW GROUP\tOFFSET\tLENGTH\tROWS\tREADS\tBYTES TO READ")
	for _, it := range p.items {
		reads := len(it.ranges)
		if it.reads != nil {
			reads = len(it.reads)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\n", it.split.URI, it.split.RowGroup, it.split.Offset, it.split.Length, it.split.NumRows, reads, it.bytes)
	}
	tw.Flush()
}
