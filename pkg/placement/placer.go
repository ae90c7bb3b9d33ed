package placement

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Placer is the placement state machine. See the package documentation for
// the ladder, the waits and the threading rule (not safe for concurrent
// use: the caller serialises every call, for example under one mutex).
type Placer struct {
	cfg   Config
	now   time.Time // latest time seen; earlier inputs are clamped to it
	nowNS int64     // now.UnixNano(): the ladder's arithmetic is on integers

	nodes    map[string]*node
	nodeList []*node   // every node ever seen, in first-seen order
	nodeHint nodeCache // in front of nodes (see lookupNode)
	racks    map[string]*rack
	free     nodeSet // alive member nodes with a free slot
	// aliveSlots is the total slots of alive member nodes (used or not).
	aliveSlots int

	// tasks indexes the queued and running tasks by (job, id): see
	// taskIndex. Its size is the number of queued and running tasks.
	tasks  taskIndex
	jobs   map[string]*jobState
	jobSeq uint64 // numbers jobs (jobState.num) in creation order
	// lastJob caches the last job looked up (a stream of calls is mostly
	// for one job).
	lastJob *jobState
	idle    jobList // jobs with no queued or running task, oldest idle first
	// forgotten names the jobs forgotten under Config.MaxJobs since the
	// last TakeForgotten (at most 2 x MaxJobs of them: older names go
	// first).
	forgotten []string

	global Counters
	exact  bool // the jobs' counters sum to global (no job forgotten, nothing imported)

	steps  deadlineQueue // queued tasks with a level step still ahead
	anyQ   list          // queued tasks at the "anywhere" level
	queued int

	dirty []*node // nodes that gained free capacity since the last catch-up
	// outbox holds the assignments made since the last Advance; outTask[i]
	// is the task of outbox[i], pending until Advance returns it. Both keep
	// their arrays across calls (AppendAdvance copies out of them).
	outbox  []Assignment
	outTask []*task
	leveled []*task // tasks that stepped down, to be placed by catchUp
	seq     uint64
	pool    []*task
	slab    []task // fresh records reserved by PlaceBatch
	fs      firstSeen
	b       batchScratch
}

type taskKey struct{ job, id string }

type taskState uint8

const (
	// stateFree: a fresh record, or a PlaceBatch task admitted (indexed)
	// but not placed or queued yet.
	stateFree taskState = iota
	stateQueued
	stateRunning
)

// Ladder levels of a queued task: which placements it may take now.
const (
	levelData  = 0 // data-local only
	levelRack  = 1 // data-local or rack-local
	levelOther = 2 // anywhere
)

type task struct {
	key       taskKey
	job       *jobState
	hash      uint64 // taskIndex hash of key (set by admit)
	prefer    []*node
	preferBuf [3]*node
	ownerRack *rack
	wait      time.Duration
	submitted time.Time
	startNS   int64 // submitted, in Unix ns: the ladder counts from it (see relevel)
	seq       uint64
	state     taskState
	// pending: placed by a catch-up inside Submit or PlaceBatch, but not
	// yet returned by Advance. The caller cannot know of the placement, so
	// until then the task behaves as queued (see unplace).
	pending bool
	// rekeyed: updated by the Rekey call under way (a later update of
	// the same task in that call is ignored).
	rekeyed bool

	// While queued.
	level         uint8
	rackAt, anyAt int64 // when the task reaches levelRack, levelOther (Unix ns)
	nextAt        int64 // its next step (the deadline queue's key)
	// Membership of Placer.steps while a level step is ahead: in its
	// sorted list (dlLink linked) or in its heap (heapIdx > 0).
	dlLink   link
	heapIdx  int32
	links    []link // one per preferred node: membership of node.waiters
	linkBuf  [3]link
	rackLink link // membership of ownerRack.waiters (level >= levelRack)
	anyLink  link // membership of Placer.anyQ (level == levelOther)

	// While running.
	node    *node
	loc     Locality
	placed  time.Time
	runLink link // membership of node.running
}

// levelAt is the ladder level the task has reached at now (Unix ns).
func (t *task) levelAt(now int64) uint8 {
	switch {
	case now >= t.anyAt:
		return levelOther
	case t.ownerRack != nil && now >= t.rackAt:
		return levelRack
	}
	return levelData
}

// nextStep is the time (Unix ns) of the task's next level step, if any.
func (t *task) nextStep() (int64, bool) {
	switch {
	case t.level == levelData && t.ownerRack != nil:
		return t.rackAt, true
	case t.level < levelOther:
		return t.anyAt, true
	}
	return 0, false
}

// addNS is a + b, saturating instead of overflowing (a huge Wait).
func addNS(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	if b < 0 && a < math.MinInt64-b {
		return math.MinInt64
	}
	return a + b
}

