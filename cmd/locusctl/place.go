package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/locuscache/locus/internal/units"
	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/origin"
)

const placeUsage = `Usage: locusctl place --scheduler URL --job J --task T --uri U [--offset O] [--length L]
                      [--wait D] [--json] [--token-file F] [--timeout D]

Asks the scheduler where one task should run (POST /v1/place), as a query
engine's executor does, and prints the answer: the node (and its rack),
its gRPC address (where the task reads its split) and HTTP address (its
S3 gateway), the locality (DATA_LOCAL: the node is in the preference list
of the split's placement key; RACK_LOCAL: on the owner's rack;
OTHER_LOCAL), the owner (the first node of the preference list), the ring
epoch and how long the task waited for its slot.

The task then holds one executor slot on that node until it is reported
done with 'locusctl complete' (same --job and --task): a placed task that
is never completed keeps its slot.

The split is the byte range [--offset, --offset+--length) of --uri. The
placement key is the block (of the cluster's block size) holding most of
those bytes. Without --length, the split runs from --offset to the end of
its block (the block size comes from the scheduler's /v1/ring), so the
task is placed by that block's owner.

Exits 1 if the scheduler cannot be reached or refuses the task (503: no
node can take it within its queue wait; 409: the task is already placed),
2 for bad flags.

Flags:
  --scheduler URL   the scheduler's HTTP API (http://host:port). Required.
  --job J           the job (a query, a stage) the task belongs to. Required.
  --task T          the task's id, unique within the job. Required.
  --uri U           the object: s3://bucket/key or file:///abs/path. Required.
  --offset O        first byte of the split (default 0; units allowed: 128MiB)
  --length L        bytes in the split (default: to the end of --offset's block)
  --wait D          the task's locality wait: how long it may wait for a slot
                    on a data-local node before it steps down to rack-local
                    (and as long again before any node). Default: the
                    scheduler's --locality-wait; 0: no wait at all.
  --json            print the scheduler's answer as JSON
  --token-file F    bearer token (the scheduler's --auth-token-file)
  --timeout D       bound on the call, on top of twice --wait (default 1m:
                    longer than the scheduler's default --max-queue-wait)
  --tls-ca F, --tls-cert F, --tls-key F
                    TLS for an https scheduler

` + envHelp + `
Example:
  locusctl place --scheduler http://127.0.0.1:8080 --job demo --task t1 \
      --uri s3://lake/events/part-00000.parquet --offset 4 --length 300KiB --wait 500ms
`

const completeUsage = `Usage: locusctl complete --scheduler URL --job J --task T
                         [--bytes N] [--local N] [--peer N] [--miss N] [--duration D]
                         [--json] [--token-file F] [--timeout D]

Reports a task placed with 'locusctl place' (or by any client) done (POST
/v1/complete): its slot is freed, and the bytes it read are counted by
source against the locality it was placed with, in the job's counters
('locusctl jobs JOB') and the scheduler's locus_task_bytes_total. Prints
that locality.

Exits 1 if the scheduler cannot be reached or does not hold the task (a
400 with code "not_found": never placed, completed already, or lost with
its node), 2 for bad flags.

Flags:
  --scheduler URL   the scheduler's HTTP API (http://host:port). Required.
  --job J, --task T the task, as placed. Required.
  --local N         bytes served from the cache of the node the task ran on
  --peer N          bytes served from another node's cache
  --miss N          bytes read from the origin
  --bytes N         all bytes the task read (default --local + --peer + --miss;
                    must not be less)
  --duration D      how long the task ran (e.g. 1.5s)
  --json            print {"job", "task", "locality"} as JSON
  --token-file F    bearer token (the scheduler's --auth-token-file)
  --timeout D       bound on the call (default 30s)
  --tls-ca F, --tls-cert F, --tls-key F
                    TLS for an https scheduler
Byte counts take units: 4MiB, 1.5GiB, 300KB.

` + envHelp + `
Example:
  locusctl complete --scheduler http://127.0.0.1:8080 --job demo --task t1 \
      --local 300KiB --duration 40ms
`

// placeOptions are the parsed flags of locusctl place.
type placeOptions struct {
	sched          schedulerFlags
	tls            tlsFlags
	job, task, uri string
	offset, length int64
	lengthSet      bool
	wait           time.Duration
	asJSON         bool
}

