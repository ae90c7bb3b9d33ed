package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/locuscache/locus/internal/units"
	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/schedapi"
)

const jobsUsage = `Usage: locusctl jobs --scheduler URL [JOB] [--json] [--token-file F] [--timeout D]

The scheduler's locality counters and cache outcome, side by side: for
each locality level (DATA_LOCAL: the task ran on a node of its split's
preference list; RACK_LOCAL: on the owner's rack; OTHER_LOCAL: elsewhere)
the tasks placed, running, completed and lost (their node died), the hit
ratio ((local + peer hit bytes) / bytes, over completed tasks), the local
hit ratio (local hit bytes / bytes) and the bytes read by source: local
(the cache of the node the task ran on), peer (another node's cache),
origin (misses). A low hit ratio next to a high DATA_LOCAL share is a
caching problem; a hit ratio that follows the DATA_LOCAL share is a
placement problem.

  locusctl jobs JOB    one job (GET /v1/jobs/JOB): a line per level and
                       the totals, plus queued tasks
  locusctl jobs        every job the scheduler knows, one line each, and a
                       line for all of them together (GET /v1/counters)

Exits 1 if the scheduler cannot be reached or does not know JOB, 2 for bad
flags.

Flags:
  --scheduler URL   the scheduler's HTTP API (http://host:port). Required.
  --json            print the counters as JSON: JOB's /v1/jobs/JOB object,
                    or {"jobs": [...], "all": {...}}
  --token-file F    bearer token, if a proxy protects the API's reads
  --timeout D       bound on each call (default 10s)
  --tls-ca F, --tls-cert F, --tls-key F
                    TLS for an https scheduler

` + envHelp + `
Examples:
  locusctl jobs --scheduler http://127.0.0.1:8080
  locusctl jobs --scheduler http://127.0.0.1:8080 pass-2
  locusctl jobs pass-2 --json | jq .hit_ratio_by_locality     # with LOCUS_SCHEDULER set
`

// jobsOptions are the parsed flags of locusctl jobs.
type jobsOptions struct {
	sched  schedulerFlags
	tls    tlsFlags
	job    string
	asJSON bool
}

func parseJobs(args []string, stdout io.Writer) (jobsOptions, error) {
	var o jobsOptions
	fs := flag.NewFlagSet("jobs", flag.ContinueOnError)
	o.sched.register(fs, 10*time.Second)
	o.tls.register(fs)
	fs.BoolVar(&o.asJSON, "json", false, "")
	rest, err := parseFlags(fs, args, jobsUsage, stdout)
	if err != nil {
		return o, err
	}
	switch {
	case len(rest) > 1:
		return o, usageErrorf("one job at a time, got %q (see --help)", rest)
	case len(rest) == 1 && rest[0] == "":
		return o, usageErrorf("empty job name")
	case len(rest) == 1:
		o.job = rest[0]
	}
	return o, o.sched.check(true)
}

// runJobs is "locusctl jobs".
var runJobs = withSignals(jobsMain)

// allJobs is the --json answer of locusctl jobs without JOB.
type allJobs struct {
	Jobs []client.JobCounters `json:"jobs"`
	All  client.JobCounters   `json:"all"`
}

func jobsMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseJobs(args, stdout)
	if err != nil {
		return err
	}
	sc, err := o.sched.openTLS(o.tls)
	if err != nil {
		return err
	}
	defer sc.Close()
	if o.job != "" {
		jc, err := sc.JobCounters(ctx, o.job)
		if err != nil {
			if errors.Is(err, client.ErrNotFound) {
				return fmt.Errorf("the scheduler knows no job %q (locusctl jobs lists them): %w", o.job, err)
			}
			return schedulerError(o.sched.url, "reading the job's counters", err)
		}
		if jc.Job == "" {
			jc.Job = o.job
		}
		if o.asJSON {
			return writeJSON(stdout, jc)
		}
		printJob(stdout, jc)
		return nil
	}

	names, err := sc.Jobs(ctx)
	if err != nil {
		return schedulerError(o.sched.url, "listing the jobs", err)
	}
	sort.Strings(names)
	var out allJobs
	for _, name := range names {
		jc, err := sc.JobCounters(ctx, name)
		if errors.Is(err, client.ErrNotFound) {
			continue // forgotten since it was listed
		}
		if err != nil {
			return schedulerError(o.sched.url, "reading the counters of job "+name, err)
		}
		if jc.Job == "" {
			jc.Job = name
		}
		out.Jobs = append(out.Jobs, jc)
	}
	if out.All, err = sc.JobCounters(ctx, ""); err != nil {
		return schedulerError(o.sched.url, "reading the counters of all jobs", err)
	}
	if out.All.Job == "" {
		out.All.Job = "(all)"
	}
	if o.asJSON {
		if out.Jobs == nil {
			out.Jobs = []client.JobCounters{}
		}
		return writeJSON(stdout, out)
	}
	printJobs(stdout, out)
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// levelNames are the locality levels, best first.
var levelNames = []string{"DATA_LOCAL", "RACK_LOCAL", "OTHER_LOCAL"}