type rack struct {
	name    string
	free    nodeSet // alive member nodes of this rack with a free slot
	waiters list    // queued tasks at level >= levelRack owned in this rack
	usable  int     // member nodes of this rack that can take tasks (node.usable)
}

type node struct {
	id      string
	rack    *rack // nil: unknown rack
	state   NodeState
	member  bool // false: only named in a preference list, or removed
	slots   int
	used    int
	waiters list // queued tasks that prefer this node
	running list // tasks running here
	freePos int32
	rackPos int32
	dirty   bool
	// over: running more tasks than slots, allowed only because the
	// slots were lowered below the running count (cleared once below).
	over bool
	// PlaceBatch scratch.
	bEpoch uint32
	bIdx   int32
}

// takes reports whether a new task may be placed on n now.
func (n *node) takes() bool { return n.member && n.state == Alive && n.used < n.slots }

// usable reports whether n could take tasks at all.
func (n *node) usable() bool { return n.member && n.state == Alive && n.slots > 0 }

type jobState struct {
	name               string
	num                uint64 // unique, hashed with task ids (taskIndex)
	c                  Counters
	active             int // queued + running tasks
	idlePrev, idleNext *jobState
	inIdle             bool
	// Verify's scratch.
	vRunning, vQueued int
}

type jobList struct{ head, tail *jobState }

func (l *jobList) push(j *jobState) {
	j.idlePrev, j.idleNext, j.inIdle = l.tail, nil, true
	if l.tail != nil {
		l.tail.idleNext = j
	} else {
		l.head = j
	}
	l.tail = j
}

func (l *jobList) remove(j *jobState) {
	if !j.inIdle {
		return
	}
	if j.idlePrev != nil {
		j.idlePrev.idleNext = j.idleNext
	} else {
		l.head = j.idleNext
	}
	if j.idleNext != nil {
		j.idleNext.idlePrev = j.idlePrev
	} else {
		l.tail = j.idlePrev
	}
	j.idlePrev, j.idleNext, j.inIdle = nil, nil, false
}

// New returns an empty placer. Errors: ErrInvalidConfig.
func New(cfg Config) (*Placer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Placer{
		cfg:   cfg,
		nowNS: math.MinInt64,
		nodes: make(map[string]*node),
		racks: make(map[string]*rack),
		jobs:  make(map[string]*jobState),
		tasks: newTaskIndex(),
		fs:    firstSeen{ttl: cfg.FirstSeenTTL, max: cfg.FirstSeenMax},
		exact: true,
	}, nil
}

func (p *Placer) clock(now time.Time) time.Time {
	if now.After(p.now) || p.nowNS == math.MinInt64 {
		p.now = now
		p.nowNS = now.UnixNano()
	}
	return p.now
}

// ---- membership ----

// lookupNode returns the node with id, nil if never seen.
func (p *Placer) lookupNode(id string) *node {
	e := &p.nodeHint[p.nodeHint.slot(id)]
	if e.n != nil && e.id == id {
		return e.n
	}
	n := p.nodes[id]
	if n != nil {
		e.id, e.n = id, n
	}
	return n
}

func (p *Placer) internNode(id string) *node {
	if n := p.lookupNode(id); n != nil {
		return n
	}
	n := &node{id: id, freePos: -1, rackPos: -1}
	p.nodes[id] = n
	p.nodeList = append(p.nodeList, n)
	return n
}

func (p *Placer) internRack(name string) *rack {
	if name == "" {
		return nil
	}
	if r := p.racks[name]; r != nil {
		return r
	}
	r := &rack{name: name, free: nodeSet{rack: true}}
	p.racks[name] = r
	return r
}

// refresh puts n in or out of the free-slot indexes after any change.
func (p *Placer) refresh(n *node) {
	if n.takes() {
		p.free.add(n)
		if n.rack != nil {
			n.rack.free.add(n)
		}
		if !n.dirty {
			n.dirty = true
			p.dirty = append(p.dirty, n)
		}
		return
	}
	p.free.remove(n)
	if n.rack != nil {
		n.rack.free.remove(n)
	}
}

func checkNode(nd Node) error {
	switch {
	case nd.ID == "":
		return fmt.Errorf("%w: empty id", ErrInvalidNode)
	case nd.Slots < 0:
		return fmt.Errorf("%w: node %q has %d slots", ErrInvalidNode, nd.ID, nd.Slots)
	case nd.State > Dead:
		return fmt.Errorf("%w: node %q has state %v", ErrInvalidNode, nd.ID, nd.State)
	}
	return nil
}

