package placement_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/placement"
)

// model is the test's own bookkeeping of what the placer must have done,
// kept from the public API only.
type model struct {
	t     *testing.T
	p     *placement.Placer
	rng   *rand.Rand
	now   time.Time
	ttl   time.Duration
	nodes map[string]*mnode
	run   map[[2]string]*mtask // running
	queue map[[2]string]*mtask // queued
	seen  map[[2]string][2]time.Time
	cnt   map[string]*placement.Counters // per job, and "" for all
	// window: an Advance was skipped, so the placer may hold placements
	// the model learns of later (Submit or PlaceBatch catching up), made
	// before others it already saw: the "preferred node was free" and
	// "node was full" checks are unsound for the assignments seen until
	// the next Advance.
	window bool
	steps  int
}

type mnode struct {
	placement.Node
	member bool
	used   int
}

type mtask struct {
	placement.Task
	first     time.Time
	ownerRack string
	node      string
	loc       placement.Locality
}

func (m *model) fail(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("step %d at %v: %s", m.steps, m.now.Sub(time.Unix(0, 0)), fmt.Sprintf(format, args...))
}

func (m *model) counters(job string) []*placement.Counters {
	for _, k := range []string{job, ""} {
		if m.cnt[k] == nil {
			m.cnt[k] = &placement.Counters{}
		}
	}
	return []*placement.Counters{m.cnt[job], m.cnt[""]}
}

func (m *model) takes(id string) bool {
	n := m.nodes[id]
	return n != nil && n.member && n.State == placement.Alive && n.used < n.Slots
}

func (m *model) assigned(as []placement.Assignment) {
	m.t.Helper()
	for _, a := range as {
		k := [2]string{a.Job, a.Task}
		mt := m.queue[k]
		if mt == nil {
			m.fail("assignment of %v, which is not queued", k)
		}
		n := m.nodes[a.Node]
		if n == nil || !n.member || n.State != placement.Alive {
			m.fail("%v placed on %s, which is not an alive member", k, a.Node)
		}
		if n.used >= n.Slots && !m.window {
			m.fail("%v placed on %s, which is full (%d/%d)", k, a.Node, n.used, n.Slots)
		}
		want := placement.OtherLocal
		switch {
		case slices.Contains(mt.Prefer, a.Node):
			want = placement.DataLocal
		case mt.ownerRack != "" && a.Rack == mt.ownerRack:
			want = placement.RackLocal
		}
		if a.Rack != n.Rack && !m.window {
			m.fail("%v placed on %s reported in rack %q, node is in %q", k, a.Node, a.Rack, n.Rack)
		}
		if a.Locality != want {
			m.fail("%v on %s reported %v, want %v", k, a.Node, a.Locality, want)
		}
		if want != placement.DataLocal && !m.window {
			for _, id := range mt.Prefer {
				if m.takes(id) {
					m.fail("%v placed %v on %s while its preferred %s had a free slot", k, want, a.Node, id)
				}
			}
		}
		if !a.Submitted.Equal(mt.first) {
			m.fail("%v first seen %v, placer says %v", k, mt.first, a.Submitted)
		}
		n.used++
		mt.node, mt.loc = a.Node, a.Locality
		delete(m.queue, k)
		m.run[k] = mt
		for _, c := range m.counters(a.Job) {
			c.Queued--
			c.Level(a.Locality).Placed++
			c.Level(a.Locality).Running++
		}
	}
}

func (m *model) lost(ls []placement.Lost) {
	m.t.Helper()
	for _, l := range ls {
		k := [2]string{l.Job, l.Task}
		mt := m.run[k]
		if mt == nil || mt.node != l.Node || mt.loc != l.Locality {
			m.fail("lost %+v, model has %+v", l, mt)
		}
		m.nodes[l.Node].used--
		delete(m.run, k)
		for _, c := range m.counters(l.Job) {
			c.Level(l.Locality).Running--
			c.Level(l.Locality).Lost++
		}
	}
}

