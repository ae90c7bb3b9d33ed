// Package placementtest holds harnesses for pkg/placement: a script driver
// for golden-file tests (the verbs below) and a discrete-event simulator of
// a query engine's stage stream (sim.go).
package placementtest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locuscache/locus/pkg/placement"
)

// Epoch is the virtual time at which scripts and simulations start.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Driver runs placement scripts against a Placer on a virtual clock. After
// every mutating verb it calls Advance, as the service does, and prints the
// assignments; after every verb it calls Verify and prints any violation.
//
// Verbs (job defaults to "j"; durations are Go durations):
//
//	add-node n1 rack=r1 slots=2 [state=alive|draining|dead]
//	set-nodes                        input: one "n1 rack=r1 slots=2" per line
//	drain n1 | kill n1 | revive n1 | remove n1
//	submit [job=j] t1 t2 prefer=n1,n2 [wait=3s]
//	batch [job=j] [wait=3s]          input: one "t1 prefer=n1,n2 [wait=..]" per line
//	rekey [job=j] t1 t2 prefer=n2    new preference lists of queued tasks (a ring change);
//	                                 or input: one "t1 prefer=n2,n3" per line
//	advance 1s
//	complete [job=j] t1 [local=..] [peer=..] [miss=..] [bytes=..] [dur=..]
//	cancel [job=j] t1
//	counters [j]                     no argument: global
//	nodes
//	failover                         export, JSON round trip, import into a new placer
type Driver struct {
	P   *placement.Placer
	Now time.Time
	cfg placement.Config
}

// NewDriver returns a driver over an empty placer.
func NewDriver(cfg placement.Config) (*Driver, error) {
	p, err := placement.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Driver{P: p, Now: Epoch, cfg: cfg}, nil
}

func (d *Driver) rel(t time.Time) string { return t.Sub(Epoch).String() }

// Run executes one command and returns its output.
func (d *Driver) Run(c Command) string {
	var b strings.Builder
	if err := d.run(c, &b); err != nil {
		fmt.Fprintf(&b, "error: %v\n", err)
	}
	if err := d.P.Verify(); err != nil {
		fmt.Fprintf(&b, "VERIFY FAILED: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return b.String()
}

func (d *Driver) run(c Command, b *strings.Builder) error {
	job := c.Keys["job"]
	if job == "" {
		job = "j"
	}
	switch c.Verb {
	case "add-node":
		for _, id := range c.Args {
			nd, err := parseNode(id, c.Keys)
			if err != nil {
				return err
			}
			lost, err := d.P.UpsertNode(nd, d.Now)
			if err != nil {
				return err
			}
			d.printLost(b, lost)
		}
	case "set-nodes":
		var nodes []placement.Node
		for _, l := range c.Input {
			lc := parseDirective(l)
			nd, err := parseNode(lc.Verb, lc.Keys)
			if err != nil {
				return err
			}
			nodes = append(nodes, nd)
		}
		lost, err := d.P.SetNodes(nodes, d.Now)
		if err != nil {
			return err
		}
		d.printLost(b, lost)
	case "drain", "kill", "revive":
		st := map[string]placement.NodeState{"drain": placement.Draining, "kill": placement.Dead, "revive": placement.Alive}[c.Verb]
		for _, id := range c.Args {
			nd, ok := d.node(id)
			if !ok {
				return fmt.Errorf("unknown node %q", id)
			}
			nd.State = st
			lost, err := d.P.UpsertNode(nd, d.Now)
			if err != nil {
				return err
			}
			d.printLost(b, lost)
		}
	case "remove":
		for _, id := range c.Args {
			d.printLost(b, d.P.RemoveNode(id, d.Now))
		}
	case "submit":
		t := placement.Task{Job: job}
		if v := c.Keys["prefer"]; v != "" {
			t.Prefer = strings.Split(v, ",")
		}
		if err := parseDur(c.Keys, "wait", &t.Wait); err != nil {
			return err
		}
		for _, id := range c.Args {
			t.ID = id
			a, placed, err := d.P.Submit(t, d.Now)
			switch {
			case err != nil:
				fmt.Fprintf(b, "%s: error: %v\n", id, err)
			case placed:
				d.printAssign(b, a)
			default:
				fmt.Fprintf(b, "%s queued\n", id)
			}
		}
	case "batch":
		var wait time.Duration
		if err := parseDur(c.Keys, "wait", &wait); err != nil {
			return err
		}
		var ts []placement.Task
		for _, l := range c.Input {
			lc := parseDirective(l)
			t := placement.Task{Job: job, ID: lc.Verb, Wait: wait}
			if v := lc.Keys["prefer"]; v != "" {
				t.Prefer = strings.Split(v, ",")
			}
			if err := parseDur(lc.Keys, "wait", &t.Wait); err != nil {
				return err
			}
			ts = append(ts, t)
		}
		as, err := d.P.PlaceBatch(ts, d.Now)
		if err != nil {
			return err
		}
		placed := map[string]bool{}
		for _, a := range as {
			d.printAssign(b, a)
			placed[a.Task] = true
		}
		var q []string
		for _, t := range ts {
			if !placed[t.ID] {
				q = append(q, t.ID)
			}
		}
		if len(q) > 0 {
			fmt.Fprintf(b, "queued: %s\n", strings.Join(q, " "))
		}
	case "rekey":
		var us []placement.Rekey
		for _, id := range c.Args {
			us = append(us, placement.Rekey{Job: job, ID: id, Prefer: splitPrefer(c.Keys["prefer"])})
		}
		for _, l := range c.Input {
			lc := parseDirective(l)
			us = append(us, placement.Rekey{Job: job, ID: lc.Verb, Prefer: splitPrefer(lc.Keys["prefer"])})
		}
		n, err := d.P.Rekey(us, d.Now)
		if err != nil {
			return err
		}
		fmt.Fprintf(b, "rekeyed %d\n", n)
	case "advance":
		if len(c.Args) != 1 {
			return fmt.Errorf("advance wants one duration")
		}
		dur, err := time.ParseDuration(c.Args[0])
		if err != nil {
			return err
		}
		d.Now = d.Now.Add(dur)
		fmt.Fprintf(b, "now %s\n", d.rel(d.Now))
	case "complete":
		o := placement.Outcome{}
		for k, p := range map[string]*int64{"bytes": &o.Bytes, "local": &o.LocalHit, "peer": &o.PeerHit, "miss": &o.Miss} {
			if v, ok := c.Keys[k]; ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return fmt.Errorf("%s=%q: %w", k, v, err)
				}
				*p = n
			}
		}
		if err := parseDur(c.Keys, "dur", &o.Duration); err != nil {
			return err
		}
		for _, id := range c.Args {
			loc, err := d.P.Complete(job, id, o)
			if err != nil {
				fmt.Fprintf(b, "%s: error: %v\n", id, err)
				continue
			}
			fmt.Fprintf(b, "%s completed %v\n", id, loc)
		}
	case "cancel":
		for _, id := range c.Args {
			if err := d.P.Cancel(job, id, d.Now); err != nil {
				fmt.Fprintf(b, "%s: error: %v\n", id, err)
				continue
			}
			fmt.Fprintf(b, "%s cancelled\n", id)
		}
	case "counters":
		name := ""
		if len(c.Args) > 0 {
			name = c.Args[0]
		}
		cs, err := d.P.Counters(name)
		if err != nil {
			return err
		}
		printCounters(b, cs)
		return nil
	case "nodes":
		for _, n := range d.P.Nodes() {
			fmt.Fprintf(b, "%s rack=%s %v used=%d/%d waiting=%d\n", n.ID, n.Rack, n.State, n.Used, n.Slots, n.Waiting)
		}
		fmt.Fprintf(b, "queued=%d running=%d\n", d.P.Queued(), d.P.Running())
		return nil
	case "failover":
		js, err := json.Marshal(d.P.Export())
		if err != nil {
			return err
		}
		var st placement.State
		if err := json.Unmarshal(js, &st); err != nil {
			return err
		}
		nodes := d.P.Nodes()
		p, err := placement.New(d.cfg)
		if err != nil {
			return err
		}
		ns := make([]placement.Node, len(nodes))
		for i, n := range nodes {
			ns[i] = n.Node
		}
		if _, err := p.SetNodes(ns, d.Now); err != nil {
			return err
		}
		if err := p.Import(st); err != nil {
			return err
		}
		d.P = p
		fmt.Fprintf(b, "imported %d bytes of state, %d jobs\n", len(js), len(st.Jobs))
		return nil
	default:
		return fmt.Errorf("unknown verb %q", c.Verb)
	}
	for _, a := range d.P.Advance(d.Now) {
		d.printAssign(b, a)
	}
	if at, ok := d.P.NextDeadline(); ok && (c.Verb == "advance" || c.Verb == "submit" || c.Verb == "batch" || c.Verb == "rekey") {
		fmt.Fprintf(b, "next deadline %s\n", d.rel(at))
	}
	return nil
}

