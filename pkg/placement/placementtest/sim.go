package placementtest

import (
	"container/heap"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/locuscache/locus/pkg/placement"
)

// DefaultReplication is the preference-list length SimConfig defaults to:
// the cluster's default replication (membership.DefaultReplication, the
// cache nodes' --replication, which the scheduler follows), 2. This
// simulation is why the cluster default is 2 rather than owner-only lists
// (see TestSimAcceptance).
const DefaultReplication = 2

// SimConfig describes a simulated cluster and workload: a sequential stream
// of scan stages (a TPC-DS-like query mix) placed by a Placer on a virtual
// clock, one stage at a time, each stage starting when the previous one
// finished.
type SimConfig struct {
	Seed         uint64
	Nodes        int // default 24
	SlotsPerNode int // default 12
	Racks        int // default 4 (nodes are dealt round-robin)
	Replication  int // preference list length; default DefaultReplication (2)
	// Wait is each task's locality wait; default 3s. Negative: no wait.
	Wait time.Duration
	// Stages in the stream (in all streams together); default 200.
	Stages int
	// Streams is the number of concurrent query streams (TPC-DS's
	// throughput test runs several); each runs its stages one after the
	// other, the next starting when the previous finished. Default 1: one
	// sequential stream.
	Streams int
	// Load sets each stage's task count relative to the cluster's slots
	// (shared among the streams): a stage has
	// round(U(Load-0.5, Load+0.5) * slots / Streams) tasks, clamped to
	// [1, slots/Streams] when Load <= 1 ("tasks <= slots"). Default 1.
	Load float64
	// HotFraction of tasks read the hot set (dimension tables and recent
	// partitions: 12 small files); default 0.2.
	HotFraction float64
	// MedianTask is the median task duration when run data-local (the
	// durations are log-normal, sigma 0.8, so a few tasks run 5-10x longer);
	// default 1.5s. Rack-local tasks run 1.2x, other-local 1.4x longer.
	MedianTask time.Duration
	// Batch submits each stage with PlaceBatch; otherwise task by task
	// with Submit.
	Batch bool
	// Check verifies at every event, independently of the placer, that no
	// task waits past its wait while a slot it may use is free, and runs
	// the placer's own Verify every VerifyEvery events (default 1: every
	// event; Verify walks all tasks, so it dominates the cost).
	Check       bool
	VerifyEvery int
}

func (c *SimConfig) defaults() {
	if c.Nodes == 0 {
		c.Nodes = 24
	}
	if c.SlotsPerNode == 0 {
		c.SlotsPerNode = 12
	}
	if c.Racks == 0 {
		c.Racks = 4
	}
	if c.Replication == 0 {
		c.Replication = DefaultReplication
	}
	if c.Wait == 0 {
		c.Wait = 3 * time.Second
	}
	if c.Wait < 0 {
		c.Wait = 0
	}
	if c.Stages == 0 {
		c.Stages = 200
	}
	if c.Load == 0 {
		c.Load = 1
	}
	if c.Streams == 0 {
		c.Streams = 1
	}
	if c.VerifyEvery <= 0 {
		c.VerifyEvery = 1
	}
	if c.HotFraction == 0 {
		c.HotFraction = 0.2
	}
	if c.MedianTask == 0 {
		c.MedianTask = 1500 * time.Millisecond
	}
}

// SimResult is what a simulation measured.
type SimResult struct {
	Tasks      int
	ByLocality [placement.NumLocalities]int
	// Global counters at the end (hit ratios by locality).
	Counters placement.Counters
	// Makespan is the virtual time the stream took; Busy the fraction of
	// slot-time in use.
	Makespan time.Duration
	Busy     float64
	// MaxWait and P99Wait are over all tasks' waits for a slot.
	MaxWait, P99Wait time.Duration
	Events           int
	// Violations of the checks (Check), with the first few described.
	Violations int
	Examples   []string
}

// DataLocalRatio is the fraction of tasks placed DATA_LOCAL.
func (r SimResult) DataLocalRatio() float64 {
	return float64(r.ByLocality[placement.DataLocal-1]) / float64(max(r.Tasks, 1))
}

func (r SimResult) String() string {
	return fmt.Sprintf("tasks=%d data-local=%.4f rack=%.4f other=%.4f hit=%.3f (DL %.3f RL %.3f OL %.3f) makespan=%v busy=%.3f wait p99=%v max=%v violations=%d",
		r.Tasks, r.DataLocalRatio(),
		float64(r.ByLocality[1])/float64(max(r.Tasks, 1)), float64(r.ByLocality[2])/float64(max(r.Tasks, 1)),
		r.Counters.HitRatio(), r.Counters.DataLocal.HitRatio(), r.Counters.RackLocal.HitRatio(), r.Counters.OtherLocal.HitRatio(),
		r.Makespan.Round(time.Millisecond), r.Busy, r.P99Wait.Round(time.Millisecond), r.MaxWait.Round(time.Millisecond), r.Violations)
}