func (m *model) randNode() placement.Node {
	racks := []string{"r0", "r1", "r2", ""}
	states := []placement.NodeState{placement.Alive, placement.Alive, placement.Alive, placement.Alive, placement.Draining, placement.Dead}
	return placement.Node{
		ID:    fmt.Sprintf("n%d", m.rng.IntN(8)),
		Rack:  racks[m.rng.IntN(len(racks))],
		Slots: m.rng.IntN(4),
		State: states[m.rng.IntN(len(states))],
	}
}

func (m *model) applyNode(nd placement.Node) {
	n := m.nodes[nd.ID]
	if n == nil {
		n = &mnode{}
		m.nodes[nd.ID] = n
	}
	n.Node, n.member = nd, true
}

func (m *model) randTask() placement.Task {
	waits := []time.Duration{-time.Second, 0, 500 * time.Millisecond, time.Second, 3 * time.Second}
	t := placement.Task{
		Job:  fmt.Sprintf("j%d", m.rng.IntN(3)),
		ID:   fmt.Sprintf("t%d", m.rng.IntN(60)),
		Wait: waits[m.rng.IntN(len(waits))],
	}
	for range m.rng.IntN(4) {
		t.Prefer = append(t.Prefer, fmt.Sprintf("n%d", m.rng.IntN(10))) // n8, n9 never join
	}
	return t
}

// submitted records a task the placer accepted.
func (m *model) submitted(t placement.Task) {
	k := [2]string{t.Job, t.ID}
	mt := &mtask{Task: t, first: m.now}
	if s, ok := m.seen[k]; ok && m.now.Sub(s[1]) < m.ttl && s[0].Before(m.now) {
		mt.first = s[0]
	}
	delete(m.seen, k)
	if len(t.Prefer) > 0 {
		if n := m.nodes[t.Prefer[0]]; n != nil {
			mt.ownerRack = n.Rack
		}
	}
	m.queue[k] = mt
	for _, c := range m.counters(t.Job) {
		c.Queued++
	}
}

func (m *model) wantErr(err error, t placement.Task) bool {
	k := [2]string{t.Job, t.ID}
	_, q := m.queue[k]
	_, r := m.run[k]
	alive := 0
	for _, n := range m.nodes {
		if n.member && n.State == placement.Alive {
			alive += n.Slots
		}
	}
	switch {
	case q || r:
		if !errors.Is(err, placement.ErrDuplicateTask) {
			m.fail("submit of %v (queued %v running %v): err %v, want ErrDuplicateTask", k, q, r, err)
		}
		return true
	case alive == 0:
		if !errors.Is(err, placement.ErrNoCapacity) {
			m.fail("submit with no alive slots: err %v, want ErrNoCapacity", err)
		}
		return true
	case err != nil:
		m.fail("submit %v: %v", k, err)
	}
	return false
}