// byLevel returns a job's by_locality keyed by level name (levelNames).
func byLevel(jc client.JobCounters) map[string]schedapi.LocalityStats {
	b := jc.ByLocality
	return map[string]schedapi.LocalityStats{"DATA_LOCAL": b.DataLocal, "RACK_LOCAL": b.RackLocal, "OTHER_LOCAL": b.OtherLocal}
}

func placed(jc client.JobCounters) int64 {
	return jc.DataLocalTasks + jc.RackLocalTasks + jc.OtherLocalTasks
}

// printJob prints one job's counters: a summary, then a line per level.
func printJob(w io.Writer, jc client.JobCounters) {
	n := placed(jc)
	pct := func(k int64) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprintf(" (%.1f%%)", 100*float64(k)/float64(n))
	}
	fmt.Fprintf(w, "Job %s: %d tasks placed: DATA_LOCAL %d%s, RACK_LOCAL %d%s, OTHER_LOCAL %d%s\n", jc.Job, n,
		jc.DataLocalTasks, pct(jc.DataLocalTasks), jc.RackLocalTasks, pct(jc.RackLocalTasks), jc.OtherLocalTasks, pct(jc.OtherLocalTasks))
	fmt.Fprintf(w, "  running %d, queued %d, completed %d, lost %d\n", jc.Running, jc.Queued, jc.Completed, jc.Lost)
	fmt.Fprintf(w, "  hit ratio %s over %s read: local %s, peer %s, origin %s\n\n",
		ratio(jc.HitRatio, jc.Bytes), units.HumanBytes(jc.Bytes), units.HumanBytes(jc.LocalHitBytes), units.HumanBytes(jc.PeerHitBytes), units.HumanBytes(jc.MissBytes))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LOCALITY\tPLACED\tRUNNING\tCOMPLETED\tLOST\tHIT RATIO\tLOCAL HIT RATIO\tBYTES\tLOCAL\tPEER\tORIGIN\tTASK TIME")
	var taskMS int64
	levels := byLevel(jc)
	for _, name := range levelNames {
		l := levels[name]
		taskMS += l.TaskTimeMS
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%v\n", name, l.Placed, l.Running, l.Completed, l.Lost,
			ratio(l.HitRatio, l.Bytes), ratio(l.LocalHitRatio, l.Bytes), units.HumanBytes(l.Bytes), units.HumanBytes(l.LocalHitBytes),
			units.HumanBytes(l.PeerHitBytes), units.HumanBytes(l.MissBytes), time.Duration(l.TaskTimeMS)*time.Millisecond)
	}
	localRatio := 0.0
	if jc.Bytes > 0 {
		localRatio = float64(jc.LocalHitBytes) / float64(jc.Bytes)
	}
	fmt.Fprintf(tw, "TOTAL\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%v\n", n, jc.Running, jc.Completed, jc.Lost,
		ratio(jc.HitRatio, jc.Bytes), ratio(localRatio, jc.Bytes), units.HumanBytes(jc.Bytes), units.HumanBytes(jc.LocalHitBytes),
		units.HumanBytes(jc.PeerHitBytes), units.HumanBytes(jc.MissBytes), time.Duration(taskMS)*time.Millisecond)
	tw.Flush()
}

// printJobs prints a line per job and one for all jobs together.
func printJobs(w io.Writer, a allJobs) {
	if len(a.Jobs) == 0 {
		fmt.Fprintln(w, "The scheduler knows no job yet.")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tPLACED\tDATA_LOCAL\tRACK_LOCAL\tOTHER_LOCAL\tRUNNING\tQUEUED\tLOST\tHIT RATIO\tDATA/RACK/OTHER HIT\tBYTES\tLOCAL\tPEER\tORIGIN")
	line := func(jc client.JobCounters) {
		var hits []string
		levels := byLevel(jc)
		for _, name := range levelNames {
			hits = append(hits, ratio(levels[name].HitRatio, levels[name].Bytes))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", jc.Job, placed(jc),
			jc.DataLocalTasks, jc.RackLocalTasks, jc.OtherLocalTasks, jc.Running, jc.Queued, jc.Lost,
			ratio(jc.HitRatio, jc.Bytes), strings.Join(hits, "/"), units.HumanBytes(jc.Bytes), units.HumanBytes(jc.LocalHitBytes),
			units.HumanBytes(jc.PeerHitBytes), units.HumanBytes(jc.MissBytes))
	}
	for _, jc := range a.Jobs {
		line(jc)
	}
	line(a.All)
	tw.Flush()
	fmt.Fprintln(w, strconv.Itoa(len(a.Jobs))+" jobs; hit ratio = (local + peer hit bytes) / bytes of completed tasks")
}
