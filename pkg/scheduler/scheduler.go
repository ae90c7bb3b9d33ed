package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/placement"
	"github.com/locuscache/locus/pkg/ring"
	"github.com/locuscache/locus/pkg/schedapi"
)

// Scheduler is the placement service: the placement core driven by the
// gossip membership, behind the JSON API and gRPC. Create it with New,
// Start it, and Shutdown at the end. Its methods (Place, PlaceBatch,
// Complete, ...) are what the HTTP and gRPC handlers call; they are safe for
// concurrent use.
type Scheduler struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	limits  struct{ single, batch int64 }

	settings atomic.Pointer[Settings]
	// replWarned is the last (configured, nodes') replication mismatch
	// logged, packed as configured<<32 | nodes', so each is logged once.
	replWarned atomic.Uint64
	// peersWarned is the last set of other schedulers (sorted, joined)
	// logged by checkPeers, so each set is logged once.
	peersWarned atomic.Pointer[string]
	// info maps node ids to their addresses and rack, from the last View
	// applied; replaced whole (never modified), read without a lock.
	info atomic.Pointer[map[string]membership.Member]

	mem    Membership
	ownMem *membership.Membership // the gossip membership Start created, if any

	httpLn, grpcLn     net.Listener
	httpSrv            *http.Server
	httpConns          connTracker // the HTTP connections with a call in flight
	grpcSrv            *grpc.Server
	health             *health.Server
	httpAdv, grpcAdv   string // advertised addresses
	handler            http.Handler
	ha                 *ha // nil when standalone
	isLeader, ready    atomic.Bool
	stopping           atomic.Bool
	leaderInfo         atomic.Pointer[LeaderInfo] // the current leader (with etcd)
	leaderErr          atomic.Pointer[string]     // why no leader is known (etcd unreachable), if so
	startOnce, endOnce sync.Once
	fwdOnce            sync.Once
	fwd                http.RoundTripper

	// mu guards the placer and everything that moves with it. The placer
	// is not safe for concurrent use: every call to it happens under mu.
	mu sync.Mutex
	// p is the placement state: nil on a follower, before Start and after
	// Shutdown.
	p *placement.Placer
	// waiters holds the queued tasks whose requests wait for their
	// placement: Advance's assignments are sent to them. Every queued task
	// has one (a request that stops waiting cancels its task).
	waiters map[taskKey]*waiter
	// batches are the batch requests still waiting for some of their
	// tasks; see PlaceBatch for when they are deferred.
	batches map[*batchWait]struct{}
	// applied is the last View applied to the placer; aliveSlots the slots
	// of its placeable members.
	applied    *membership.View
	aliveSlots int
	// armed is the deadline the timer goroutine sleeps until (zero: none).
	armed time.Time
	// lost is a ring of the most recently lost tasks (GET /v1/lost).
	lost     []schedapi.LostTask
	lostNext int
	stopped  bool
	// Persistence (with etcd): jobs whose counters changed since the last
	// flush, and the change sequence number.
	dirty       map[string]struct{}
	dirtyGlobal bool
	// boots is each cache member's NodeMeta.Boot in the View applied
	// last: a change is a restart (noteBootsLocked).
	boots map[string]uint64
	// drained are the cache nodes that left the membership while
	// draining, with tasks still running on them: a node's drain waits
	// for its reads in flight, not for the tasks placed on it, which may
	// still be computing at their executors when it leaves. The placer
	// keeps such a node (draining: never chosen) until its tasks
	// complete, so their completions count (keepDrainedLocked).
	drained map[string]placement.Node
	// unconfirmed are completions this term applied whose write to etcd
	// failed (the caller got 503): a retry, which the placer no longer
	// knows, is answered from here once the counters are written, instead
	// of 404 for a task that was completed. Oldest first, at most
	// maxUnconfirmed; cleared when the term ends.
	unconfirmed map[taskKey]placement.Locality
	unconfOrder []taskKey

	seq  atomic.Uint64 // counter-change sequence; written under mu
	kick chan struct{} // wakes the timer goroutine
	stop chan struct{} // closed by Shutdown
	wg   sync.WaitGroup
}

type taskKey struct{ job, task string }

// result is what a waiting request receives: its assignment, or the error
// that ended its wait (leadership lost, shutdown, no capacity left).
type result struct {
	a   placement.Assignment
	err error
	idx int
	seq uint64 // the counter-change sequence number after the placement
	// epoch is the ring epoch the placement was made with (the View
	// applied when it was made: the task's preference list is that ring's).
	epoch uint64
}

type waiter struct {
	ch    chan result // buffered: a send never blocks
	idx   int         // index in the batch
	batch *batchWait  // nil for a single Place
	// ringKey is the task's placement key: when the ring changes while
	// the task waits, its preference list is computed again from it
	// (rekeyLocked).
	ringKey string
}

// batchWait is a batch request waiting for the rest of its tasks.
type batchWait struct {
	deferCh chan struct{} // closed when the batch should stop waiting
	closed  bool          // guarded by Scheduler.mu
}

func (b *batchWait) release() {
	if !b.closed {
		b.closed = true
		close(b.deferCh)
	}
}

// LeaderInfo names a scheduler in the election.
type LeaderInfo struct {
	ID   string `json:"id"`
	HTTP string `json:"http"`
	GRPC string `json:"grpc"`
}

// New validates cfg and returns a Scheduler that is not started yet.
// Errors wrap ErrInvalidConfig.
func New(cfg Config) (*Scheduler, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Scheduler{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "scheduler", "id", cfg.NodeID),
		waiters: make(map[taskKey]*waiter),
		batches: make(map[*batchWait]struct{}),
		dirty:   make(map[string]struct{}),
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		lost:    make([]schedapi.LostTask, 0, min(cfg.LostLog, 1024)),
	}
	s.limits.single, s.limits.batch = cfg.MaxBodyBytes, cfg.MaxBatchBodyBytes
	s.settings.Store(&Settings{BlockSize: cfg.BlockSize, Replication: cfg.Replication, LocalityWait: cfg.LocalityWait})
	empty := map[string]membership.Member{}
	s.info.Store(&empty)
	s.metrics = newMetrics(s)
	s.handler = s.newHandler()
	return s, nil
}

// Settings returns the cluster settings in force (Config, overridden by
// etcd's cluster config).
func (s *Scheduler) Settings() Settings { return *s.settings.Load() }

// IsLeader reports whether this scheduler places tasks now: always once
// started when standalone; with etcd, while it holds the leadership.
func (s *Scheduler) IsLeader() bool { return s.isLeader.Load() }

// Leader returns the current leader as this scheduler knows it (itself
// when it leads); ok is false when none is known.
func (s *Scheduler) Leader() (LeaderInfo, bool) {
	if s.IsLeader() {
		return LeaderInfo{ID: s.cfg.NodeID, HTTP: s.httpAdv, GRPC: s.grpcAdv}, true
	}
	if l := s.leaderInfo.Load(); l != nil && l.ID != "" {
		return *l, true
	}
	return LeaderInfo{}, false
}