// simRing is a small consistent-hash ring (64 virtual nodes per node) so
// the simulator does not depend on pkg/ring.
type simRing struct {
	hashes []uint64
	owners []int
}

func mix(h uint64) uint64 { // splitmix64 finaliser
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

func hashString(s string) uint64 {
	f := fnv.New64a()
	f.Write([]byte(s))
	return mix(f.Sum64())
}

func newSimRing(nodes int) *simRing {
	type v struct {
		h uint64
		o int
	}
	var vs []v
	for n := range nodes {
		for i := range 64 {
			vs = append(vs, v{hashString("node-" + strconv.Itoa(n) + "-" + strconv.Itoa(i)), n})
		}
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].h < vs[j].h })
	r := &simRing{}
	for _, x := range vs {
		r.hashes = append(r.hashes, x.h)
		r.owners = append(r.owners, x.o)
	}
	return r
}

func (r *simRing) prefer(key string, rep int) []int {
	h := hashString(key)
	i := sort.Search(len(r.hashes), func(i int) bool { return r.hashes[i] >= h })
	var out []int
	for j := 0; len(out) < rep && j < len(r.hashes); j++ {
		o := r.owners[(i+j)%len(r.hashes)]
		if !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

// simTask is one task of the stream.
type simTask struct {
	stream   int
	job, id  string
	block    string
	prefer   []int
	bytes    int64
	dur      time.Duration // data-local duration
	submit   time.Time
	node     int
	loc      placement.Locality
	assigned bool
}

type completion struct {
	at time.Time
	t  *simTask
}

type completions []completion

func (c completions) Len() int { return len(c) }
func (c completions) Less(i, j int) bool {
	if !c[i].at.Equal(c[j].at) {
		return c[i].at.Before(c[j].at)
	}
	return c[i].t.id < c[j].t.id
}
func (c completions) Swap(i, j int)   { c[i], c[j] = c[j], c[i] }
func (c *completions) Push(x any)     { *c = append(*c, x.(completion)) }
func (c *completions) Pop() any       { x := (*c)[len(*c)-1]; *c = (*c)[:len(*c)-1]; return x }
func (c completions) peek() time.Time { return c[0].at }

type sim struct {
	cfg    SimConfig
	rng    *rand.Rand
	ring   *simRing
	p      *placement.Placer
	now    time.Time
	used   []int
	rackOf []int
	cached []map[string]bool // node -> blocks in its cache
	queued map[string]*simTask
	byID   map[string]*simTask // submitted, not yet placed
	done   completions
	res    SimResult
	waits  []time.Duration
	busy   float64 // slot-seconds in use
	last   time.Time
	fact   []string // fact blocks
	hot    []string // hot blocks
}

func nodeID(i int) string { return "n" + strconv.Itoa(i) }

// Simulate runs the stream and returns what it measured. It returns an
// error only for a broken placer (an error from a call that must succeed).
func Simulate(cfg SimConfig) (SimResult, error) {
	cfg.defaults()
	s := &sim{
		cfg:    cfg,
		rng:    rand.New(rand.NewPCG(cfg.Seed, 0x10c05)),
		ring:   newSimRing(cfg.Nodes),
		now:    Epoch,
		last:   Epoch,
		used:   make([]int, cfg.Nodes),
		rackOf: make([]int, cfg.Nodes),
		cached: make([]map[string]bool, cfg.Nodes),
		queued: map[string]*simTask{},
		byID:   map[string]*simTask{},
	}
	p, err := placement.New(placement.Config{})
	if err != nil {
		return s.res, err
	}
	s.p = p
	var nodes []placement.Node
	for i := range cfg.Nodes {
		s.rackOf[i] = i % cfg.Racks
		s.cached[i] = map[string]bool{}
		nodes = append(nodes, placement.Node{ID: nodeID(i), Rack: "r" + strconv.Itoa(i%cfg.Racks), Slots: cfg.SlotsPerNode})
	}
	if _, err := p.SetNodes(nodes, s.now); err != nil {
		return s.res, err
	}
	// The catalog: 8 fact tables of 20-160 files of 1-6 blocks, and a hot
	// set of 12 small files (dimension tables, recent partitions).
	for t := range 8 {
		for f := range 20 + s.rng.IntN(140) {
			for b := range 1 + s.rng.IntN(6) {
				s.fact = append(s.fact, fmt.Sprintf("s3://lake/fact%d/part-%04d.parquet#%d", t, f, b))
			}
		}
	}
	for f := range 12 {
		for b := range 1 + s.rng.IntN(2) {
			s.hot = append(s.hot, fmt.Sprintf("s3://lake/dim%d.parquet#%d", f, b))
		}
	}
	if err := s.run(); err != nil {
		return s.res, err
	}
	if cfg.Check {
		if err := p.Verify(); err != nil {
			s.violation("final Verify: %v", err)
		}
		if p.Queued() != 0 || p.Running() != 0 {
			s.violation("stream done with %d queued and %d running tasks", p.Queued(), p.Running())
		}
	}
	slots := cfg.Nodes * cfg.SlotsPerNode
	s.res.Makespan = s.now.Sub(Epoch)
	s.res.Busy = s.busy / (s.res.Makespan.Seconds() * float64(slots))
	s.res.Counters, _ = p.Counters("")
	slices.Sort(s.waits)
	if len(s.waits) > 0 {
		s.res.MaxWait = s.waits[len(s.waits)-1]
		s.res.P99Wait = s.waits[len(s.waits)*99/100]
	}
	return s.res, nil
}

// stage draws n tasks: a contiguous run of fact partitions (a scan of a
// date range, starting at a Zipf-popular offset) with 1, 2 or 4 splits
// per block (row groups smaller than a block), and a HotFraction of tasks
// on the hot set.
func (s *sim) stage(job, stage string, n int) []*simTask {
	var out []*simTask
	var si int
	fmt.Sscanf(stage, "s%d-", &si)
	add := func(block string) {
		t := &simTask{job: job, id: fmt.Sprintf("%s-t%d", stage, len(out)), block: block, stream: si}
		t.prefer = s.ring.prefer(block, s.cfg.Replication)
		t.bytes = 32 << 20
		sigma := 0.8
		t.dur = time.Duration(float64(s.cfg.MedianTask) * math.Exp(sigma*s.rng.NormFloat64()))
		out = append(out, t)
	}
	start := int(float64(len(s.fact)) * math.Pow(s.rng.Float64(), 2))
	for i := start; len(out) < n; i++ {
		if s.rng.Float64() < s.cfg.HotFraction {
			add(s.hot[s.rng.IntN(len(s.hot))])
			continue
		}
		block := s.fact[i%len(s.fact)]
		for range []int{1, 2, 4}[s.rng.IntN(3)] {
			if len(out) < n {
				add(block)
			}
		}
	}
	return out
}

func (s *sim) tick(to time.Time) {
	inUse := 0
	for _, u := range s.used {
		inUse += u
	}
	s.busy += to.Sub(s.last).Seconds() * float64(inUse)
	s.last = to
	s.now = to
}

type stream struct {
	stage, left int
}

// run drives the event loop: completions and placer deadlines, each stream
// submitting its next stage when its current one finished.
func (s *sim) run() error {
	slots := s.cfg.Nodes * s.cfg.SlotsPerNode
	streams := make([]*stream, s.cfg.Streams)
	perStream := (s.cfg.Stages + s.cfg.Streams - 1) / s.cfg.Streams
	start := func(i int) error {
		st := streams[i]
		n := int(math.Round((s.cfg.Load - 0.5 + s.rng.Float64()) * float64(slots) / float64(s.cfg.Streams)))
		if s.cfg.Load <= 1 {
			n = min(n, slots/s.cfg.Streams)
		}
		n = max(n, 1)
		job := fmt.Sprintf("q%d-%d", i, st.stage/3) // a query has 3 scan stages
		tasks := s.stage(job, fmt.Sprintf("s%d-%d", i, st.stage), n)
		st.left = len(tasks)
		st.stage++
		return s.submit(tasks)
	}
	for i := range streams {
		streams[i] = &stream{}
		if err := start(i); err != nil {
			return err
		}
	}
	s.assign(s.p.Advance(s.now))
	s.check()
	active := len(streams)
	for active > 0 {
		next, ok := s.p.NextDeadline()
		if len(s.done) > 0 && (!ok || !next.Before(s.done.peek())) {
			next, ok = s.done.peek(), true
		}
		if !ok {
			return fmt.Errorf("simulation stuck at %v: %d tasks queued, nothing scheduled", s.now.Sub(Epoch), len(s.queued))
		}
		s.tick(next)
		for len(s.done) > 0 && !s.done.peek().After(s.now) {
			c := heap.Pop(&s.done).(completion)
			if err := s.complete(c.t); err != nil {
				return err
			}
			st := streams[c.t.stream]
			if st.left--; st.left > 0 {
				continue
			}
			if st.stage < perStream {
				if err := start(c.t.stream); err != nil {
					return err
				}
			} else {
				active--
			}
		}
		s.assign(s.p.Advance(s.now))
		s.check()
	}
	return nil
}

func (s *sim) submit(tasks []*simTask) error {
	for _, t := range tasks {
		s.byID[t.id] = t
		t.submit = s.now
		s.queued[t.id] = t
	}
	if s.cfg.Batch {
		ts := make([]placement.Task, len(tasks))
		for i, t := range tasks {
			ts[i] = s.task(t)
		}
		as, err := s.p.PlaceBatch(ts, s.now)
		if err != nil {
			return err
		}
		s.assign(as)
		return nil
	}
	for _, t := range tasks {
		a, placed, err := s.p.Submit(s.task(t), s.now)
		if err != nil {
			return err
		}
		if placed {
			s.assign([]placement.Assignment{a})
		}
	}
	return nil
}

func (s *sim) task(t *simTask) placement.Task {
	pt := placement.Task{Job: t.job, ID: t.id, Wait: s.cfg.Wait, Prefer: make([]string, len(t.prefer))}
	if s.cfg.Wait == 0 {
		pt.Wait = -1
	}
	for i, n := range t.prefer {
		pt.Prefer[i] = nodeID(n)
	}
	return pt
}

func (s *sim) violation(format string, args ...any) {
	s.res.Violations++
	if len(s.res.Examples) < 5 {
		s.res.Examples = append(s.res.Examples, fmt.Sprintf("at %v: ", s.now.Sub(Epoch))+fmt.Sprintf(format, args...))
	}
}

func (s *sim) assign(as []placement.Assignment) {
	for _, a := range as {
		t := s.byID[a.Task]
		if t == nil || t.assigned {
			s.violation("assignment for unknown or placed task %s", a.Task)
			continue
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(a.Node, "n"))
		if s.used[n] >= s.cfg.SlotsPerNode {
			s.violation("task %s placed on full node %s", a.Task, a.Node)
		}
		s.used[n]++
		t.assigned, t.node, t.loc = true, n, a.Locality
		delete(s.queued, t.id)
		delete(s.byID, t.id)
		s.res.Tasks++
		s.res.ByLocality[a.Locality-1]++
		s.waits = append(s.waits, s.now.Sub(t.submit))
		d := t.dur
		switch a.Locality {
		case placement.RackLocal:
			d = d * 12 / 10
		case placement.OtherLocal:
			d = d * 14 / 10
		}
		heap.Push(&s.done, completion{at: s.now.Add(d), t: t})
	}
}

// complete reports a task's cache outcome: its block is a local hit if the
// node it ran on caches it, a peer hit if the block's owner does; the owner
// caches every block read through it (unbounded caches).
func (s *sim) complete(t *simTask) error {
	o := placement.Outcome{Bytes: t.bytes, Duration: t.dur}
	owner := t.prefer[0]
	switch {
	case s.cached[t.node][t.block]:
		o.LocalHit = t.bytes
	case s.cached[owner][t.block]:
		o.PeerHit = t.bytes
	default:
		o.Miss = t.bytes
	}
	if slices.Contains(t.prefer, t.node) {
		s.cached[t.node][t.block] = true
	} else {
		s.cached[owner][t.block] = true
	}
	s.used[t.node]--
	loc, err := s.p.Complete(t.job, t.id, o)
	if err != nil {
		return err
	}
	if loc != t.loc {
		s.violation("task %s completed as %v, placed as %v", t.id, loc, t.loc)
	}
	return nil
}

// check asserts, from the simulator's own bookkeeping, that no queued task
// waits while a slot it may use is free: a preferred node's at any time, a
// node of its owner's rack once its wait expired, any node once it expired
// twice.
func (s *sim) check() {
	s.res.Events++
	if !s.cfg.Check {
		return
	}
	if s.res.Events%s.cfg.VerifyEvery == 0 {
		if err := s.p.Verify(); err != nil {
			s.violation("Verify: %v", err)
		}
	}
	if len(s.queued) == 0 {
		return
	}
	rackFree := make([]bool, s.cfg.Racks)
	anyFree := false
	for n, u := range s.used {
		if u < s.cfg.SlotsPerNode {
			rackFree[s.rackOf[n]] = true
			anyFree = true
		}
	}
	if !anyFree {
		return
	}
	for _, t := range s.queued {
		waited := s.now.Sub(t.submit)
		for _, n := range t.prefer {
			if s.used[n] < s.cfg.SlotsPerNode {
				s.violation("task %s waits %v while preferred node n%d has a free slot", t.id, waited, n)
			}
		}
		if waited >= s.cfg.Wait && rackFree[s.rackOf[t.prefer[0]]] {
			s.violation("task %s waited %v (wait %v) while its owner's rack r%d has a free slot", t.id, waited, s.cfg.Wait, s.rackOf[t.prefer[0]])
		}
		if waited >= 2*s.cfg.Wait {
			s.violation("task %s waited %v (wait %v) while a slot is free", t.id, waited, s.cfg.Wait)
		}
	}
}