func parsePlace(args []string, stdout io.Writer) (placeOptions, error) {
	var o placeOptions
	fs := flag.NewFlagSet("place", flag.ContinueOnError)
	o.sched.register(fs, time.Minute)
	o.tls.register(fs)
	fs.StringVar(&o.job, "job", "", "")
	fs.StringVar(&o.task, "task", "", "")
	fs.StringVar(&o.uri, "uri", "", "")
	fs.Var(units.Flag(&o.offset), "offset", "")
	fs.Var(units.Flag(&o.length), "length", "")
	fs.DurationVar(&o.wait, "wait", 0, "")
	fs.BoolVar(&o.asJSON, "json", false, "")
	rest, err := parseFlags(fs, args, placeUsage, stdout)
	if err != nil {
		return o, err
	}
	o.lengthSet = flagSet(fs, "length")
	switch {
	case len(rest) > 0:
		return o, usageErrorf("unexpected argument %q; the object goes in --uri (see --help)", rest[0])
	case o.job == "":
		return o, usageErrorf("missing --job (the job the task belongs to)")
	case o.task == "":
		return o, usageErrorf("missing --task (the task's id within the job)")
	case o.uri == "":
		return o, usageErrorf("missing --uri (s3://bucket/key or file:///abs/path)")
	case o.offset < 0:
		return o, usageErrorf("--offset must not be negative, got %d", o.offset)
	case o.lengthSet && o.length <= 0:
		return o, usageErrorf("--length must be positive, got %d", o.length)
	case o.wait < 0:
		return o, usageErrorf("--wait must not be negative, got %v (0 means no wait)", o.wait)
	}
	u, err := origin.ParseURI(o.uri)
	if err != nil {
		return o, usageErrorf("--uri: %v", err)
	}
	if u.IsPrefix() {
		return o, usageErrorf("--uri %q names a prefix, not an object", o.uri)
	}
	o.uri = u.String()
	if !flagSet(fs, "wait") {
		o.wait = client.DefaultWait
	} else if o.wait == 0 {
		o.wait = client.NoWait
	}
	return o, o.sched.check(true)
}

// runPlace is "locusctl place".
var runPlace = withSignals(placeMain)

func placeMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parsePlace(args, stdout)
	if err != nil {
		return err
	}
	// The client bounds Place by --timeout plus twice the wait (data-local,
	// then rack-local), so the scheduler's own answer (a 503 that says why)
	// comes before our deadline.
	sc, err := o.sched.openTLS(o.tls)
	if err != nil {
		return err
	}
	defer sc.Close()
	if !o.lengthSet {
		rs, err := sc.Ring(ctx)
		if err != nil {
			return schedulerError(o.sched.url, "reading the block size from the ring", err)
		}
		if rs.BlockSize <= 0 {
			return fmt.Errorf("the scheduler reports no block size (no cache node yet?); give --length")
		}
		o.length = rs.BlockSize - o.offset%rs.BlockSize
	}
	split := client.Split{URI: o.uri, Offset: o.offset, Length: o.length}
	p, err := sc.Place(ctx, o.job, o.task, split, o.wait)
	if err != nil {
		switch {
		case errors.Is(err, client.ErrConflict):
			return fmt.Errorf("task %s of job %s is already placed or queued (complete it first): %w", o.task, o.job, err)
		case errors.Is(err, client.ErrNoNode):
			return fmt.Errorf("no node could take the task (all slots busy, or no alive cache node; see locusctl ring status): %w", err)
		}
		return schedulerError(o.sched.url, "placing the task", err)
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	fmt.Fprintf(stdout, "Placed task %s of job %s on %s (rack %s): %s\n", o.task, o.job, p.Node, dash(p.Rack), p.Locality)
	fmt.Fprintf(stdout, "  split       %s [%d, %d) (%s)\n", o.uri, o.offset, o.offset+o.length, units.HumanBytes(o.length))
	fmt.Fprintf(stdout, "  node        %s\n", p.Node)
	fmt.Fprintf(stdout, "  address     %s (gRPC: read the split here)   HTTP %s\n", dash(p.Address), dash(p.HTTPAddress))
	fmt.Fprintf(stdout, "  locality    %s\n", p.Locality)
	fmt.Fprintf(stdout, "  owner       %s\n", dash(p.Owner))
	fmt.Fprintf(stdout, "  ring epoch  %016x\n", p.RingEpoch)
	fmt.Fprintf(stdout, "  waited      %v\n", time.Duration(p.WaitedMS)*time.Millisecond)
	fmt.Fprintf(stdout, "The task holds a slot on %s until it completes:\n  locusctl complete --scheduler %s --job %s --task %s --local N --peer N --miss N\n",
		p.Node, o.sched.url, shellQuote(o.job), shellQuote(o.task))
	return nil
}