// UpsertNode adds a node or changes its rack, slots or state at time now.
// A node turning Dead loses its running tasks (returned, and counted Lost).
// Lowering Slots below the running count keeps the running tasks; the node
// takes no new task until it is below its slots again. When a node stops
// taking tasks (draining, dead, 0 slots), queued tasks none of whose
// preferred nodes can take tasks any more end their data-local wait now.
// Call Advance afterwards: new capacity may let queued tasks run. Errors:
// ErrInvalidNode.
func (p *Placer) UpsertNode(nd Node, now time.Time) ([]Lost, error) {
	if err := checkNode(nd); err != nil {
		return nil, err
	}
	return p.upsert(nd, p.clock(now), nil), nil
}

func (p *Placer) upsert(nd Node, now time.Time, lost []Lost) []Lost {
	n := p.internNode(nd.ID)
	if n.member && n.state == Alive {
		p.aliveSlots -= n.slots
	}
	was, wasUsable := n.rack, n.usable()
	if wasUsable && was != nil {
		was.usable--
	}
	if r := p.internRack(nd.Rack); r != n.rack {
		if n.rack != nil {
			n.rack.free.remove(n)
		}
		n.rack = r
	}
	n.member, n.state, n.slots = true, nd.State, nd.Slots
	n.over = n.used > n.slots
	switch n.state {
	case Dead:
		lost = p.loseAll(n, lost)
	case Draining:
		p.unplacePending(n)
	}
	if n.state == Alive {
		p.aliveSlots += n.slots
	}
	if n.usable() && n.rack != nil {
		n.rack.usable++
	}
	p.refresh(n)
	p.hopeless(n)
	if wasUsable && (!n.usable() || n.rack != was) {
		p.rackless(was)
	}
	return lost
}

// RestartNode records that node nd's process restarted under the same id
// (a new boot the failure detector did not see die), at time now: its
// running tasks died with the old process and are returned as lost (and
// counted), its placements Advance has not returned yet are queued again,
// and it takes nd's rack, slots and state. The tasks waiting for it keep
// their waits: RemoveNode then UpsertNode would end the data-local wait
// of those that prefer only it, although it is back at once. Call Advance
// afterwards. Errors: ErrInvalidNode.
func (p *Placer) RestartNode(nd Node, now time.Time) ([]Lost, error) {
	if err := checkNode(nd); err != nil {
		return nil, err
	}
	now = p.clock(now)
	lost := p.loseAll(p.internNode(nd.ID), nil)
	return p.upsert(nd, now, lost), nil
}

// hopeless ends the data-local wait of n's waiters when n cannot take tasks
// and neither can any other node they prefer: waiting for a dead or
// draining node buys nothing.
func (p *Placer) hopeless(n *node) {
	if n.usable() {
		return
	}
	n.waiters.each(func(t *task) {
		if t.level != levelData {
			return
		}
		for _, m := range t.prefer {
			if m.usable() {
				return
			}
		}
		if shift := t.rackAt - p.nowNS; shift > 0 {
			t.rackAt = p.nowNS
			t.anyAt -= shift
		}
		old := t.level
		p.setLevel(t)
		p.steps.remove(t)
		p.enterLevel(t, old)
		p.leveled = append(p.leveled, t)
	})
}

// rackless ends the rack-local wait of r's waiters when no node of r but
// their preferred ones can take tasks any more (the last other one died,
// drained, left or moved): waiting there buys nothing. Those still at the
// data-local level skip the rack level when they reach it (setLevel).
func (p *Placer) rackless(r *rack) {
	if r == nil || r.waiters.n == 0 {
		return
	}
	var ended []*task
	r.waiters.each(func(t *task) {
		if t.level == levelRack && !t.rackHasOther() {
			ended = append(ended, t)
		}
	})
	for _, t := range ended {
		p.steps.remove(t)
		old := t.level
		p.setLevel(t)
		p.enterLevel(t, old)
		p.leveled = append(p.leveled, t)
	}
}

// rackHasOther reports whether the owner's rack has a node that can take
// tasks besides the task's preferred nodes: without one the rack level
// cannot be satisfied.
func (t *task) rackHasOther() bool {
	r := t.ownerRack
	if r == nil {
		return false
	}
	n := r.usable
	for _, m := range t.prefer {
		if m.rack == r && m.usable() {
			n--
		}
	}
	return n > 0
}

// setLevel sets the level the task has reached now. A task reaching the
// rack level of a rack with no node to offer (rackHasOther) goes on to
// the any level at once: a level that cannot be satisfied costs no wait.
func (p *Placer) setLevel(t *task) {
	t.level = t.levelAt(p.nowNS)
	if t.level == levelRack && !t.rackHasOther() {
		t.anyAt = p.nowNS
		t.level = levelOther
	}
}

// RemoveNode drops a node from the membership at time now. Its running
// tasks are returned as lost. Queued tasks that prefer it keep waiting for
// their other preferred nodes, or end their data-local wait if none is
// left (as in UpsertNode). Unknown ids are ignored.
func (p *Placer) RemoveNode(id string, now time.Time) []Lost {
	n := p.lookupNode(id)
	if n == nil || !n.member {
		return nil
	}
	return p.remove(n, p.clock(now), nil)
}