func (d *Driver) node(id string) (placement.Node, bool) {
	for _, n := range d.P.Nodes() {
		if n.ID == id {
			return n.Node, true
		}
	}
	return placement.Node{}, false
}

func (d *Driver) printAssign(b *strings.Builder, a placement.Assignment) {
	fmt.Fprintf(b, "%s -> %s %v waited %v\n", a.Task, a.Node, a.Locality, a.Waited())
}

func (d *Driver) printLost(b *strings.Builder, lost []placement.Lost) {
	for _, l := range lost {
		fmt.Fprintf(b, "lost %s/%s on %s (%v)\n", l.Job, l.Task, l.Node, l.Locality)
	}
}

func parseNode(id string, keys map[string]string) (placement.Node, error) {
	nd := placement.Node{ID: id, Rack: keys["rack"]}
	if v, ok := keys["slots"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nd, fmt.Errorf("slots=%q: %w", v, err)
		}
		nd.Slots = n
	}
	switch keys["state"] {
	case "", "alive":
	case "draining":
		nd.State = placement.Draining
	case "dead":
		nd.State = placement.Dead
	default:
		return nd, fmt.Errorf("unknown state %q", keys["state"])
	}
	return nd, nil
}

// splitPrefer parses a prefer= value: comma-separated node ids, "" for none.
func splitPrefer(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

func parseDur(keys map[string]string, k string, dst *time.Duration) error {
	v, ok := keys[k]
	if !ok {
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%s=%q: %w", k, v, err)
	}
	*dst = d
	return nil
}

func printCounters(b *strings.Builder, c placement.Counters) {
	for _, l := range placement.Localities {
		lc := c.Level(l)
		fmt.Fprintf(b, "%-11v placed=%d running=%d completed=%d lost=%d bytes=%d local=%d peer=%d miss=%d hit=%.3f\n",
			l, lc.Placed, lc.Running, lc.Completed, lc.Lost, lc.Bytes, lc.LocalHitBytes, lc.PeerHitBytes, lc.MissBytes, lc.HitRatio())
	}
	t := c.Total()
	fmt.Fprintf(b, "total placed=%d queued=%d data-local=%.3f hit=%.3f\n", t.Placed, c.Queued, c.DataLocalRatio(), t.HitRatio())
}