// Ready reports whether the scheduler serves placements here (/readyz):
// started, not stopping, and the leader (or a follower that forwards to a
// known leader); a leader whose block size differs from the cache nodes'
// (which fails every placement) is not ready, nor is a follower that
// forwards to it, the reason says why.
func (s *Scheduler) Ready() (bool, string) {
	switch {
	case !s.ready.Load():
		return false, "starting"
	case s.stopping.Load():
		return false, "shutting down"
	case s.IsLeader():
		if err := s.blockSizeError(); err != nil {
			return false, err.Error()
		}
		return true, "leader"
	}
	l, ok := s.Leader()
	if !ok {
		if e := s.leaderErr.Load(); e != nil {
			return false, "follower; no leader known (" + *e + ")"
		}
		return false, "follower; no leader elected"
	}
	if l.ID == s.cfg.NodeID {
		// The election still holds a key of this scheduler's last session
		// (not revoked yet): nobody places until it goes, and calls here
		// are answered 503, not forwarded.
		return false, "follower; the election still names this scheduler's last session (its lease is being revoked or expiring): no leader places"
	}
	if s.cfg.Etcd.Forward {
		// The leader places with the same cluster config (etcd's): when
		// its block size differs from the cache nodes', every call
		// forwarded to it fails.
		if err := s.blockSizeError(); err != nil {
			return false, "follower forwarding to the leader " + l.HTTP + ", which cannot place: " + err.Error()
		}
		return true, "follower; forwarding to the leader " + l.HTTP
	}
	return false, "follower; the leader is " + l.HTTP
}

// ---------------------------------------------------------------------
// Placement calls.

// prefer computes the preference list of a split on view: ring.PlacementKey
// with the cluster block size, then the first repl owners. It returns the
// key too (a queued task's list is computed again from it when the ring
// changes).
func (s *Scheduler) prefer(view *membership.View, repl int, bs int64, sp *schedapi.Split, buf []ring.Node, ids []string) ([]string, string, error) {
	key, err := ring.PlacementKey(sp.URI, sp.Offset, sp.Length, bs)
	if err != nil {
		return ids, "", badRequest("split: %v", err)
	}
	return ownerIDs(view.Ring, key, repl, buf, ids), key, nil
}

// ownerIDs appends to ids the ids of the first repl owners of key on r
// (buf is scratch).
func ownerIDs(r *ring.Ring, key string, repl int, buf []ring.Node, ids []string) []string {
	for _, n := range r.AppendOwners(buf[:0], key, repl) {
		ids = append(ids, n.ID)
	}
	return ids
}

// appliedRingLocked returns the View applied to the placer, and its
// replication under st, when its ring or replication differs from view's
// (nil otherwise): a request computed its preference lists on view, read
// before mu was taken, while a newer (or older) View was applied. The
// lists must be computed again on the applied ring with the applied
// replication, which every queued task's list comes from (applyView
// re-keys them when either changes). Caller holds mu.
func (s *Scheduler) appliedRingLocked(view *membership.View, st *Settings) (*membership.View, int) {
	a := s.applied
	if a == nil || a.Ring == nil {
		return nil, 0
	}
	if repl := replOf(a, st); a.Ring != view.Ring || repl != replOf(view, st) {
		return a, repl
	}
	return nil, 0
}

// blockSize is the block size placement keys use on view: the configured
// one (which must match the cache nodes'), else the cache nodes', else the
// default.
func (s *Scheduler) blockSize(view *membership.View, st *Settings) (int64, error) {
	cluster := view.BlockSize()
	if st.BlockSize > 0 {
		if cluster > 0 && cluster != st.BlockSize {
			return 0, fmt.Errorf("%w: this scheduler's block size is %s but the cache nodes use %s: start the scheduler with --block-size=%d (or fix the cluster config in etcd)",
				ErrUnavailable, membership.FormatBytes(st.BlockSize), membership.FormatBytes(cluster), cluster)
		}
		return st.BlockSize, nil
	}
	if cluster > 0 {
		return cluster, nil
	}
	return membership.DefaultBlockSize, nil
}

// blockSizeError is the error every placement gets now because the block
// size in force differs from the cache nodes' (nil when they agree).
func (s *Scheduler) blockSizeError() error {
	if s.mem == nil {
		return nil
	}
	_, err := s.blockSize(s.mem.View(), s.settings.Load())
	return err
}

// replicationOf is the replication placement uses on view: the cache
// nodes' (View.Replication), whatever st says; st's while no cache node
// announces one; else DefaultReplication. The second result is the
// configured value when it differs from the nodes' (0 when it does not).
func replicationOf(view *membership.View, st *Settings) (repl, mismatch int) {
	nodes := min(view.Replication(), placement.MaxPrefer)
	switch {
	case nodes > 0:
		if st.Replication > 0 && st.Replication != nodes {
			mismatch = st.Replication
		}
		return nodes, mismatch
	case st.Replication > 0:
		return st.Replication, 0
	}
	return DefaultReplication, 0
}

// replOf is replicationOf's replication.
func replOf(view *membership.View, st *Settings) int {
	r, _ := replicationOf(view, st)
	return r
}

// Replication returns the replication (preference-list length) placement
// uses now: the cache nodes', whatever the flags or etcd say (see
// Config.Replication).
func (s *Scheduler) Replication() int {
	if s.mem == nil {
		r, _ := replicationOf(&membership.View{}, s.settings.Load())
		return r
	}
	r, _ := replicationOf(s.mem.View(), s.settings.Load())
	return r
}

// checkReplication logs that the configured replication differs from the
// cache nodes' and that theirs is used: once, and again when either value
// changes. It is called when a View or the settings change, not per
// placement.
func (s *Scheduler) checkReplication(view *membership.View, st *Settings) {
	repl, configured := replicationOf(view, st)
	if configured == 0 {
		return
	}
	pair := uint64(configured)<<32 | uint64(repl)
	if s.replWarned.Swap(pair) == pair {
		return
	}
	s.log.Warn("scheduler: the configured replication differs from the cache nodes'; placing with the nodes' (a node serves a block from its own cache only when it is in the block's list of that length): drop --replication, or the replication in etcd's cluster config, or make it equal",
		"configured", configured, "nodes", repl)
}

// viewForPlacement returns the View, the replication and block size to
// place with, and ErrNoNode when no cache node is in it.
func (s *Scheduler) viewForPlacement() (*membership.View, *Settings, int, int64, error) {
	if s.mem == nil {
		return nil, nil, 0, 0, fmt.Errorf("%w: not started", ErrUnavailable)
	}
	view := s.mem.View()
	st := s.settings.Load()
	if view.Ring == nil {
		return nil, nil, 0, 0, fmt.Errorf("%w: no cache node in the cluster", ErrNoNode)
	}
	bs, err := s.blockSize(view, st)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	repl, _ := replicationOf(view, st)
	return view, st, repl, bs, nil
}

// leaderFirst returns the error that this scheduler may not place at all
// (a follower: ErrNotLeader naming the leader; stopped), if so, instead of
// err, an error of its own View (no cache node, a block size mismatch): a
// follower whose gossip has not seen the cache nodes yet must send the
// client to the leader, not answer that the cluster has no node.
func (s *Scheduler) leaderFirst(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lerr := s.leaderLocked(); lerr != nil {
		return lerr
	}
	return err
}