func (p *Placer) remove(n *node, now time.Time, lost []Lost) []Lost {
	if n.state == Alive {
		p.aliveSlots -= n.slots
	}
	wasUsable := n.usable()
	if wasUsable && n.rack != nil {
		n.rack.usable--
	}
	n.member = false
	p.refresh(n)
	lost = p.loseAll(n, lost)
	p.hopeless(n) // after loseAll, which may queue pending tasks again
	if wasUsable {
		p.rackless(n.rack)
	}
	return lost
}

// SetNodes replaces the membership at time now with nodes: listed nodes are
// upserted, members not listed are removed (see UpsertNode and RemoveNode).
// Running tasks of nodes that die or leave are returned as lost (and
// counted). The call is all-or-nothing: on error nothing changes. Call
// Advance afterwards. Errors: ErrInvalidNode.
func (p *Placer) SetNodes(nodes []Node, now time.Time) ([]Lost, error) {
	now = p.clock(now)
	seen := make(map[string]bool, len(nodes))
	for _, nd := range nodes {
		if err := checkNode(nd); err != nil {
			return nil, err
		}
		if seen[nd.ID] {
			return nil, fmt.Errorf("%w: node %q listed twice", ErrInvalidNode, nd.ID)
		}
		seen[nd.ID] = true
	}
	var lost []Lost
	for _, nd := range nodes {
		lost = p.upsert(nd, now, lost)
	}
	for _, n := range p.nodeList {
		if n.member && !seen[n.id] {
			lost = p.remove(n, now, lost)
		}
	}
	return lost, nil
}

// unplacePending queues again the tasks placed on n that Advance has not
// returned yet (n started draining: the caller must not learn of a new
// placement on it).
func (p *Placer) unplacePending(n *node) {
	for l := n.running.root.next; n.running.n > 0 && l != &n.running.root; {
		t := l.t
		l = l.next
		if t.pending {
			p.unplace(t)
		}
	}
}

// loseAll reports every task running on n as lost and frees its slots.
// Tasks whose placement Advance has not returned yet are queued again
// instead.
func (p *Placer) loseAll(n *node, lost []Lost) []Lost {
	for n.running.n > 0 {
		t := n.running.front()
		if t.pending {
			p.unplace(t)
			continue
		}
		lost = append(lost, p.lose(t))
	}
	return lost
}

func (p *Placer) lose(t *task) Lost {
	l := Lost{Job: t.key.job, Task: t.key.id, Node: t.node.id, Locality: t.loc, Placed: t.placed}
	p.unrun(t)
	for _, c := range [2]*Counters{&t.job.c, &p.global} {
		lc := c.Level(t.loc)
		lc.Running--
		lc.Lost++
	}
	p.forget(t)
	return l
}

