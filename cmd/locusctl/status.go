package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/locuscache/locus/internal/units"
	"github.com/locuscache/locus/pkg/client"
)

const ringStatusUsage = `Usage: locusctl ring status --scheduler URL [--json] [--token-file F] [--timeout D]
                            [--tls-ca F [--tls-cert F --tls-key F]]

The live ring, as the scheduler sees it (GET /v1/ring): one line per cache
node with its rack, state (alive, draining; "dead" for a node the gossip
dropped while the scheduler still counts tasks on it), executor slots in
use over its slots, tasks queued for it, cache capacity, share of the ring
and gRPC / HTTP addresses; then a totals line. Above the table: the ring
epoch (every member that agrees on the membership computes the same
epoch), the cluster's block size, the replication (preference-list
length: a task on any of the first N nodes is DATA_LOCAL), the
scheduler's locality wait, and whether the scheduler leads (HA on etcd)
or runs standalone. Observers (locusctl plan --join, the scheduler's own
gossip member) own nothing and are listed after the table.

Exits 1 with one line of explanation if the scheduler cannot be reached
or answers an error; 2 for bad flags.

Flags:
  --scheduler URL     the scheduler's HTTP API, its --http-addr
                      (http://host:port, https with TLS). Required.
  --json              print the scheduler's answer as JSON (the /v1/ring
                      object: epoch, epoch_hex, block_size, replication,
                      members[...]) instead of the table
  --token-file F      bearer token, if a proxy protects the API's reads
  --timeout D         bound on the call (default 10s)
  --tls-ca F          CA of an https scheduler's certificate
  --tls-cert F, --tls-key F
                      client certificate, if the scheduler requires one

` + envHelp + `
Examples:
  locusctl ring status --scheduler http://127.0.0.1:8080
  LOCUS_SCHEDULER=http://127.0.0.1:8080 locusctl ring status --json | jq '.members[] | {node, slots_in_use}'
`

// ringStatusOptions are the parsed flags of locusctl ring status and of
// locusctl sizing: the scheduler, TLS, --json, no argument.
type ringStatusOptions struct {
	sched  schedulerFlags
	tls    tlsFlags
	asJSON bool
}

func parseRingStatus(args []string, stdout io.Writer) (ringStatusOptions, error) {
	return parseRingFlags("ring status", ringStatusUsage, args, stdout)
}

// parseRingFlags parses the flags of a command that reads the ring.
func parseRingFlags(name, usage string, args []string, stdout io.Writer) (ringStatusOptions, error) {
	var o ringStatusOptions
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	o.sched.register(fs, 10*time.Second)
	o.tls.register(fs)
	fs.BoolVar(&o.asJSON, "json", false, "")
	rest, err := parseFlags(fs, args, usage, stdout)
	if err != nil {
		return o, err
	}
	if len(rest) > 0 {
		return o, usageErrorf("unexpected argument %q (see --help)", rest[0])
	}
	return o, o.sched.check(true)
}

// runRingStatus is "locusctl ring status".
var runRingStatus = withSignals(ringStatusMain)

func ringStatusMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseRingStatus(args, stdout)
	if err != nil {
		return err
	}
	sc, err := o.sched.openTLS(o.tls)
	if err != nil {
		return err
	}
	defer sc.Close()
	rs, err := sc.Ring(ctx)
	if err != nil {
		return schedulerError(o.sched.url, "reading the ring", err)
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rs)
	}
	printRingStatus(stdout, rs)
	return nil
}

// printRingStatus prints the ring as a table with a header and a totals
// line.
func printRingStatus(w io.Writer, rs client.RingStatus) {
	role := "standalone"
	switch {
	case rs.Leader && !rs.Standalone:
		role = "the leader"
	case !rs.Standalone:
		role = "a follower"
		if rs.LeaderHTTP != "" {
			role += " (leader at " + rs.LeaderHTTP + ")"
		}
	}
	wait := "-"
	if rs.LocalityMS > 0 {
		wait = (time.Duration(rs.LocalityMS) * time.Millisecond).String()
	}
	fmt.Fprintf(w, "Ring epoch %016x (generation %d), block size %s, replication %d, locality wait %s\n",
		rs.Epoch, rs.Generation, units.FormatBytes(rs.BlockSize), rs.Replication, wait)
	fmt.Fprintf(w, "Scheduler %s, %s\n\n", dash(rs.Scheduler), role)

	members := rs.Members
	sort.SliceStable(members, func(i, j int) bool { return members[i].Node < members[j].Node })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tRACK\tSTATE\tSLOTS\tWAITING\tCAPACITY\tSHARE\tGRPC\tHTTP")
	var (
		nodes, used, slots, waiting int
		capacity                    int64
		share                       float64
		states                      = map[string]int{}
		racks                       = map[string]bool{}
		observers                   []string
	)
	for _, m := range members {
		if m.Role == "observer" {
			observers = append(observers, fmt.Sprintf("%s (%s, %s)", m.Node, m.State, dash(m.Address)))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d\t%s\t%.1f%%\t%s\t%s\n", m.Node, dash(m.Rack), m.State,
			m.SlotsInUse, m.Slots, m.Waiting, units.HumanBytes(m.CapacityBytes), 100*m.Share, dash(m.Address), dash(m.HTTPAddress))
		nodes++
		used += m.SlotsInUse
		slots += m.Slots
		waiting += m.Waiting
		capacity += m.CapacityBytes
		share += m.Share
		states[m.State]++
		racks[m.Rack] = true
	}
	var st []string
	for _, s := range []string{"alive", "draining", "dead"} {
		if states[s] > 0 {
			st = append(st, fmt.Sprintf("%d %s", states[s], s))
			delete(states, s)
		}
	}
	for s, n := range states {
		st = append(st, fmt.Sprintf("%d %s", n, s))
	}
	rackWord := "racks"
	if len(racks) == 1 {
		rackWord = "rack"
	}
	fmt.Fprintf(tw, "TOTAL\t%d %s\t%s\t%d/%d\t%d\t%s\t%.1f%%\n",
		len(racks), rackWord, dash(strings.Join(st, ", ")), used, slots, waiting, units.HumanBytes(capacity), 100*share)
	tw.Flush()
	fmt.Fprintf(w, "%d cache nodes", nodes)
	if len(observers) > 0 {
		fmt.Fprintf(w, "; observers: %s", strings.Join(observers, ", "))
	}
	fmt.Fprintln(w)
	if nodes == 0 {
		fmt.Fprintln(w, "No cache node: the scheduler cannot place tasks (are the nodes joined to its gossip?)")
	}
}