// leaderLocked returns nil when this scheduler may place now (mu held).
func (s *Scheduler) leaderLocked() error {
	switch {
	case s.stopped:
		return ErrStopped
	case s.p != nil:
		return nil
	case s.ha == nil:
		return fmt.Errorf("%w: not started", ErrUnavailable)
	}
	return s.notLeader()
}

func (s *Scheduler) notLeader() error {
	// The leader etcd names (watchLeader), not Leader(): a leader that
	// has just lost the leadership is still IsLeader while it builds this
	// error, and would name itself.
	var l LeaderInfo
	if p := s.leaderInfo.Load(); p != nil && p.ID != s.cfg.NodeID {
		l = *p
	}
	return &NotLeaderError{Leader: l.HTTP, LeaderGRPC: l.GRPC, LeaderID: l.ID}
}

// placeError maps the placer's errors onto the service's.
func placeError(err error) error {
	switch {
	case errors.Is(err, placement.ErrNoCapacity):
		return fmt.Errorf("%w: no alive cache node has a free slot or any slots at all (%v)", ErrNoNode, err)
	case errors.Is(err, placement.ErrQueueFull):
		return fmt.Errorf("%w: %v: retry later", ErrNoNode, err)
	case errors.Is(err, placement.ErrDuplicateTask):
		return fmt.Errorf("%w: %v: it is already queued or running; complete it first or use another task id", ErrConflict, err)
	case errors.Is(err, placement.ErrInvalidTask):
		return fmt.Errorf("%w: %v", ErrBadRequest, err)
	case errors.Is(err, placement.ErrUnknownJob), errors.Is(err, placement.ErrUnknownTask):
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	case errors.Is(err, placement.ErrNotPlaced):
		return fmt.Errorf("%w: %v: it is still waiting for a slot", ErrConflict, err)
	case errors.Is(err, placement.ErrInvalidOutcome):
		return fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return err
}

// Place places one task. When no slot its locality level allows is free
// it waits (delay scheduling: up to the wait for a data-local slot, as long
// again for rack-local, then any node) and, once it may go anywhere, for a
// slot to free up, for Config.MaxQueueWait more, or until ctx ends: then
// the task is cancelled and Place returns ErrNoNode. A caller whose ctx
// ends before the answer gets ctx's error and holds no slot (a placement
// made meanwhile is released, counted lost); so does a placement that
// could not be persisted to etcd (ErrUnavailable). Errors: ErrBadRequest,
// ErrConflict (task already queued or running), ErrNoNode (no cache node,
// no slots, or none freed in time), ErrNotLeader, ErrUnavailable,
// ErrStopped, ctx's error.
func (s *Scheduler) Place(ctx context.Context, req schedapi.PlaceRequest) (schedapi.Placement, error) {
	if err := req.Validate(s.cfg.MaxWait); err != nil {
		return schedapi.Placement{}, err
	}
	if err := ctx.Err(); err != nil { // the caller is gone: place nothing
		return schedapi.Placement{}, err
	}
	view, st, repl, bs, err := s.viewForPlacement()
	if err != nil {
		return schedapi.Placement{}, s.leaderFirst(err)
	}
	var nbuf [placement.MaxPrefer]ring.Node
	var ibuf [placement.MaxPrefer]string
	ids, ringKey, err := s.prefer(view, repl, bs, &req.Split, nbuf[:0], ibuf[:0])
	if err != nil {
		return schedapi.Placement{}, err
	}
	task := placement.Task{Job: req.Job, ID: req.Task, Prefer: ids, Wait: st.wait(req.WaitMS)}
	key := taskKey{req.Job, req.Task}

	s.mu.Lock()
	if err := s.leaderLocked(); err != nil {
		s.mu.Unlock()
		return schedapi.Placement{}, err
	}
	if v, r := s.appliedRingLocked(view, st); v != nil {
		view = v
		task.Prefer = ownerIDs(v.Ring, ringKey, r, nbuf[:0], ibuf[:0])
	}
	epoch := view.Epoch
	now := time.Now()
	a, placed, err := s.p.Submit(task, now)
	var w *waiter
	switch {
	case err != nil:
	case placed:
		s.placedLocked(a)
	default:
		w = &waiter{ch: make(chan result, 1), ringKey: ringKey}
		s.waiters[key] = w
	}
	s.settleLocked(now)
	seq := s.seq.Load()
	s.mu.Unlock()
	if err != nil {
		return schedapi.Placement{}, placeError(err)
	}
	if w != nil {
		var e uint64
		if a, seq, e, err = s.await(ctx, key, w, s.queueLimit(task.Wait)); err != nil {
			return schedapi.Placement{}, err
		}
		if e != 0 {
			epoch = e
		}
	}
	err = s.persisted(ctx, seq)
	if ctx.Err() != nil || err != nil {
		// The caller left while we took the lock or persisted, or the
		// placement could not be made durable (etcd failing): the caller
		// gets an error, so nobody will complete the task; release its
		// slot (counted lost) so a retry can place it again.
		s.cancelPlaced([]placement.Assignment{a}, releaseReason(ctx))
		if ctx.Err() != nil {
			return schedapi.Placement{}, ctx.Err()
		}
		return schedapi.Placement{}, err
	}
	return s.placementOf(a, epoch), nil
}

// queueLimit is how long a request waits for a task with locality wait
// w: its two locality waits, then Config.MaxQueueWait for a free slot.
func (s *Scheduler) queueLimit(w time.Duration) time.Duration {
	return 2*w + s.cfg.MaxQueueWait
}

// await waits for a queued task's assignment (see Place), at most limit.
// It returns the assignment, the counter-change sequence number to persist
// and the ring epoch of the placement.
func (s *Scheduler) await(ctx context.Context, key taskKey, w *waiter, limit time.Duration) (placement.Assignment, uint64, uint64, error) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	var why error
	select {
	case r := <-w.ch:
		return r.a, r.seq, r.epoch, r.err
	case <-timer.C:
		why = fmt.Errorf("%w: no node could take the task within %v (its locality waits, then --max-queue-wait %v; every slot it may use is busy): retry later",
			ErrNoNode, limit.Round(time.Millisecond), s.cfg.MaxQueueWait)
	case <-ctx.Done():
		why = ctx.Err()
	}
	s.mu.Lock()
	if s.waiters[key] == w {
		delete(s.waiters, key)
		if s.p != nil {
			now := time.Now()
			_ = s.p.Cancel(key.job, key.task, now)
			s.settleLocked(now)
		}
		s.mu.Unlock()
		return placement.Assignment{}, 0, 0, why
	}
	s.mu.Unlock()
	// The assignment (or an error) was sent before we took the lock.
	r := <-w.ch
	if r.err != nil {
		return r.a, 0, 0, r.err
	}
	if ctx.Err() != nil {
		// Nobody will learn of the placement: release the slot (counted lost).
		s.cancelPlaced([]placement.Assignment{r.a}, "request cancelled")
		return placement.Assignment{}, 0, 0, ctx.Err()
	}
	return r.a, r.seq, r.epoch, nil
}