func (m *model) step() {
	m.steps++
	switch op := m.rng.IntN(100); {
	case op < 10:
		nd := m.randNode()
		ls, err := m.p.UpsertNode(nd, m.now)
		if err != nil {
			m.fail("upsert %+v: %v", nd, err)
		}
		m.applyNode(nd)
		m.lost(ls)
	case op < 13:
		id := fmt.Sprintf("n%d", m.rng.IntN(8))
		ls := m.p.RemoveNode(id, m.now)
		if n := m.nodes[id]; n != nil {
			n.member = false
		}
		m.lost(ls)
	case op < 15:
		var nodes []placement.Node
		ids := map[string]bool{}
		for range m.rng.IntN(6) {
			nd := m.randNode()
			if !ids[nd.ID] {
				ids[nd.ID] = true
				nodes = append(nodes, nd)
			}
		}
		ls, err := m.p.SetNodes(nodes, m.now)
		if err != nil {
			m.fail("set nodes: %v", err)
		}
		for id, n := range m.nodes {
			if !ids[id] {
				n.member = false
			}
		}
		for _, nd := range nodes {
			m.applyNode(nd)
		}
		m.lost(ls)
	case op < 45:
		t := m.randTask()
		a, placed, err := m.p.Submit(t, m.now)
		if m.wantErr(err, t) {
			break
		}
		m.submitted(t)
		if placed {
			m.assigned([]placement.Assignment{a})
		}
	case op < 52:
		var ts []placement.Task
		keys := map[[2]string]bool{}
		for range 1 + m.rng.IntN(8) {
			t := m.randTask()
			k := [2]string{t.Job, t.ID}
			_, q := m.queue[k]
			_, r := m.run[k]
			if !keys[k] && !q && !r {
				keys[k] = true
				ts = append(ts, t)
			}
		}
		as, err := m.p.PlaceBatch(ts, m.now)
		if len(ts) > 0 && m.wantErr(err, ts[0]) {
			break
		}
		for _, t := range ts {
			m.submitted(t)
		}
		m.assigned(as)
	case op < 72:
		m.now = m.now.Add([]time.Duration{0, 100 * time.Millisecond, 500 * time.Millisecond, time.Second, 3 * time.Second}[m.rng.IntN(5)])
	case op < 76:
		if m.window {
			break // the placer may hold placements the model sees as queued
		}
		m.rekey()
	case op < 90:
		keys := sortedKeys(m.run)
		if len(keys) == 0 || m.rng.IntN(10) == 0 {
			if _, err := m.p.Complete("j0", "nope", placement.Outcome{}); err == nil {
				m.fail("Complete of an unknown task succeeded")
			}
			break
		}
		k := keys[m.rng.IntN(len(keys))]
		mt := m.run[k]
		o := placement.Outcome{LocalHit: m.rng.Int64N(100), PeerHit: m.rng.Int64N(100), Miss: m.rng.Int64N(100)}
		loc, err := m.p.Complete(k[0], k[1], o)
		if err != nil || loc != mt.loc {
			m.fail("complete %v: %v %v, want %v", k, loc, err, mt.loc)
		}
		m.nodes[mt.node].used--
		delete(m.run, k)
		for _, c := range m.counters(k[0]) {
			l := c.Level(loc)
			l.Running--
			l.Completed++
			l.Bytes += o.LocalHit + o.PeerHit + o.Miss
			l.LocalHitBytes += o.LocalHit
			l.PeerHitBytes += o.PeerHit
			l.MissBytes += o.Miss
		}
	default:
		keys := append(sortedKeys(m.queue), sortedKeys(m.run)...)
		if len(keys) == 0 {
			break
		}
		k := keys[m.rng.IntN(len(keys))]
		if err := m.p.Cancel(k[0], k[1], m.now); err != nil {
			m.fail("cancel %v: %v", k, err)
		}
		if mt := m.queue[k]; mt != nil {
			delete(m.queue, k)
			m.seen[k] = [2]time.Time{mt.first, m.now}
			for _, c := range m.counters(k[0]) {
				c.Queued--
			}
		} else {
			mt := m.run[k]
			m.lost([]placement.Lost{{Job: k[0], Task: k[1], Node: mt.node, Locality: mt.loc}})
		}
	}
	if m.rng.IntN(4) == 0 {
		// Skip Advance: the next Submit or PlaceBatch catches up on its
		// own, and the placements it makes for queued tasks stay pending
		// (queued, for every other call) until an Advance returns them.
		m.window = true
		return
	}
	m.assigned(m.p.Advance(m.now))
	m.window = false
	m.check()
}

// rekey gives random queued tasks random new preference lists, as a ring
// change does.
func (m *model) rekey() {
	var us []placement.Rekey
	for _, k := range sortedKeys(m.queue) {
		if m.rng.IntN(3) != 0 {
			continue
		}
		u := placement.Rekey{Job: k[0], ID: k[1]}
		for range m.rng.IntN(4) {
			u.Prefer = append(u.Prefer, fmt.Sprintf("n%d", m.rng.IntN(10)))
		}
		us = append(us, u)
	}
	want := 0
	for _, u := range us {
		mt := m.queue[[2]string{u.Job, u.ID}]
		if slices.Equal(dedup(u.Prefer), dedup(mt.Prefer)) {
			continue
		}
		want++
		mt.Prefer, mt.ownerRack = u.Prefer, ""
		if len(u.Prefer) > 0 {
			if n := m.nodes[u.Prefer[0]]; n != nil {
				mt.ownerRack = n.Rack
			}
		}
	}
	n, err := m.p.Rekey(us, m.now)
	if err != nil || n != want {
		m.fail("rekey of %d tasks: %d changed, err %v; want %d changed", len(us), n, err, want)
	}
}