// Nodes returns the member nodes sorted by id, with their slot usage.
func (p *Placer) Nodes() []NodeStatus {
	out := make([]NodeStatus, 0, len(p.nodeList))
	for _, n := range p.nodeList {
		if !n.member {
			continue
		}
		rk := ""
		if n.rack != nil {
			rk = n.rack.name
		}
		out = append(out, NodeStatus{
			Node: Node{ID: n.id, Rack: rk, Slots: n.slots, State: n.state},
			Used: n.used, Waiting: n.waiters.n,
		})
	}
	slices.SortFunc(out, func(a, b NodeStatus) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// ---- jobs ----

// findJob returns the job record of name, nil if none.
func (p *Placer) findJob(name string) *jobState {
	if j := p.lastJob; j != nil && j.name == name {
		return j
	}
	j := p.jobs[name]
	if j != nil {
		p.lastJob = j
	}
	return j
}

// job returns the job record of name, created if needed (which may forget
// the longest idle job under Config.MaxJobs).
func (p *Placer) job(name string) *jobState {
	if j := p.findJob(name); j != nil {
		return j
	}
	p.evictIdle(p.cfg.MaxJobs - 1)
	return p.newJob(name)
}

// evictIdle forgets the longest idle jobs until at most keep jobs are
// left or none is idle.
func (p *Placer) evictIdle(keep int) {
	for len(p.jobs) > keep && p.idle.head != nil {
		old := p.idle.head
		p.idle.remove(old)
		delete(p.jobs, old.name)
		if p.lastJob == old {
			p.lastJob = nil
		}
		p.exact = false
		if len(p.forgotten) >= 2*p.cfg.MaxJobs {
			// Nobody takes them: keep the latest MaxJobs (halving at
			// once keeps this O(1) per job, amortised, also through an
			// Import of many more jobs than MaxJobs).
			p.forgotten = append(p.forgotten[:0], p.forgotten[len(p.forgotten)-p.cfg.MaxJobs:]...)
		}
		p.forgotten = append(p.forgotten, old.name)
	}
}

// dropJob undoes newJob for a job that never held a task (a refused
// batch's).
func (p *Placer) dropJob(j *jobState) {
	p.idle.remove(j)
	delete(p.jobs, j.name)
	if p.lastJob == j {
		p.lastJob = nil
	}
}

// newJob creates the job record of name, which must not exist, evicting
// nothing.
func (p *Placer) newJob(name string) *jobState {
	p.jobSeq++
	j := &jobState{name: name, num: p.jobSeq}
	p.jobs[name] = j
	p.idle.push(j)
	p.lastJob = j
	return j
}

// TakeForgotten appends to dst the names of the jobs forgotten under
// Config.MaxJobs since its last call (at most 2 x MaxJobs, the latest) and
// returns it. A caller that keeps per-job counters elsewhere (the
// scheduler persists them in etcd) deletes theirs: Counters of a forgotten
// job is ErrUnknownJob.
func (p *Placer) TakeForgotten(dst []string) []string {
	dst = append(dst, p.forgotten...)
	clear(p.forgotten)
	p.forgotten = p.forgotten[:0]
	return dst
}

func (p *Placer) activate(j *jobState) {
	if j.active == 0 {
		p.idle.remove(j)
	}
	j.active++
}

func (p *Placer) deactivate(j *jobState) {
	j.active--
	if j.active == 0 {
		p.idle.push(j)
	}
}

// Counters returns a job's counters; the job "" means all jobs (the global
// counters). Errors: ErrUnknownJob.
func (p *Placer) Counters(job string) (Counters, error) {
	if job == "" {
		return p.global, nil
	}
	j := p.jobs[job]
	if j == nil {
		return Counters{}, fmt.Errorf("%w: %q", ErrUnknownJob, job)
	}
	return j.c, nil
}

// Jobs returns the names of the jobs that have counters, sorted.
func (p *Placer) Jobs() []string {
	out := make([]string, 0, len(p.jobs))
	for name := range p.jobs {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Queued is the number of queued tasks; Running the number of running ones.
func (p *Placer) Queued() int { return p.queued }

// Running is the number of placed tasks holding a slot.
func (p *Placer) Running() int { return p.tasks.n - p.queued }

// admit makes t, a new record with its key set, a task of its job: the job
// is created if needed (j, when not nil, is that job, found earlier, and h
// the hash of t in it), held active, and t is indexed.
func (p *Placer) admit(t *task, j *jobState, h uint64) {
	if j == nil {
		j = p.job(t.key.job)
		h = p.tasks.hashOf(j, t.key.id)
	}
	t.job, t.hash = j, h
	p.activate(j)
	p.tasks.insert(t)
}

// forget drops a task that is neither queued nor running any more, and
// recycles its record.
func (p *Placer) forget(t *task) {
	p.deactivate(t.job)
	p.tasks.remove(t)
	p.release(t)
}

// ---- tasks ----

func (p *Placer) alloc() *task {
	if n := len(p.pool); n > 0 {
		t := p.pool[n-1]
		p.pool = p.pool[:n-1]
		return t
	}
	if len(p.slab) > 0 {
		t := &p.slab[0]
		p.slab = p.slab[1:]
		return t
	}
	return &task{}
}

// reserve makes sure n task records can be had without allocating one by
// one: the missing ones come from one slab (a batch of 100k tasks makes one
// allocation, not 100k).
func (p *Placer) reserve(n int) {
	if missing := n - len(p.pool) - len(p.slab); missing > 0 {
		p.slab = make([]task, missing)
	}
}

func (p *Placer) release(t *task) {
	*t = task{}
	if len(p.pool) < 1<<16 {
		p.pool = append(p.pool, t)
	}
}

func checkTask(t *Task) error {
	switch {
	case t.Job == "":
		return fmt.Errorf("%w: empty job", ErrInvalidTask)
	case t.ID == "":
		return fmt.Errorf("%w: job %q: empty task id", ErrInvalidTask, t.Job)
	case len(t.Prefer) > MaxPrefer:
		return fmt.Errorf("%w: task %q: %d preferred nodes, at most %d", ErrInvalidTask, t.ID, len(t.Prefer), MaxPrefer)
	}
	for _, id := range t.Prefer {
		if id == "" {
			return fmt.Errorf("%w: task %q: empty node id in preference list", ErrInvalidTask, t.ID)
		}
	}
	return nil
}

// newTask fills t, a fresh record, for a task submitted at now: its
// preference list, the owner's rack, its first-seen time and its ladder.
func (p *Placer) newTask(t *task, in *Task, now time.Time) {
	t.key = taskKey{in.Job, in.ID}
	p.seq++
	t.seq = p.seq
	t.wait = in.Wait
	t.prefer = t.preferBuf[:0]
	hasData := false
	for _, id := range in.Prefer {
		n := p.internNode(id)
		if slices.Contains(t.prefer, n) {
			continue
		}
		t.prefer = append(t.prefer, n)
		hasData = hasData || n.usable()
	}
	if len(t.prefer) > 0 {
		t.ownerRack = t.prefer[0].rack
	}
	t.submitted = now
	cur := p.nowNS // submitted, in Unix ns
	if at, ok := p.fs.take(t.key, now); ok && at.Before(now) {
		t.submitted = at
		cur = addNS(p.nowNS, int64(at.Sub(now)))
	}
	t.startNS = cur
	// The ladder: each level that can be satisfied costs one wait. A task
	// whose preferred nodes are all unusable at submit time skips the
	// data-local wait; one whose owner's rack is unknown has no rack level.
	w := int64(max(t.wait, 0))
	if hasData {
		cur = addNS(cur, w)
	}
	t.rackAt = cur
	if t.ownerRack != nil {
		cur = addNS(cur, w)
	}
	t.anyAt = cur
	p.setLevel(t)
}

// owner is the id of the task's owner (Prefer[0]), "" if none.
func (t *task) owner() string {
	if len(t.prefer) == 0 {
		return ""
	}
	return t.prefer[0].id
}

// best returns the best node t may take at its level: a preferred node
// (owner first), then a node of the owner's rack, then any node; nil if
// none has a free slot.
func (p *Placer) best(t *task) *node {
	for _, n := range t.prefer {
		if n.takes() {
			return n
		}
	}
	if t.level >= levelRack && t.ownerRack != nil {
		if n := t.ownerRack.free.pick(); n != nil {
			return n
		}
	}
	if t.level >= levelOther {
		return p.free.pick()
	}
	return nil
}

func (t *task) classify(n *node) Locality {
	if slices.Contains(t.prefer, n) {
		return DataLocal
	}
	if t.ownerRack != nil && n.rack == t.ownerRack {
		return RackLocal
	}
	return OtherLocal
}

// place runs t (queued, or new and admitted) on n, which must take it.
func (p *Placer) place(t *task, n *node, now time.Time) {
	if t.state == stateQueued {
		p.dequeue(t)
	}
	t.state = stateRunning
	t.node = n
	t.loc = t.classify(n)
	t.placed = now
	n.used++
	n.running.pushBack(&t.runLink)
	t.runLink.t = t
	if n.used >= n.slots {
		p.refresh(n)
	}
	for _, c := range [2]*Counters{&t.job.c, &p.global} {
		lc := c.Level(t.loc)
		lc.Placed++
		lc.Running++
	}
}

// assignment writes the placement of t, a running task, to a (in place:
// the outbox's assignments are written where they stay).
func (t *task) assignment(a *Assignment) {
	n := t.node
	rk := ""
	if n.rack != nil {
		rk = n.rack.name
	}
	*a = Assignment{
		Job: t.key.job, Task: t.key.id, Node: n.id, Rack: rk, Locality: t.loc,
		Owner: t.owner(), Submitted: t.submitted, Placed: t.placed,
	}
}

// unrun takes a running task off its node and frees the slot.
func (p *Placer) unrun(t *task) {
	n := t.node
	n.running.remove(&t.runLink)
	n.used--
	if n.used <= n.slots {
		n.over = false
	}
	p.refresh(n)
}

// allocLinks gives t one waiting-list link per preferred node, in its
// inline buffer when the list fits.
func (t *task) allocLinks() {
	if len(t.prefer) <= len(t.linkBuf) {
		t.links = t.linkBuf[:len(t.prefer)]
	} else {
		t.links = make([]link, len(t.prefer))
	}
	for i := range t.links {
		t.links[i].t = t
	}
}

// enqueue queues t (admitted, not running).
func (p *Placer) enqueue(t *task) {
	t.state = stateQueued
	t.job.c.Queued++
	p.global.Queued++
	p.queued++
	t.allocLinks()
	for i, n := range t.prefer {
		n.waiters.pushBack(&t.links[i])
	}
	t.rackLink.t, t.anyLink.t = t, t
	p.enterLevel(t, levelData)
}

// enterLevel indexes t at its (new) level, coming from level old.
func (p *Placer) enterLevel(t *task, old uint8) {
	if old < levelRack && t.level >= levelRack && t.ownerRack != nil {
		t.ownerRack.waiters.pushBack(&t.rackLink)
	}
	if old < levelOther && t.level == levelOther {
		p.anyQ.pushBack(&t.anyLink)
	}
	if at, ok := t.nextStep(); ok {
		t.nextAt = at
		p.steps.push(t)
	}
}

func (p *Placer) dequeue(t *task) {
	for i, n := range t.prefer {
		n.waiters.remove(&t.links[i])
	}
	t.links = nil
	if t.rackLink.linked() {
		t.ownerRack.waiters.remove(&t.rackLink)
	}
	if t.anyLink.linked() {
		p.anyQ.remove(&t.anyLink)
	}
	p.steps.remove(t)
	t.job.c.Queued--
	p.global.Queued--
	p.queued--
	t.state = stateFree
}

// Submit offers one task at time now. If a slot its ladder allows at now is
// free (DATA_LOCAL at once; lower levels only when the task's first-seen
// time is old enough, or Wait <= 0), the task is placed and returned with
// placed = true. Otherwise it is queued and a later Advance will place it
// (placed = false). Submit first catches up with now (as Advance does); the
// assignments of queued tasks made on the way are returned by the next
// Advance. Errors: ErrInvalidTask, ErrDuplicateTask, ErrNoCapacity,
// ErrQueueFull (the task's first-seen time is remembered, as by Cancel); on
// error nothing is queued.
func (p *Placer) Submit(in Task, now time.Time) (a Assignment, placed bool, err error) {
	now = p.clock(now)
	if err := checkTask(&in); err != nil {
		return a, false, err
	}
	// The id is hashed once: the hash found here is the one admit indexes
	// the task under (a job seen for the first time is created by admit).
	j := p.findJob(in.Job)
	var h uint64
	if j != nil {
		h = p.tasks.hashOf(j, in.ID)
		if p.tasks.find(h, j, in.ID) != nil {
			return a, false, fmt.Errorf("%w: job %q task %q", ErrDuplicateTask, in.Job, in.ID)
		}
	}
	if p.aliveSlots == 0 {
		return a, false, ErrNoCapacity
	}
	p.catchUp(now) // neither creates nor forgets jobs: j stays valid
	t := p.alloc()
	p.newTask(t, &in, now)
	if n := p.best(t); n != nil {
		p.admit(t, j, h)
		p.place(t, n, now)
		t.assignment(&a)
		return a, true, nil
	}
	if p.queued >= p.cfg.MaxQueued {
		p.fs.remember(t.key, t.submitted, now)
		p.release(t)
		return a, false, fmt.Errorf("%w: %d tasks queued", ErrQueueFull, p.queued)
	}
	p.admit(t, j, h)
	p.enqueue(t)
	return a, false, nil
}

// Advance catches up with now and returns the assignments of queued tasks
// made since the last Advance (including those made while catching up inside
// Submit or PlaceBatch, which stay pending until returned here: see the
// package documentation). Call it after every Complete, Cancel, SetNodes,
// UpsertNode or RemoveNode, and when the time given by NextDeadline comes.
//
// Order of decisions: first, every node that gained a free slot gives it to
// the oldest queued task that prefers it (DATA_LOCAL); then tasks whose wait
// expired step down; then the remaining free slots of those nodes go to the
// oldest task waiting at rack level in the node's rack (RACK_LOCAL), then
// to the oldest task allowed anywhere; last, each task that just stepped
// down takes a free slot of its owner's rack, or any free slot at the last
// level. Afterwards no queued task has a free slot it may use.
//
// The returned slice is the caller's (nil when there is no assignment);
// AppendAdvance does the same without allocating it.
func (p *Placer) Advance(now time.Time) []Assignment {
	p.catchUp(p.clock(now))
	if len(p.outbox) == 0 {
		return nil
	}
	return p.drainOutbox(make([]Assignment, 0, len(p.outbox)))
}

// AppendAdvance is Advance appending the assignments to dst and returning
// the extended slice, so that a caller reusing its buffer (dst[:0]) makes
// no allocation in steady state.
func (p *Placer) AppendAdvance(dst []Assignment, now time.Time) []Assignment {
	p.catchUp(p.clock(now))
	return p.drainOutbox(dst)
}

// drainOutbox appends the pending assignments to dst: their tasks are no
// longer pending.
func (p *Placer) drainOutbox(dst []Assignment) []Assignment {
	if len(p.outbox) == 0 {
		return dst
	}
	for _, t := range p.outTask {
		t.pending = false
	}
	dst = append(dst, p.outbox...)
	// outTask, dirty and leveled are truncated without clearing: the stale
	// pointers left up to their high-water marks point to nodes (never
	// freed) and task records (mostly recycled through the pool). The
	// outbox holds the caller's strings: clear it.
	p.outTask = p.outTask[:0]
	clear(p.outbox)
	p.outbox = p.outbox[:0]
	return dst
}

// deliver places a queued task and keeps the assignment for Advance.
func (p *Placer) deliver(t *task, n *node, now time.Time) {
	p.place(t, n, now)
	p.outbox = append(p.outbox, Assignment{})
	t.assignment(&p.outbox[len(p.outbox)-1])
	p.outTask = append(p.outTask, t)
	t.pending = true
}

// unplace takes back a placement that Advance has not returned yet: the
// task is queued again as it was (same first-seen time and ladder), and the
// placement is not counted. Cancel does this before cancelling, and a node
// that dies or leaves does it instead of reporting the task lost.
func (p *Placer) unplace(t *task) {
	i := slices.Index(p.outTask, t)
	p.outTask = slices.Delete(p.outTask, i, i+1)
	p.outbox = slices.Delete(p.outbox, i, i+1)
	t.pending = false
	p.unrun(t)
	for _, c := range [2]*Counters{&t.job.c, &p.global} {
		lc := c.Level(t.loc)
		lc.Placed--
		lc.Running--
	}
	t.state, t.node, t.loc, t.placed = stateFree, nil, 0, time.Time{}
	p.setLevel(t)
	p.enqueue(t)
	p.leveled = append(p.leveled, t) // catch-up will look for a slot for it
}

// NextDeadline is the earliest time at which a queued task steps down a
// level: the caller should call Advance then. ok is false when no queued
// task has a step ahead.
func (p *Placer) NextDeadline() (at time.Time, ok bool) {
	t, ok := p.steps.min()
	if !ok {
		return time.Time{}, false
	}
	ns := t.nextAt
	// Relative to the latest time seen, so the answer keeps the caller's
	// location and monotonic clock reading.
	return p.now.Add(time.Duration(addNS(ns, -p.nowNS))), true
}

func (p *Placer) catchUp(now time.Time) {
	// 1. Freed slots go to their data-local waiters first.
	for _, n := range p.dirty {
		for n.waiters.n > 0 && n.takes() {
			p.deliver(n.waiters.front(), n, now)
		}
	}
	// 2. Expired waits step down (joining those whose preferred nodes all
	// became unusable, queued by hopeless).
	for {
		t, ok := p.steps.min()
		if !ok || t.nextAt > p.nowNS {
			break
		}
		p.steps.remove(t)
		old := t.level
		p.setLevel(t)
		p.enterLevel(t, old)
		p.leveled = append(p.leveled, t)
	}
	// 3. What is left of freed slots goes rack-local, then anywhere.
	for _, n := range p.dirty {
		n.dirty = false
		if n.rack != nil {
			for n.rack.waiters.n > 0 && n.takes() {
				p.deliver(n.rack.waiters.front(), n, now)
			}
		}
		for p.anyQ.n > 0 && n.takes() {
			p.deliver(p.anyQ.front(), n, now)
		}
	}
	p.dirty = p.dirty[:0]
	// 4. Tasks that stepped down take any slot their new level allows.
	for _, t := range p.leveled {
		if t.state != stateQueued {
			continue
		}
		if n := p.best(t); n != nil {
			p.deliver(t, n, now)
		}
	}
	p.leveled = p.leveled[:0]
}

func (p *Placer) lookup(job, id string) (*task, error) {
	j := p.findJob(job)
	if j == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownJob, job)
	}
	if t := p.tasks.find(p.tasks.hashOf(j, id), j, id); t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("%w: job %q task %q", ErrUnknownTask, job, id)
}

// Complete records that a running task finished: its slot is freed and its
// outcome is counted against the locality it was placed with, which is
// returned. Call Advance afterwards: a queued task may take the slot.
// Errors: ErrInvalidOutcome (nothing changes), ErrUnknownJob,
// ErrUnknownTask, ErrNotPlaced.
func (p *Placer) Complete(job, id string, o Outcome) (Locality, error) {
	if err := o.validate(); err != nil {
		return 0, err
	}
	t, err := p.lookup(job, id)
	if err != nil {
		return 0, err
	}
	if t.state != stateRunning || t.pending {
		return 0, fmt.Errorf("%w: job %q task %q", ErrNotPlaced, job, id)
	}
	loc := t.loc
	p.unrun(t)
	for _, c := range [2]*Counters{&t.job.c, &p.global} {
		lc := c.Level(loc)
		lc.Running--
		lc.Completed++
		lc.addOutcome(o)
	}
	p.forget(t)
	return loc, nil
}

// Cancel withdraws a task. A queued task is dropped and its first-seen time
// remembered (Config.FirstSeenTTL), so a resubmission keeps its place on the
// ladder: this is how the service defers tasks it will not wait for. A
// running task (placed, but the caller could not deliver the placement) is
// released and counted Lost. Call Advance afterwards. Errors: ErrUnknownJob,
// ErrUnknownTask.
func (p *Placer) Cancel(job, id string, now time.Time) error {
	now = p.clock(now)
	t, err := p.lookup(job, id)
	if err != nil {
		return err
	}
	if t.pending {
		p.unplace(t) // the caller never saw it placed: cancel it as queued
	}
	if t.state == stateRunning {
		p.lose(t)
		return nil
	}
	p.dequeue(t)
	p.fs.remember(t.key, t.submitted, now)
	p.forget(t)
	return nil
}