// cancelPlaced releases placements the client will never see.
func (s *Scheduler) cancelPlaced(as []placement.Assignment, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		return
	}
	now := time.Now()
	for _, a := range as {
		if s.p.Cancel(a.Job, a.Task, now) == nil {
			s.recordLostLocked([]placement.Lost{{Job: a.Job, Task: a.Task, Node: a.Node, Locality: a.Locality, Placed: a.Placed}}, reason, now)
		}
	}
	s.settleLocked(now)
}

// DeferredNoSlot and DeferredTimeout are the Error of batch members that
// were not placed (see PlaceBatch).
const (
	DeferredNoSlot  = "deferred: no free slot; complete running tasks and resubmit (the task keeps its place in the locality wait)"
	DeferredTimeout = "deferred: no slot the task may use freed up in time; resubmit (the task keeps its place in the locality wait)"
)

// PlaceBatch places a whole stage (see placement.Placer.PlaceBatch: a
// maximum matching of tasks to their preferred nodes' free slots, then
// rack-local, then any, as the tasks' waits allow).
//
// The batch returns when every task is placed, or as soon as no alive node
// has a free slot, or after twice the tasks' wait plus Config.MaxQueueWait. While some node has a
// free slot, the tasks left wait for it as their locality waits run out (a
// data-local slot may also free up meanwhile): that wait always ends,
// because a task whose waits are over takes any free slot. When no slot is
// free, only a Complete can free one; the client holds the slots of the
// tasks it already got and cannot complete them before the batch returns,
// so waiting could deadlock: the tasks left come back with Error =
// DeferredNoSlot (no Node), and are cancelled keeping their first-seen
// time, so resubmitting them continues their locality waits. Errors (for
// the whole batch): ErrBadRequest, ErrConflict (a task already queued or
// running), ErrNoNode, ErrNotLeader, ErrUnavailable, ErrStopped, ctx's.
func (s *Scheduler) PlaceBatch(ctx context.Context, req schedapi.PlaceBatchRequest) (schedapi.PlaceBatchResponse, error) {
	if err := req.Validate(s.cfg.MaxWait, s.cfg.MaxBatchTasks); err != nil {
		return schedapi.PlaceBatchResponse{}, err
	}
	if err := ctx.Err(); err != nil { // the caller is gone: place nothing
		return schedapi.PlaceBatchResponse{}, err
	}
	view, st, repl, bs, err := s.viewForPlacement()
	if err != nil {
		return schedapi.PlaceBatchResponse{}, s.leaderFirst(err)
	}
	n := len(req.Tasks)
	tasks := make([]placement.Task, n)
	keys := make([]string, n)
	ids := make([]string, 0, n*min(repl, len(view.Members)))
	var nbuf [placement.MaxPrefer]ring.Node
	wait := st.wait(req.WaitMS)
	for i := range req.Tasks {
		start := len(ids)
		if ids, keys[i], err = s.prefer(view, repl, bs, &req.Tasks[i].Split, nbuf[:0], ids); err != nil {
			return schedapi.PlaceBatchResponse{}, badRequest("tasks[%d] (%q): %v", i, req.Tasks[i].Task, schedapi.StripBadRequest(err))
		}
		tasks[i] = placement.Task{Job: req.Job, ID: req.Tasks[i].Task, Prefer: ids[start:len(ids):len(ids)], Wait: wait}
	}

	res := make([]placement.Assignment, n)
	s.mu.Lock()
	if err := s.leaderLocked(); err != nil {
		s.mu.Unlock()
		return schedapi.PlaceBatchResponse{}, err
	}
	if v, r := s.appliedRingLocked(view, st); v != nil {
		view = v
		ids = ids[:0]
		for i := range tasks {
			start := len(ids)
			ids = ownerIDs(v.Ring, keys[i], r, nbuf[:0], ids)
			tasks[i].Prefer = ids[start:len(ids):len(ids)]
		}
	}
	epochs := make([]uint64, n) // the ring epoch of each placement
	for i := range epochs {
		epochs[i] = view.Epoch
	}
	now := time.Now()
	as, err := s.p.PlaceBatch(tasks, now)
	if err != nil {
		s.settleLocked(now)
		s.mu.Unlock()
		return schedapi.PlaceBatchResponse{}, placeError(err)
	}
	// as is in input order: match it to the tasks.
	var unplaced []int
	j := 0
	for i := range tasks {
		if j < len(as) && as[j].Task == tasks[i].ID {
			res[i] = as[j]
			s.placedLocked(as[j])
			j++
		} else {
			unplaced = append(unplaced, i)
		}
	}
	var bw *batchWait
	var ch chan result
	if len(unplaced) > 0 {
		bw = &batchWait{deferCh: make(chan struct{})}
		ch = make(chan result, len(unplaced))
		for _, i := range unplaced {
			s.waiters[taskKey{req.Job, tasks[i].ID}] = &waiter{ch: ch, idx: i, batch: bw, ringKey: keys[i]}
		}
		s.batches[bw] = struct{}{}
	}
	s.settleLocked(now)
	seq := s.seq.Load()
	s.mu.Unlock()

	var reason string
	if bw != nil {
		var last uint64
		if reason, last, err = s.awaitBatch(ctx, req.Job, tasks, unplaced, bw, ch, res, epochs, s.queueLimit(wait)); err != nil {
			return schedapi.PlaceBatchResponse{}, err
		}
		seq = max(seq, last)
	}
	err = s.persisted(ctx, seq)
	if ctx.Err() != nil || err != nil { // see Place
		var placed []placement.Assignment
		for i := range res {
			if res[i].Node != "" {
				placed = append(placed, res[i])
			}
		}
		s.cancelPlaced(placed, releaseReason(ctx))
		if ctx.Err() != nil {
			return schedapi.PlaceBatchResponse{}, ctx.Err()
		}
		return schedapi.PlaceBatchResponse{}, err
	}
	out := schedapi.PlaceBatchResponse{Placements: make([]schedapi.Placement, n)}
	info := *s.info.Load()
	for i := range res {
		if res[i].Node == "" {
			out.Placements[i] = schedapi.Placement{Task: tasks[i].ID, Error: reason}
			continue
		}
		out.Placements[i] = placementWith(info, res[i], epochs[i])
	}
	return out, nil
}

// awaitBatch waits for the unplaced tasks of a batch (see PlaceBatch) and
// fills res (and epochs, the ring epoch of each placement); it returns why
// the tasks still unplaced (Node "") were deferred, and the change sequence
// number to persist.
func (s *Scheduler) awaitBatch(ctx context.Context, job string, tasks []placement.Task, unplaced []int, bw *batchWait, ch chan result, res []placement.Assignment, epochs []uint64, limit time.Duration) (string, uint64, error) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	remaining := len(unplaced)
	reason := DeferredNoSlot
	var failure error
	var seq uint64
	take := func(r result) {
		remaining--
		switch {
		case r.err == nil:
			res[r.idx] = r.a
			if r.epoch != 0 {
				epochs[r.idx] = r.epoch
			}
			seq = max(seq, r.seq)
		case errors.Is(r.err, ErrNoNode): // this task is deferred, not the batch failed
			reason = "deferred: " + r.err.Error()
		default:
			failure = r.err
		}
	}