func dedup(ids []string) []string {
	var out []string
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// check compares the placer with the model once caught up.
func (m *model) check() {
	m.t.Helper()
	if err := m.p.Verify(); err != nil {
		m.fail("Verify: %v", err)
	}
	for _, n := range m.nodes {
		if n.member && n.State == placement.Dead && n.used > 0 {
			m.fail("%d tasks still running on dead %s", n.used, n.ID)
		}
	}
	for _, k := range sortedKeys(m.queue) {
		mt := m.queue[k]
		waited := m.now.Sub(mt.first)
		w := max(mt.Wait, 0)
		for id, n := range m.nodes {
			if !m.takes(id) {
				continue
			}
			switch {
			case slices.Contains(mt.Prefer, id):
				m.fail("%v queued while its preferred %s has a free slot", k, id)
			case waited >= w && mt.ownerRack != "" && n.Rack == mt.ownerRack:
				m.fail("%v waited %v (wait %v) while %s in its owner's rack has a free slot", k, waited, w, id)
			case waited >= 2*w:
				m.fail("%v waited %v (wait %v) while %s has a free slot", k, waited, w, id)
			}
		}
	}
	for job, want := range m.cnt {
		got, err := m.p.Counters(job)
		if err != nil {
			m.fail("counters %q: %v", job, err)
		}
		for _, l := range placement.Localities {
			g := got.Level(l)
			g.TaskTime = 0
			if *g != *want.Level(l) {
				m.fail("job %q %v counters %+v, model %+v", job, l, *g, *want.Level(l))
			}
			if g.Placed != g.Completed+g.Running+g.Lost {
				m.fail("job %q %v: placed %d != completed %d + running %d + lost %d", job, l, g.Placed, g.Completed, g.Running, g.Lost)
			}
		}
		if got.Queued != want.Queued {
			m.fail("job %q queued %d, model %d", job, got.Queued, want.Queued)
		}
	}
	if m.p.Queued() != len(m.queue) || m.p.Running() != len(m.run) {
		m.fail("placer has %d queued %d running, model %d %d", m.p.Queued(), m.p.Running(), len(m.queue), len(m.run))
	}
}

func sortedKeys[V any](m map[[2]string]V) [][2]string {
	ks := make([][2]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b [2]string) int {
		if a[0] != b[0] {
			return compare(a[0], b[0])
		}
		return compare(a[1], b[1])
	})
	return ks
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestRandomOperations drives the placer with random operations (node
// churn, submits, batches, time, completions, cancels) and checks every
// decision against the model: no over-committed slot, nothing placed on a
// draining, dead or removed node, no step down while a preferred node has a
// free slot, no task left waiting past its wait while a slot it may use is
// free, and counters that add up (placed = completed + running + lost).
func TestRandomOperations(t *testing.T) {
	seeds, steps := 150, 400
	if testing.Short() || raceEnabled {
		seeds = 30
	}
	for seed := range seeds {
		ttl := 30 * time.Second
		p, err := placement.New(placement.Config{FirstSeenTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		m := &model{
			t: t, p: p, ttl: ttl,
			rng:   rand.New(rand.NewPCG(uint64(seed), 42)),
			now:   time.Unix(1000, 0),
			nodes: map[string]*mnode{},
			run:   map[[2]string]*mtask{},
			queue: map[[2]string]*mtask{},
			seen:  map[[2]string][2]time.Time{},
			cnt:   map[string]*placement.Counters{},
		}
		for range steps {
			m.step()
		}
	}
}