// completeOptions are the parsed flags of locusctl complete.
type completeOptions struct {
	sched                    schedulerFlags
	tls                      tlsFlags
	job, task                string
	bytes, local, peer, miss int64
	duration                 time.Duration
	asJSON                   bool
}

func parseComplete(args []string, stdout io.Writer) (completeOptions, error) {
	var o completeOptions
	fs := flag.NewFlagSet("complete", flag.ContinueOnError)
	o.sched.register(fs, 30*time.Second)
	o.tls.register(fs)
	fs.StringVar(&o.job, "job", "", "")
	fs.StringVar(&o.task, "task", "", "")
	fs.Var(units.Flag(&o.bytes), "bytes", "")
	fs.Var(units.Flag(&o.local), "local", "")
	fs.Var(units.Flag(&o.peer), "peer", "")
	fs.Var(units.Flag(&o.miss), "miss", "")
	fs.DurationVar(&o.duration, "duration", 0, "")
	fs.BoolVar(&o.asJSON, "json", false, "")
	rest, err := parseFlags(fs, args, completeUsage, stdout)
	if err != nil {
		return o, err
	}
	sum := o.local + o.peer + o.miss
	switch {
	case len(rest) > 0:
		return o, usageErrorf("unexpected argument %q (see --help)", rest[0])
	case o.job == "":
		return o, usageErrorf("missing --job (the job the task was placed in)")
	case o.task == "":
		return o, usageErrorf("missing --task (the task's id, as placed)")
	case o.duration < 0:
		return o, usageErrorf("--duration must not be negative, got %v", o.duration)
	case sum < o.local || sum < o.peer || sum < o.miss:
		return o, usageErrorf("--local + --peer + --miss overflows")
	case flagSet(fs, "bytes") && o.bytes < sum:
		return o, usageErrorf("--bytes %d is less than --local + --peer + --miss = %d", o.bytes, sum)
	}
	return o, o.sched.check(true)
}

// runComplete is "locusctl complete".
var runComplete = withSignals(completeMain)

func completeMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseComplete(args, stdout)
	if err != nil {
		return err
	}
	sc, err := o.sched.openTLS(o.tls)
	if err != nil {
		return err
	}
	defer sc.Close()
	info := client.CompleteInfo{Bytes: o.bytes, LocalHit: o.local, PeerHit: o.peer, Miss: o.miss, Duration: o.duration}
	if info.Bytes == 0 {
		info.Bytes = o.local + o.peer + o.miss
	}
	loc, err := sc.Complete(ctx, o.job, o.task, info)
	if err != nil {
		if errors.Is(err, client.ErrNotFound) {
			return fmt.Errorf("task %s of job %s is not running (never placed, completed already, or lost with its node): %w", o.task, o.job, err)
		}
		return schedulerError(o.sched.url, "completing the task", err)
	}
	if o.asJSON {
		return json.NewEncoder(stdout).Encode(struct {
			Job      string `json:"job"`
			Task     string `json:"task"`
			Locality string `json:"locality"`
		}{o.job, o.task, loc})
	}
	fmt.Fprintf(stdout, "Completed task %s of job %s: %s, %s read (local %s, peer %s, origin %s) in %v\n",
		o.task, o.job, loc, units.HumanBytes(info.Bytes), units.HumanBytes(o.local), units.HumanBytes(o.peer), units.HumanBytes(o.miss), o.duration)
	return nil
}

// shellQuote quotes s for a shell command line when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/=@,+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