wait:
	for remaining > 0 {
		select {
		case r := <-ch:
			take(r)
		case <-bw.deferCh:
			break wait
		case <-timer.C:
			reason = DeferredTimeout
			break wait
		case <-ctx.Done():
			failure = ctx.Err()
			break wait
		}
	}
	s.mu.Lock()
	delete(s.batches, bw)
	if remaining > 0 {
		now := time.Now()
		for _, i := range unplaced {
			k := taskKey{job, tasks[i].ID}
			if w := s.waiters[k]; w != nil && w.batch == bw {
				delete(s.waiters, k)
				if s.p != nil {
					_ = s.p.Cancel(job, tasks[i].ID, now)
				}
			}
		}
		if s.p != nil {
			s.settleLocked(now)
		}
	}
	s.mu.Unlock()
	// Collect what was delivered before we took the lock.
	for remaining > 0 {
		select {
		case r := <-ch:
			take(r)
			continue
		default:
		}
		break
	}
	if failure != nil {
		// The client will not see these placements: release them.
		var placed []placement.Assignment
		for i := range res {
			if res[i].Node != "" {
				placed = append(placed, res[i])
			}
		}
		if errors.Is(failure, ErrNotLeader) || errors.Is(failure, ErrStopped) {
			return "", 0, failure // the placer is gone with them
		}
		s.cancelPlaced(placed, "request cancelled")
		return "", 0, failure
	}
	return reason, seq, nil
}

// Complete records a finished task: its slot is freed and its outcome
// (bytes by source) is counted against the locality it was placed with.
// Errors: ErrBadRequest, ErrNotFound (unknown job, or a task that is not
// running: never placed, completed already, or lost), ErrConflict (the
// task is still waiting for its placement), ErrNotLeader, ErrUnavailable,
// ErrStopped.
func (s *Scheduler) Complete(ctx context.Context, req schedapi.CompleteRequest) (schedapi.CompleteResponse, error) {
	if err := req.Validate(); err != nil {
		return schedapi.CompleteResponse{}, err
	}
	t := schedapi.CompleteTask{Task: req.Task, Bytes: req.Bytes, LocalHitBytes: req.LocalHitBytes, PeerHitBytes: req.PeerHitBytes, MissBytes: req.MissBytes, DurationMS: req.DurationMS}
	s.mu.Lock()
	if err := s.leaderLocked(); err != nil {
		s.mu.Unlock()
		return schedapi.CompleteResponse{}, err
	}
	key := taskKey{req.Job, req.Task}
	loc, err := s.p.Complete(req.Job, req.Task, outcomeOf(&t))
	retry := false
	if err == nil {
		s.markDirtyLocked(req.Job)
		s.dropIdleDrainedLocked(time.Now())
		s.settleLocked(time.Now())
	} else if l, ok := s.unconfirmed[key]; ok && errors.Is(placeError(err), ErrNotFound) {
		loc, err, retry = l, nil, true
	}
	seq := s.seq.Load()
	s.mu.Unlock()
	if err != nil {
		return schedapi.CompleteResponse{}, placeError(err)
	}
	if err := s.persisted(ctx, seq); err != nil {
		if !retry {
			s.noteUnconfirmed([]taskKey{key}, []placement.Locality{loc})
		}
		return schedapi.CompleteResponse{}, err
	}
	if retry {
		s.confirmed([]taskKey{key})
	}
	return schedapi.CompleteResponse{Job: req.Job, Task: req.Task, Locality: loc.String()}, nil
}

// maxUnconfirmed bounds Scheduler.unconfirmed.
const maxUnconfirmed = 4096

// noteUnconfirmed records completions applied but not written to etcd
// (their callers got 503 and will retry).
func (s *Scheduler) noteUnconfirmed(keys []taskKey, locs []placement.Locality) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		return // the term ended: its completions are the next leader's lost tasks
	}
	if s.unconfirmed == nil {
		s.unconfirmed = map[taskKey]placement.Locality{}
	}
	for i, k := range keys {
		if _, ok := s.unconfirmed[k]; !ok {
			s.unconfOrder = append(s.unconfOrder, k)
		}
		s.unconfirmed[k] = locs[i]
	}
	for len(s.unconfOrder) > maxUnconfirmed {
		delete(s.unconfirmed, s.unconfOrder[0])
		s.unconfOrder = s.unconfOrder[1:]
	}
}

// confirmed forgets completions whose retry was answered: their counters
// are in etcd now.
func (s *Scheduler) confirmed(keys []taskKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		delete(s.unconfirmed, k)
	}
	if len(s.unconfirmed) == 0 {
		s.unconfOrder = s.unconfOrder[:0]
	}
}

// CompleteBatch completes several tasks of one job in one call. Each task
// gets its own result (a task the scheduler does not hold does not fail
// the others); the call itself fails only for bad input or when this
// scheduler cannot record anything (ErrNotLeader, ErrUnavailable,
// ErrStopped). Entries apply in order, as that many Complete calls would:
// a task listed twice is completed by its first entry, and its later
// entries get ErrNotFound saying so (JSON and gRPC alike: both call this).
func (s *Scheduler) CompleteBatch(ctx context.Context, req schedapi.CompleteBatchRequest) (schedapi.CompleteBatchResponse, error) {
	if err := req.Validate(s.cfg.MaxBatchTasks); err != nil {
		return schedapi.CompleteBatchResponse{}, err
	}
	out := schedapi.CompleteBatchResponse{Results: make([]schedapi.CompleteResult, len(req.Tasks))}
	s.mu.Lock()
	if err := s.leaderLocked(); err != nil {
		s.mu.Unlock()
		return schedapi.CompleteBatchResponse{}, err
	}
	done := 0
	var applied, retried []taskKey
	var locs []placement.Locality
	// doneAt maps tasks to the entry that completed them, built on the
	// first not-found (to tell a task listed twice from an unknown one).
	var doneAt map[string]int
	for i := range req.Tasks {
		t := &req.Tasks[i]
		key := taskKey{req.Job, t.Task}
		loc, err := s.p.Complete(req.Job, t.Task, outcomeOf(t))
		if err != nil {
			err = placeError(err)
			if l, ok := s.unconfirmed[key]; ok && errors.Is(err, ErrNotFound) {
				// A retry of a completion applied earlier, unwritten.
				retried = append(retried, key)
				out.Results[i] = schedapi.CompleteResult{Task: t.Task, Locality: l.String(), Status: http.StatusOK}
				continue
			}
			if errors.Is(err, ErrNotFound) {
				if doneAt == nil {
					doneAt = completedEntries(out.Results[:i])
				}
				if j, ok := doneAt[t.Task]; ok {
					err = fmt.Errorf("%w: job %q task %q is listed twice in the batch: tasks[%d] completed it, tasks[%d] repeats it", ErrNotFound, req.Job, t.Task, j, i)
				}
			}
			code := CodeOf(err)
			out.Results[i] = schedapi.CompleteResult{Task: t.Task, Error: err.Error(), Code: code, Status: schedapi.StatusOfCode(code)}
			continue
		}
		done++
		applied, locs = append(applied, key), append(locs, loc)
		out.Results[i] = schedapi.CompleteResult{Task: t.Task, Locality: loc.String(), Status: http.StatusOK}
		if doneAt != nil {
			doneAt[t.Task] = i
		}
	}
	if done > 0 {
		s.markDirtyLocked(req.Job)
		s.dropIdleDrainedLocked(time.Now())
		s.settleLocked(time.Now())
	}
	seq := s.seq.Load()
	s.mu.Unlock()
	if done == 0 && len(retried) == 0 {
		// Nothing changed: nothing to wait for. (Was: a leader that had
		// changed no counter in its term yet took its own term's start
		// for an earlier term's change and answered 503 not_leader.)
		return out, nil
	}
	if err := s.persisted(ctx, seq); err != nil {
		if len(applied) > 0 {
			s.noteUnconfirmed(applied, locs)
		}
		return schedapi.CompleteBatchResponse{}, err
	}
	if len(retried) > 0 {
		s.confirmed(retried)
	}
	return out, nil
}

// completedEntries maps the tasks of the successful results to their
// index.
func completedEntries(rs []schedapi.CompleteResult) map[string]int {
	m := make(map[string]int)
	for i := range rs {
		if rs[i].Status == http.StatusOK {
			m[rs[i].Task] = i
		}
	}
	return m
}

// JobCounters returns a job's counters; job "" means every job together.
// On a follower they are read from etcd (the leader persists them before
// answering each call). Errors: ErrNotFound, ErrUnavailable.
func (s *Scheduler) JobCounters(ctx context.Context, job string) (schedapi.JobCounters, error) {
	if job != "" {
		if err := schedapi.CheckName("job", job); err != nil {
			return schedapi.JobCounters{}, err
		}
	}
	s.mu.Lock()
	if s.p != nil {
		c, err := s.p.Counters(job)
		s.mu.Unlock()
		if err != nil {
			return schedapi.JobCounters{}, fmt.Errorf("%w: job %q: no task of it was placed here (or it was forgotten under the job limit)", ErrNotFound, job)
		}
		return countersFrom(job, c), nil
	}
	s.mu.Unlock()
	if s.ha != nil {
		c, err := s.ha.loadCounters(ctx, job)
		if err != nil {
			return schedapi.JobCounters{}, err
		}
		return countersFrom(job, c), nil
	}
	return schedapi.JobCounters{}, fmt.Errorf("%w: not started", ErrUnavailable)
}

// Jobs lists the jobs with counters, sorted (on a follower, those
// persisted in etcd).
func (s *Scheduler) Jobs(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	if s.p != nil {
		defer s.mu.Unlock()
		return s.p.Jobs(), nil
	}
	s.mu.Unlock()
	if s.ha != nil {
		return s.ha.listJobs(ctx)
	}
	return []string{}, nil
}

// Lost returns the most recently lost tasks (of job, or all jobs for ""),
// oldest first.
func (s *Scheduler) Lost(job string) []schedapi.LostTask {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]schedapi.LostTask, 0)
	n := len(s.lost)
	for i := 0; i < n; i++ {
		l := s.lost[(s.lostNext+i)%n]
		if job == "" || l.Job == job {
			out = append(out, l)
		}
	}
	return out
}

// Ring returns the members the scheduler sees, with slot usage, and the
// settings placement uses (the replication in use: the cache nodes').
func (s *Scheduler) Ring() schedapi.RingStatus {
	st := s.settings.Load()
	out := schedapi.RingStatus{
		Replication: s.Replication(),
		Scheduler:   s.cfg.NodeID,
		Leader:      s.IsLeader(),
		Standalone:  s.ha == nil,
		Members:     []schedapi.RingMember{},
	}
	if st.LocalityWait > 0 {
		out.LocalityMS = st.LocalityWait.Milliseconds()
	}
	if l, ok := s.Leader(); ok {
		out.LeaderHTTP = l.HTTP
	}
	if s.mem == nil {
		return out
	}
	view := s.mem.View()
	out.Epoch, out.Generation = view.Epoch, view.Generation
	out.EpochHex = fmt.Sprintf("%016x", view.Epoch) // as locusctl and the logs print it
	var err error
	if out.BlockSize, err = s.blockSize(view, st); err != nil {
		out.BlockSize = st.BlockSize // the one it would place with
	}
	var status map[string]placement.NodeStatus
	s.mu.Lock()
	if s.p != nil {
		nodes := s.p.Nodes()
		status = make(map[string]placement.NodeStatus, len(nodes))
		for _, n := range nodes {
			status[n.ID] = n
		}
	}
	s.mu.Unlock()
	var shares []float64
	if view.Ring != nil {
		shares = view.Ring.Shares()
	}
	for _, m := range view.Members {
		rm := schedapi.RingMember{
			Node: m.ID, Rack: m.Rack, State: string(m.State), Role: string(m.Role),
			Address: m.GRPCAddr, HTTPAddress: m.HTTPAddr, Slots: m.Slots, CapacityBytes: m.CapacityBytes,
		}
		if ns, ok := status[m.ID]; ok {
			rm.SlotsInUse, rm.Waiting = ns.Used, ns.Waiting
			delete(status, m.ID)
		}
		if view.Ring != nil {
			if i, ok := view.Ring.Index(m.ID); ok && i < len(shares) {
				rm.Share = shares[i]
			}
		}
		out.Members = append(out.Members, rm)
	}
	// Nodes the placer still counts tasks on but the gossip dropped.
	for _, ns := range status {
		if ns.Used > 0 {
			out.Members = append(out.Members, schedapi.RingMember{Node: ns.ID, Rack: ns.Rack, State: "dead", Role: "cache", Slots: ns.Slots, SlotsInUse: ns.Used})
		}
	}
	return out
}

// ---------------------------------------------------------------------
// The placer's loop: everything below runs with mu held.

// placedLocked notes a placement made and answered now.
func (s *Scheduler) placedLocked(a placement.Assignment) {
	s.metrics.placementWait.Observe(a.Waited().Seconds())
	s.markDirtyLocked(a.Job)
}

// settleLocked runs after every call that changed the placer: Advance, and
// hand the assignments to the requests waiting for them; fail waiters when
// no alive node has slots; release batches when no slot is free (see
// PlaceBatch); re-arm the timer when the next deadline moved earlier.
func (s *Scheduler) settleLocked(now time.Time) {
	if s.p == nil {
		return
	}
	for range 8 {
		as := s.p.Advance(now)
		if len(as) == 0 {
			break
		}
		var orphans []placement.Assignment
		for _, a := range as {
			k := taskKey{a.Job, a.Task}
			w := s.waiters[k]
			if w == nil {
				// Every queued task has a waiter; a task whose waiter left
				// was cancelled. Defensive: release it.
				orphans = append(orphans, a)
				continue
			}
			delete(s.waiters, k)
			s.placedLocked(a)
			w.ch <- result{a: a, idx: w.idx, seq: s.seq.Load(), epoch: s.appliedEpochLocked()}
		}
		if len(orphans) == 0 {
			break
		}
		for _, a := range orphans {
			s.log.Error("scheduler: placement of a task nobody waits for; releasing it", "job", a.Job, "task", a.Task, "node", a.Node)
			_ = s.p.Cancel(a.Job, a.Task, now)
		}
	}
	if len(s.waiters) > 0 && s.aliveSlots == 0 {
		err := fmt.Errorf("%w: no alive cache node with slots is left", ErrNoNode)
		for k, w := range s.waiters {
			delete(s.waiters, k)
			_ = s.p.Cancel(k.job, k.task, now)
			w.ch <- result{err: err, idx: w.idx}
		}
	}
	if len(s.batches) > 0 && s.freeSlotsLocked() == 0 {
		for b := range s.batches {
			b.release()
			delete(s.batches, b)
		}
	}
	if next, ok := s.p.NextDeadline(); ok && (s.armed.IsZero() || next.Before(s.armed)) {
		s.armed = next
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// appliedEpochLocked is the ring epoch of the View applied to the placer
// (0 before the first).
func (s *Scheduler) appliedEpochLocked() uint64 {
	if s.applied == nil {
		return 0
	}
	return s.applied.Epoch
}

// freeSlotsLocked counts the free slots of alive nodes.
func (s *Scheduler) freeSlotsLocked() int {
	free := 0
	for _, n := range s.p.Nodes() {
		if n.State == placement.Alive && n.Used < n.Slots {
			free += n.Slots - n.Used
		}
	}
	return free
}

// failWaitersLocked ends every wait with err (leadership lost, shutdown).
func (s *Scheduler) failWaitersLocked(err error) {
	for k, w := range s.waiters {
		delete(s.waiters, k)
		w.ch <- result{err: err, idx: w.idx}
	}
	for b := range s.batches {
		delete(s.batches, b)
	}
}

// markDirtyLocked notes that a job's counters changed (for persistence),
// and so did those of the jobs the placer has forgotten since (under
// placement's MaxJobs: the flush deletes their keys).
func (s *Scheduler) markDirtyLocked(job string) {
	var forgotten []string // taken in every mode, so the placer's list stays short
	if s.p != nil {
		forgotten = s.p.TakeForgotten(nil) // nil, no allocation, when none was forgotten
	}
	if s.ha == nil {
		return
	}
	for _, f := range forgotten {
		s.dirty[f] = struct{}{}
	}
	s.dirty[job] = struct{}{}
	s.dirtyGlobal = true
	s.seq.Add(1)
	s.ha.kickPersist()
}

// recordLostLocked counts, logs and remembers lost tasks.
func (s *Scheduler) recordLostLocked(lost []placement.Lost, reason string, now time.Time) {
	if len(lost) == 0 {
		return
	}
	perNode := map[string]int{}
	for _, l := range lost {
		perNode[l.Node]++
		s.markDirtyLocked(l.Job)
		if s.cfg.LostLog <= 0 {
			continue
		}
		e := schedapi.LostTask{Job: l.Job, Task: l.Task, Node: l.Node, Locality: l.Locality.String(), Placed: l.Placed, Lost: now, Reason: reason}
		if len(s.lost) < s.cfg.LostLog {
			s.lost = append(s.lost, e)
		} else {
			s.lost[s.lostNext] = e
			s.lostNext = (s.lostNext + 1) % len(s.lost)
		}
	}
	for node, n := range perNode {
		s.log.Warn("scheduler: running tasks lost", "node", node, "tasks", n, "reason", reason)
	}
}

// timerLoop is the one goroutine that wakes the placer when a queued
// task's locality wait ends (placement.Placer.NextDeadline).
func (s *Scheduler) timerLoop() {
	defer s.wg.Done()
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		fired := false
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-s.kick:
		case <-t.C:
			fired = true
		}
		s.mu.Lock()
		var armed time.Time
		if s.p != nil {
			if fired {
				s.settleLocked(time.Now())
			}
			if next, ok := s.p.NextDeadline(); ok {
				armed = next
			}
		}
		s.armed = armed
		s.mu.Unlock()
		t.Stop()
		if !armed.IsZero() {
			t.Reset(max(time.Until(armed), 0))
		}
	}
}

// membershipLoop applies every new View to the placer.
func (s *Scheduler) membershipLoop(ctx context.Context) {
	defer s.wg.Done()
	var last *membership.View
	for {
		v, err := s.mem.WaitFor(ctx, func(v *membership.View) bool { return v != last })
		if err != nil {
			return
		}
		last = v
		s.applyView(v)
	}
}

// nodesOf turns a View into the placer's nodes: every cache member, alive
// (placeable) or draining, with its rack and slots. Members not listed
// (dead, left) are removed by SetNodes.
func nodesOf(v *membership.View) ([]placement.Node, int) {
	nodes := make([]placement.Node, 0, len(v.Members))
	alive := 0
	for _, m := range v.Members {
		if m.IsObserver() {
			continue
		}
		st := placement.Draining
		if m.Placeable() {
			st = placement.Alive
			alive += m.Slots
		}
		nodes = append(nodes, placement.Node{ID: m.ID, Rack: m.Rack, Slots: m.Slots, State: st})
	}
	return nodes, alive
}

// applyView applies a View: node addresses for answers, then the placer's
// nodes; running tasks of nodes that died, left or restarted (a new Boot)
// are reported lost.
func (s *Scheduler) applyView(v *membership.View) {
	info := make(map[string]membership.Member, len(v.Members))
	for id, m := range *s.info.Load() {
		info[id] = m // keep departed nodes' addresses for late answers
	}
	for _, m := range v.Members {
		info[m.ID] = m
	}
	if len(info) > 4*len(v.Members)+64 { // bound the departed
		info = make(map[string]membership.Member, len(v.Members))
		for _, m := range v.Members {
			info[m.ID] = m
		}
	}
	s.info.Store(&info)
	s.checkReplication(v, s.settings.Load())
	s.checkPeers(v)

	nodes, alive := nodesOf(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.applied
	s.applied, s.aliveSlots = v, alive
	restarted := s.noteBootsLocked(v)
	if s.p == nil {
		return
	}
	defer s.updateServingLocked() // the nodes' block size may have changed
	now := time.Now()
	for _, n := range nodes {
		if !restarted[n.ID] {
			continue
		}
		// A node that restarted faster than the failure detector saw it
		// die: its tasks died with the old process (lost), and the tasks
		// waiting for it keep waiting for the new one.
		lost, err := s.p.RestartNode(n, now)
		if err != nil {
			s.log.Error("scheduler: cannot apply the membership", "err", err)
			return
		}
		s.recordLostLocked(lost, "node restarted", now)
	}
	nodes = s.keepDrainedLocked(prev, v, nodes, now)
	lost, err := s.p.SetNodes(nodes, now)
	if err != nil {
		s.log.Error("scheduler: cannot apply the membership", "err", err)
		return
	}
	s.recordLostLocked(lost, "node died or left", now)
	if st := s.settings.Load(); prev == nil || prev.Ring != v.Ring || replOf(prev, st) != replOf(v, st) {
		s.rekeyLocked(v, now)
	}
	s.settleLocked(now)
}

// keepDrainedLocked returns nodes (the placer's nodes of v) with the
// nodes that left after draining (s.drained) that still run tasks: a
// cache member that was draining in prev and is not in v joins
// s.drained if tasks run on it. A drained node that is back in v loses
// the tasks still counted on it (as a restart: they are from before its
// leave), and one with no task left is dropped (SetNodes removes it).
// Caller holds mu, with s.p set.
func (s *Scheduler) keepDrainedLocked(prev, v *membership.View, nodes []placement.Node, now time.Time) []placement.Node {
	if prev == nil && len(s.drained) == 0 {
		return nodes
	}
	inView := make(map[string]int, len(nodes))
	for i, n := range nodes {
		inView[n.ID] = i
	}
	used := map[string]int{}
	for _, ns := range s.p.Nodes() {
		used[ns.ID] = ns.Used
	}
	if prev != nil {
		for _, m := range prev.Members {
			if _, ok := inView[m.ID]; ok || m.IsObserver() || m.Placeable() || used[m.ID] == 0 {
				continue
			}
			if s.drained == nil {
				s.drained = map[string]placement.Node{}
			}
			s.drained[m.ID] = placement.Node{ID: m.ID, Rack: m.Rack, Slots: m.Slots, State: placement.Draining}
		}
	}
	for id, nd := range s.drained {
		if i, ok := inView[id]; ok {
			delete(s.drained, id)
			if used[id] > 0 {
				lost, err := s.p.RestartNode(nodes[i], now)
				if err != nil {
					s.log.Error("scheduler: cannot apply the membership", "err", err)
					continue
				}
				s.recordLostLocked(lost, "node rejoined after draining", now)
			}
			continue
		}
		if used[id] == 0 {
			delete(s.drained, id)
			continue
		}
		nodes = append(nodes, nd)
	}
	return nodes
}

// dropIdleDrainedLocked removes from the placer the drained nodes (see
// keepDrainedLocked) whose last task completed. Caller holds mu, with
// s.p set.
func (s *Scheduler) dropIdleDrainedLocked(now time.Time) {
	if len(s.drained) == 0 {
		return
	}
	for _, ns := range s.p.Nodes() {
		if _, ok := s.drained[ns.ID]; ok && ns.Used == 0 {
			delete(s.drained, ns.ID)
			s.p.RemoveNode(ns.ID, now)
		}
	}
}

// rekeyLocked gives the queued tasks (every one has a waiter) the
// preference lists of v's ring, after the placer's nodes were set to v's
// (see placement.Placer.Rekey): a task queued before a node joined or left
// waits for the node that owns its block now, not the old owner, and
// keeps its place in its locality wait. O(queued tasks). Caller holds mu
// and calls settleLocked next.
func (s *Scheduler) rekeyLocked(v *membership.View, now time.Time) {
	if v.Ring == nil || len(s.waiters) == 0 {
		return // no ring: the waiters fail for want of slots (settleLocked)
	}
	repl, _ := replicationOf(v, s.settings.Load())
	ups := make([]placement.Rekey, 0, len(s.waiters))
	ids := make([]string, 0, len(s.waiters)*repl)
	var buf [placement.MaxPrefer]ring.Node
	for k, w := range s.waiters {
		start := len(ids)
		ids = ownerIDs(v.Ring, w.ringKey, repl, buf[:0], ids)
		ups = append(ups, placement.Rekey{Job: k.job, ID: k.task, Prefer: ids[start:len(ids):len(ids)]})
	}
	n, err := s.p.Rekey(ups, now)
	if err != nil {
		s.log.Error("scheduler: cannot give queued tasks the new ring's preference lists; they keep the old ones", "err", err)
		return
	}
	if n > 0 {
		s.log.Debug("scheduler: queued tasks follow their blocks to the new ring", "tasks", n, "queued", len(s.waiters), "epoch", v.Epoch)
	}
}

// noteBootsLocked records each cache member's Boot and returns the members
// whose Boot changed since the last View (restarted under the same id; a
// Boot of 0, from a release that does not announce it, is never a change).
// Members that left are forgotten with their Boot. Caller holds s.mu.
func (s *Scheduler) noteBootsLocked(v *membership.View) map[string]bool {
	var restarted map[string]bool
	boots := make(map[string]uint64, len(v.Members))
	for _, m := range v.Members {
		if m.IsObserver() {
			continue
		}
		boots[m.ID] = m.Boot
		if old := s.boots[m.ID]; old != 0 && m.Boot != 0 && old != m.Boot {
			if restarted == nil {
				restarted = make(map[string]bool)
			}
			restarted[m.ID] = true
		}
	}
	s.boots = boots
	return restarted
}

// install makes p the placement state (this scheduler starts placing).
func (s *Scheduler) install(p *placement.Placer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return ErrStopped
	}
	if s.applied != nil {
		nodes, _ := nodesOf(s.applied)
		if _, err := p.SetNodes(nodes, time.Now()); err != nil {
			return err
		}
	}
	s.p = p
	s.drained = nil // p runs no task of another term
	s.armed = time.Time{}
	s.isLeader.Store(true)
	s.updateServingLocked()
	s.settleLocked(time.Now())
	return nil
}

// uninstall drops the placement state (leadership lost or shutdown):
// waiting requests get err.
func (s *Scheduler) uninstall(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.isLeader.Store(false)
	s.p = nil
	s.drained = nil
	s.failWaitersLocked(err)
	clear(s.dirty)
	s.dirtyGlobal = false
	s.unconfirmed, s.unconfOrder = nil, nil
	s.updateServingLocked()
}

// ---------------------------------------------------------------------
// Answers.

func (s *Scheduler) placementOf(a placement.Assignment, epoch uint64) schedapi.Placement {
	return placementWith(*s.info.Load(), a, epoch)
}

func placementWith(info map[string]membership.Member, a placement.Assignment, epoch uint64) schedapi.Placement {
	m := info[a.Node]
	return schedapi.Placement{
		Task: a.Task, Node: a.Node, Address: m.GRPCAddr, HTTPAddress: m.HTTPAddr, Rack: a.Rack,
		Locality: a.Locality.String(), Owner: a.Owner, RingEpoch: epoch, WaitedMS: a.Waited().Milliseconds(),
	}
}

// persisted waits until the counter changes up to seq are in etcd (a
// no-op when standalone).
func (s *Scheduler) persisted(ctx context.Context, seq uint64) error {
	if s.ha == nil {
		return nil
	}
	return s.ha.waitPersisted(ctx, seq)
}

// releaseReason names why the placements of a call are released: the
// caller left, or they could not be persisted.
func releaseReason(ctx context.Context) string {
	if ctx.Err() != nil {
		return "request cancelled"
	}
	return "not persisted"
}

// checkPeers warns when this scheduler runs standalone (no etcd) while
// other schedulers (observers that serve an HTTP API) share the gossip:
// each books the same slots on its own, so nodes get oversubscribed and the
// counters split. With etcd, other schedulers are the HA followers.
func (s *Scheduler) checkPeers(v *membership.View) {
	if s.ha != nil {
		return
	}
	var others []string
	for _, m := range v.Members {
		if m.IsObserver() && m.HTTPAddr != "" && m.ID != s.cfg.NodeID {
			others = append(others, m.ID+" at "+m.HTTPAddr)
		}
	}
	slices.Sort(others)
	key := strings.Join(others, ", ")
	if last := s.peersWarned.Load(); (last == nil && key == "") || (last != nil && *last == key) {
		return
	}
	s.peersWarned.Store(&key)
	if key != "" {
		s.log.Warn("scheduler: other schedulers share this cluster while this one runs standalone (no --etcd-endpoints): each books the same slots on its own, so nodes get more tasks than slots and the counters split; run one scheduler, or give all of them --etcd-endpoints to elect a leader",
			"others", key)
	}
}
