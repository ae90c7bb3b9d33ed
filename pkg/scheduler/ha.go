package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/locuscache/locus/pkg/placement"
)

// ha is the scheduler's etcd side: the cluster config, the leader
// election, and the persisted counters. See the package documentation for
// the key layout and the rules.
type ha struct {
	s   *Scheduler
	cli *clientv3.Client
	cfg EtcdConfig

	keyConfig, keyElection, keyGlobal, keyJobs string
	flags                                      Settings // Config's settings, before etcd overrides
	configRev                                  int64    // revision of the first config read

	ctx    context.Context // ends at shutdown
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
	// sessCtx is the sessions' context: not ctx, so that a session's Close
	// can still revoke its lease at shutdown (which deletes the election
	// key: a follower takes over at once); sessCancel ends it when
	// shutdown's own context runs out first (etcd down: the revoke would
	// retry for seconds).
	sessCtx    context.Context
	sessCancel context.CancelFunc
	// deposed (capacity 1) wakes lead when watchLeader sees that another
	// key than this term's leads the election (checkDeposed).
	deposed chan struct{}
	// stale is the lease of the last session when its revoke failed (etcd
	// unreachable when it ended), else 0; the next campaign revokes it.
	// Only run's goroutine uses it.
	stale clientv3.LeaseID

	persistKick chan struct{}
	round       atomic.Pointer[flushRound]
	termFrom    atomic.Uint64 // the change sequence number when this term began
	// flushMu serialises flushes and guards written: the job keys this
	// leader knows to exist in etcd (so a forgotten job's key is deleted).
	flushMu sync.Mutex
	written map[string]bool

	mu       sync.Mutex // guards the fields below
	fenceKey string     // our election key while leading ("" otherwise)
	fenceRev int64      // its create revision: every write is conditional on it

	// probed is why etcd could not be dialed (etcdDialProblem) when
	// watchLeader last looked, at probedAt; only watchLeader uses them.
	probed   string
	probedAt time.Time
}

// dialProblemEvery bounds how often watchLeader dials etcd itself to name
// why it is unreachable.
const dialProblemEvery = 10 * time.Second

// dialProblem is etcdDialProblem, dialed at most every dialProblemEvery
// while etcd stays unreachable (watchLeader's goroutine only).
func (h *ha) dialProblem() string {
	if now := time.Now(); h.probedAt.IsZero() || now.Sub(h.probedAt) >= dialProblemEvery {
		h.probed = etcdDialProblem(h.ctx, h.cfg, time.Second)
		h.probedAt = now
	}
	return h.probed
}

// flushRound is the outcome of one counter flush: changes with sequence
// numbers in (from, upto] are in etcd (err nil) or failed (err). next is
// closed when a newer round is published.
type flushRound struct {
	from, upto uint64
	err        error
	next       chan struct{}
}

// persistChunk bounds the operations of one etcd transaction (etcd's
// default --max-txn-ops is 128).
const persistChunk = 100

// etcdRedialMax bounds the etcd client's reconnection backoff. gRPC's
// default grows to 2 minutes: after a long etcd outage a scheduler stayed
// without etcd (not ready, not campaigning) for up to that long after etcd
// was back. Redialing a few endpoints every 2 s costs nothing.
const etcdRedialMax = 2 * time.Second

func newHA(ctx context.Context, s *Scheduler) (*ha, error) {
	cfg := s.cfg.Etcd
	dial := []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: time.Second / 2, Multiplier: 1.6, Jitter: 0.2, MaxDelay: etcdRedialMax},
		MinConnectTimeout: cfg.DialTimeout,
	})}
	if cfg.Credentials != nil {
		// After the client's own: the last transport credentials win.
		dial = append(dial, grpc.WithTransportCredentials(cfg.Credentials))
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		Username:    cfg.Username,
		Password:    cfg.Password,
		TLS:         cfg.TLS,
		DialOptions: dial,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("scheduler: etcd client for %v: %w", cfg.Endpoints, err)
	}
	h := &ha{
		s: s, cli: cli, cfg: cfg,
		keyConfig:   cfg.Prefix + "config",
		keyElection: cfg.Prefix + "election/",
		keyGlobal:   cfg.Prefix + "counters/global",
		keyJobs:     cfg.Prefix + "counters/jobs/",
		flags:       *s.settings.Load(),
		done:        make(chan struct{}),
		persistKick: make(chan struct{}, 1),
		written:     map[string]bool{},
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.sessCtx, h.sessCancel = context.WithCancel(context.Background())
	h.deposed = make(chan struct{}, 1)
	h.round.Store(&flushRound{next: make(chan struct{})})

	gctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	resp, err := cli.Get(gctx, h.keyConfig)
	if err != nil {
		_ = cli.Close()
		why := ""
		if errors.Is(err, context.DeadlineExceeded) {
			why = etcdDialProblem(ctx, cfg, cfg.DialTimeout) // the client's error does not say why
		}
		return nil, fmt.Errorf("scheduler: cannot reach etcd at %v: %w%s", cfg.Endpoints, err, why)
	}
	h.configRev = resp.Header.Revision
	if len(resp.Kvs) > 0 {
		if err := h.applyConfig(resp.Kvs[0].Value); err != nil {
			_ = cli.Close()
			return nil, fmt.Errorf("scheduler: cluster config in etcd (%s): %w", h.keyConfig, err)
		}
	}
	return h, nil
}

// ClusterConfig is the JSON document at <prefix>config. Present fields
// override the scheduler's flags; absent ones leave them. Replication, like
// the flag, only checks the cache nodes': placement uses theirs and a
// different value is logged as a warning (Config.Replication).
type ClusterConfig struct {
	BlockSize   *int64 `json:"block_size,omitempty"`
	Replication *int   `json:"replication,omitempty"`
	// LocalityWait is a Go duration ("3s"); "0s" means no wait.
	LocalityWait *string `json:"locality_wait,omitempty"`
}

// parseClusterConfig decodes and checks a cluster config over base.
func parseClusterConfig(raw []byte, base Settings) (Settings, error) {
	var cc ClusterConfig
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cc); err != nil {
		return base, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	st := base
	if cc.BlockSize != nil {
		if *cc.BlockSize < 0 {
			return base, fmt.Errorf("%w: block_size %d < 0", ErrInvalidConfig, *cc.BlockSize)
		}
		st.BlockSize = *cc.BlockSize
	}
	if cc.Replication != nil {
		if *cc.Replication < 1 || *cc.Replication > placement.MaxPrefer {
			return base, fmt.Errorf("%w: replication %d outside [1, %d]", ErrInvalidConfig, *cc.Replication, placement.MaxPrefer)
		}
		st.Replication = *cc.Replication
	}
	if cc.LocalityWait != nil {
		d, err := time.ParseDuration(*cc.LocalityWait)
		if err != nil || d < 0 {
			return base, fmt.Errorf("%w: locality_wait %q is not a duration >= 0 (e.g. \"3s\")", ErrInvalidConfig, *cc.LocalityWait)
		}
		if d == 0 {
			d = NoLocalityWait
		}
		st.LocalityWait = d
	}
	return st, nil
}

// configOf renders settings as a cluster config.
func configOf(st Settings) ClusterConfig {
	w := st.LocalityWait
	if w < 0 {
		w = 0
	}
	ws := w.String()
	cc := ClusterConfig{LocalityWait: &ws}
	if st.BlockSize > 0 {
		cc.BlockSize = &st.BlockSize
	}
	if st.Replication > 0 {
		cc.Replication = &st.Replication
	}
	return cc
}

func (h *ha) applyConfig(raw []byte) error {
	st, err := parseClusterConfig(raw, h.flags)
	if err != nil {
		return err
	}
	if old := h.use(st); old == nil || *old != st {
		h.s.log.Info("scheduler: cluster config from etcd", "block_size", fromNodes(st.BlockSize), "replication", fromNodes(st.Replication), "locality_wait", st.LocalityWait)
	}
	return nil
}

// use puts st in force (a cluster config, or the flags when it is
// deleted) and returns the settings it replaced.
func (h *ha) use(st Settings) *Settings {
	old := h.s.settings.Swap(&st)
	if h.s.mem != nil { // nil while Start reads the config, before the gossip
		h.s.checkReplication(h.s.mem.View(), &st)
	}
	h.s.mu.Lock()
	h.s.updateServingLocked() // the block size may have changed
	h.s.mu.Unlock()
	return old
}

// run is the HA main loop: watch the config and the leader, and campaign.
func (h *ha) run(_ context.Context) {
	defer h.s.wg.Done()
	defer close(h.done)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); h.watchConfig() }()
	go func() { defer wg.Done(); h.watchLeader() }()
	for h.ctx.Err() == nil {
		if err := h.campaign(); err != nil && h.ctx.Err() == nil {
			h.s.log.Warn("scheduler: election round ended", "err", err)
			sleepCtx(h.ctx, time.Second)
		}
	}
	wg.Wait()
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// campaign runs one session: campaign, lead until the session or the
// leadership ends.
func (h *ha) campaign() error {
	if h.stale != 0 {
		// The last session ended while etcd was unreachable, so its
		// revoke failed and its election key may still be there: an etcd
		// that restarts or elects a new raft leader gives every lease its
		// full TTL again, and that key would hold the election for one
		// more TTL after etcd is back (session.Close assumes the lease
		// has expired by the time its revoke gives up).
		rctx, cancel := context.WithTimeout(h.ctx, h.cfg.OpTimeout)
		_, err := h.cli.Revoke(rctx, h.stale)
		cancel()
		if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return fmt.Errorf("etcd: revoking the last session's lease %x: %w", h.stale, err)
		}
		h.stale = 0
	}
	ttl := int64(h.cfg.SessionTTL / time.Second)
	gctx, cancel := context.WithTimeout(h.ctx, h.cfg.OpTimeout)
	lease, err := h.cli.Grant(gctx, ttl)
	cancel()
	if err != nil {
		return fmt.Errorf("etcd lease: %w", err)
	}
	// The session's own context is not h.ctx: Close must still be able to
	// revoke the lease at shutdown (that deletes our election key, so a
	// follower takes over at once).
	sess, err := concurrency.NewSession(h.cli, concurrency.WithLease(lease.ID), concurrency.WithTTL(int(ttl)), concurrency.WithContext(h.sessCtx))
	if err != nil {
		return fmt.Errorf("etcd session: %w", err)
	}
	defer func() {
		if err := sess.Close(); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) && h.sessCtx.Err() == nil {
			h.stale = lease.ID
		}
	}()
	el := concurrency.NewElection(sess, h.keyElection)
	cctx, ccancel := context.WithCancel(h.ctx)
	defer ccancel()
	go func() {
		select {
		case <-sess.Done():
			ccancel()
		case <-cctx.Done():
		}
	}()
	me, _ := json.Marshal(LeaderInfo{ID: h.s.cfg.NodeID, HTTP: h.s.httpAdv, GRPC: h.s.grpcAdv})
	if err := el.Campaign(cctx, string(me)); err != nil {
		return fmt.Errorf("campaign: %w", err)
	}
	select {
	case <-sess.Done():
		return errors.New("etcd session expired while campaigning")
	default:
	}
	return h.lead(cctx, sess, el)
}

// lead is the leader's term: load the counters, place, persist; it returns
// when the session expires, a write finds we are no longer the leader, or
// at shutdown.
func (h *ha) lead(ctx context.Context, sess *concurrency.Session, el *concurrency.Election) error {
	if err := h.ensureConfig(ctx); err != nil {
		return err
	}
	h.flushMu.Lock()
	h.written = map[string]bool{}
	state, err := h.loadState(ctx)
	h.flushMu.Unlock()
	if err != nil {
		return err
	}
	p, err := placement.New(h.s.cfg.Placement)
	if err != nil {
		return err
	}
	imported := true
	if err := p.Import(state); err != nil {
		imported = false
		h.s.log.Error("scheduler: persisted counters do not import; keeping the global counters only", "err", err)
		p, _ = placement.New(h.s.cfg.Placement)
		if err := p.Import(placement.State{Version: placement.StateVersion, Global: state.Global}); err != nil {
			h.s.log.Error("scheduler: persisted global counters do not import either; starting from zero", "err", err)
			p, _ = placement.New(h.s.cfg.Placement)
		}
	}
	select {
	case <-h.deposed: // a word about the last term's key
	default:
	}
	h.mu.Lock()
	h.fenceKey, h.fenceRev = el.Key(), el.Rev()
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.fenceKey, h.fenceRev = "", 0
		h.mu.Unlock()
	}()
	// Changes from now on belong to this term.
	from := h.s.seq.Load()
	h.termFrom.Store(from)
	h.publish(&flushRound{from: from, upto: from})
	g, _ := p.Counters("") // before install: then only under Scheduler.mu
	t := g.Total()
	if err := h.s.install(p); err != nil {
		return err
	}
	if imported {
		h.markImportChanges(state)
	}
	h.s.log.Info("scheduler: elected leader; placing", "jobs", len(state.Jobs), "placed", t.Placed, "completed", t.Completed, "lost", t.Lost)

	pctx, pcancel := context.WithCancel(ctx)
	perr := make(chan error, 1)
	go func() { perr <- h.persistLoop(pctx) }()
	var why error
	select {
	case <-sess.Done():
		why = errors.New("etcd session expired (this scheduler could not renew its lease in time)")
	case <-ctx.Done():
		why = errors.New("stopping")
	case err := <-perr:
		why = err
		perr = nil
	case <-h.deposed:
		why = errors.New("this scheduler's election key is gone (another scheduler leads now)")
	}
	pcancel()
	if perr != nil {
		<-perr
	}
	nl := h.s.notLeader()
	h.s.uninstall(nl)
	h.publish(&flushRound{from: from, upto: math.MaxUint64, err: nl})
	if h.ctx.Err() == nil {
		h.s.log.Warn("scheduler: no longer the leader", "reason", why)
	}
	return nil
}

// markImportChanges marks dirty the counters Import changed (the last
// term's running tasks became lost, its queued ones gone): persisting them
// at once, rather than when the job next changes, keeps what followers
// read from etcd equal to what this leader serves.
func (h *ha) markImportChanges(st placement.State) {
	changed := func(c placement.Counters) bool {
		return c.Queued != 0 || c.DataLocal.Running != 0 || c.RackLocal.Running != 0 || c.OtherLocal.Running != 0
	}
	s := h.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for job, c := range st.Jobs {
		if changed(c) {
			s.markDirtyLocked(job)
		}
	}
	if changed(st.Global) && !s.dirtyGlobal {
		s.dirtyGlobal = true
		s.seq.Add(1)
		h.kickPersist()
	}
}

// ensureConfig writes the cluster config from this scheduler's flags when
// etcd has none (the first leader does it).
func (h *ha) ensureConfig(ctx context.Context) error {
	raw, _ := json.Marshal(configOf(h.flags))
	octx, cancel := context.WithTimeout(ctx, h.cfg.OpTimeout)
	defer cancel()
	resp, err := h.cli.Txn(octx).
		If(clientv3.Compare(clientv3.CreateRevision(h.keyConfig), "=", 0)).
		Then(clientv3.OpPut(h.keyConfig, string(raw))).
		Commit()
	if err != nil {
		return fmt.Errorf("etcd: writing the cluster config: %w", err)
	}
	if resp.Succeeded {
		h.s.log.Info("scheduler: wrote the cluster config to etcd from this scheduler's flags", "key", h.keyConfig, "config", string(raw))
	}
	return nil
}

// loadState reads the persisted counters.
func (h *ha) loadState(ctx context.Context) (placement.State, error) {
	st := placement.State{Version: placement.StateVersion, Jobs: map[string]placement.Counters{}}
	octx, cancel := context.WithTimeout(ctx, 4*h.cfg.OpTimeout)
	defer cancel()
	resp, err := h.cli.Get(octx, h.s.cfg.Etcd.Prefix+"counters/", clientv3.WithPrefix())
	if err != nil {
		return st, fmt.Errorf("etcd: reading the counters: %w", err)
	}
	for _, kv := range resp.Kvs {
		k := string(kv.Key)
		var c placement.Counters
		if err := json.Unmarshal(kv.Value, &c); err != nil {
			h.s.log.Error("scheduler: skipping undecodable counters in etcd", "key", k, "err", err)
			continue
		}
		switch {
		case k == h.keyGlobal:
			st.Global = c
		case strings.HasPrefix(k, h.keyJobs):
			job, err := url.PathUnescape(k[len(h.keyJobs):])
			if err != nil || job == "" {
				h.s.log.Error("scheduler: skipping counters under a bad key in etcd", "key", k)
				continue
			}
			st.Jobs[job] = c
			h.written[k] = true
		}
	}
	return st, nil
}

// loadCounters reads one job's (or the global) persisted counters, for a
// follower's GET.
func (h *ha) loadCounters(ctx context.Context, job string) (placement.Counters, error) {
	key := h.keyGlobal
	if job != "" {
		key = h.keyJobs + url.PathEscape(job)
	}
	octx, cancel := context.WithTimeout(ctx, h.cfg.OpTimeout)
	defer cancel()
	resp, err := h.cli.Get(octx, key)
	if err != nil {
		return placement.Counters{}, fmt.Errorf("%w: reading counters from etcd: %v", ErrUnavailable, err)
	}
	if len(resp.Kvs) == 0 {
		if job == "" {
			return placement.Counters{}, nil
		}
		return placement.Counters{}, fmt.Errorf("%w: job %q: no counters in etcd", ErrNotFound, job)
	}
	var c placement.Counters
	if err := json.Unmarshal(resp.Kvs[0].Value, &c); err != nil {
		return c, fmt.Errorf("%w: counters of %q in etcd do not decode: %v", ErrUnavailable, job, err)
	}
	return c, nil
}

// listJobs lists the jobs with persisted counters, for a follower.
func (h *ha) listJobs(ctx context.Context) ([]string, error) {
	octx, cancel := context.WithTimeout(ctx, h.cfg.OpTimeout)
	defer cancel()
	resp, err := h.cli.Get(octx, h.keyJobs, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, fmt.Errorf("%w: listing jobs in etcd: %v", ErrUnavailable, err)
	}
	jobs := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if job, err := url.PathUnescape(string(kv.Key[len(h.keyJobs):])); err == nil && job != "" {
			jobs = append(jobs, job)
		}
	}
	slices.Sort(jobs) // escaped order differs from name order
	return jobs, nil
}

// kickPersist asks the persister for a flush (called with Scheduler.mu
// held: never blocks).
func (h *ha) kickPersist() {
	select {
	case h.persistKick <- struct{}{}:
	default:
	}
}

// persistLoop flushes the counters whenever they changed: a group commit,
// since every call that changed them while a flush was in flight goes into
// the next one.
func (h *ha) persistLoop(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-h.persistKick:
		}
		if err := h.flush(ctx); err != nil {
			if errors.Is(err, ErrNotLeader) {
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
			h.s.log.Warn("scheduler: cannot persist counters to etcd; retrying", "err", err)
			sleepCtx(ctx, 200*time.Millisecond)
			h.kickPersist()
		}
	}
}

type putOp struct {
	key string
	val []byte // nil: delete
}

// flush writes the global counters and those of the jobs that changed,
// fenced on our election key, and publishes the round.
func (h *ha) flush(ctx context.Context) error {
	h.flushMu.Lock()
	defer h.flushMu.Unlock()
	s := h.s
	s.mu.Lock()
	if s.p == nil {
		s.mu.Unlock()
		return nil
	}
	seq := s.seq.Load()
	last := h.round.Load()
	if seq <= last.upto && last.err == nil && !s.dirtyGlobal && len(s.dirty) == 0 {
		s.mu.Unlock()
		return nil
	}
	jobs := s.dirty
	s.dirty = make(map[string]struct{}, len(jobs))
	s.dirtyGlobal = false
	g, _ := s.p.Counters("")
	type jc struct {
		job string
		c   placement.Counters
		ok  bool
	}
	snap := make([]jc, 0, len(jobs))
	for job := range jobs {
		c, err := s.p.Counters(job)
		snap = append(snap, jc{job, c, err == nil})
	}
	s.mu.Unlock()

	ops := make([]putOp, 0, len(snap)+1)
	raw, _ := json.Marshal(g)
	ops = append(ops, putOp{h.keyGlobal, raw})
	for _, j := range snap {
		key := h.keyJobs + url.PathEscape(j.job)
		if !j.ok { // forgotten under the job limit
			ops = append(ops, putOp{key: key})
			continue
		}
		raw, _ := json.Marshal(j.c)
		ops = append(ops, putOp{key, raw})
	}
	start := time.Now()
	err := h.commit(ctx, ops)
	s.metrics.persist.Observe(time.Since(start).Seconds())
	from := h.termFrom.Load()
	if err != nil {
		s.metrics.persistErrors.Inc()
		s.mu.Lock()
		for job := range jobs {
			s.dirty[job] = struct{}{}
		}
		s.dirtyGlobal = true
		s.mu.Unlock()
		if !errors.Is(err, ErrNotLeader) {
			err = fmt.Errorf("%w: cannot persist the counters to etcd: %v", ErrUnavailable, err)
		}
		h.publish(&flushRound{from: from, upto: seq, err: err})
		return err
	}
	h.publish(&flushRound{from: from, upto: seq})
	return nil
}

// commit applies ops in transactions conditional on our election key.
func (h *ha) commit(ctx context.Context, ops []putOp) error {
	h.mu.Lock()
	key, rev := h.fenceKey, h.fenceRev
	h.mu.Unlock()
	if key == "" {
		return h.s.notLeader()
	}
	for len(ops) > 0 {
		n := min(len(ops), persistChunk)
		chunk := make([]clientv3.Op, 0, n)
		for _, o := range ops[:n] {
			if o.val == nil {
				if h.written[o.key] {
					chunk = append(chunk, clientv3.OpDelete(o.key))
				}
				continue
			}
			chunk = append(chunk, clientv3.OpPut(o.key, string(o.val)))
		}
		octx, cancel := context.WithTimeout(ctx, h.cfg.OpTimeout)
		resp, err := h.cli.Txn(octx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).Then(chunk...).Commit()
		cancel()
		if err != nil {
			return err
		}
		if !resp.Succeeded {
			return h.s.notLeader() // our election key is gone: another leader may write
		}
		for _, o := range ops[:n] {
			h.written[o.key] = o.val != nil
		}
		ops = ops[n:]
	}
	return nil
}

func (h *ha) publish(r *flushRound) {
	r.next = make(chan struct{})
	old := h.round.Swap(r)
	close(old.next)
}

// waitPersisted waits until the changes up to seq are in etcd. A change
// made in an earlier leadership term than the current flush rounds is
// reported as ErrNotLeader.
func (h *ha) waitPersisted(ctx context.Context, seq uint64) error {
	for {
		r := h.round.Load()
		switch {
		case seq <= r.from && r.upto != math.MaxUint64:
			return h.s.notLeader()
		case seq <= r.upto && r.err != nil:
			return r.err
		case seq <= r.upto:
			return nil
		}
		select {
		case <-r.next:
		case <-ctx.Done():
			return fmt.Errorf("%w: waiting for the counters to be persisted: %v", ErrUnavailable, ctx.Err())
		}
	}
}

// watchConfig applies changes of the cluster config key.
func (h *ha) watchConfig() {
	rev := h.configRev + 1
	for h.ctx.Err() == nil {
		wch := h.cli.Watch(clientv3.WithRequireLeader(h.ctx), h.keyConfig, clientv3.WithRev(rev))
		for resp := range wch {
			if err := resp.Err(); err != nil {
				h.s.log.Warn("scheduler: watching the cluster config", "err", err)
				break
			}
			for _, ev := range resp.Events {
				rev = ev.Kv.ModRevision + 1
				if ev.Type == clientv3.EventTypeDelete {
					h.use(h.flags)
					h.s.log.Info("scheduler: cluster config deleted from etcd; using the flags")
					continue
				}
				if err := h.applyConfig(ev.Kv.Value); err != nil {
					h.s.log.Error("scheduler: ignoring an invalid cluster config in etcd", "key", h.keyConfig, "err", err)
				}
			}
		}
		if h.ctx.Err() != nil {
			return
		}
		// Compacted or disconnected: read the current value and go on.
		sleepCtx(h.ctx, 500*time.Millisecond)
		octx, cancel := context.WithTimeout(h.ctx, h.cfg.OpTimeout)
		resp, err := h.cli.Get(octx, h.keyConfig)
		cancel()
		if err != nil {
			continue
		}
		rev = resp.Header.Revision + 1
		if len(resp.Kvs) > 0 {
			if err := h.applyConfig(resp.Kvs[0].Value); err != nil {
				h.s.log.Error("scheduler: ignoring an invalid cluster config in etcd", "key", h.keyConfig, "err", err)
			}
		}
	}
}

// checkDeposed tells lead (h.deposed) that this scheduler, while leading,
// no longer holds the first election key: resp, a read of the election
// prefix's first key, shows another key or none. Its key goes with its
// lease when its session expires (lead sees that on its own), but also when
// someone deletes it (etcdctl del of the key or the prefix): the next
// candidate is then elected while this session is healthy, and a leader
// that waited for a write to fail its fence would go on claiming the
// leadership (IsLeader, /readyz 200) for as long as no call reached it.
// A read older than this term's key (an answer in flight when it was
// elected) says nothing about it.
func (h *ha) checkDeposed(resp *clientv3.GetResponse) {
	h.mu.Lock()
	key, rev := h.fenceKey, h.fenceRev
	h.mu.Unlock()
	if key == "" || resp.Header.Revision < rev {
		return
	}
	if len(resp.Kvs) > 0 && string(resp.Kvs[0].Key) == key {
		return
	}
	select {
	case h.deposed <- struct{}{}:
	default: // already told
	}
}

// watchLeader keeps Scheduler.leaderInfo on the current leader: the
// election key with the lowest create revision. While etcd cannot be read
// no leader is known (the last one may be gone, or be this scheduler,
// deposed), and leaderErr says why.
func (h *ha) watchLeader() {
	for h.ctx.Err() == nil {
		octx, cancel := context.WithTimeout(h.ctx, h.cfg.OpTimeout)
		resp, err := h.cli.Get(octx, h.keyElection, clientv3.WithFirstCreate()...)
		cancel()
		if err != nil {
			if h.ctx.Err() == nil {
				msg := "etcd unreachable: " + err.Error()
				if errors.Is(err, context.DeadlineExceeded) {
					msg += h.dialProblem() // the client's error does not say why
				}
				h.s.leaderErr.Store(&msg)
				h.s.leaderInfo.Store(&LeaderInfo{})
			}
			sleepCtx(h.ctx, 500*time.Millisecond)
			continue
		}
		h.s.leaderErr.Store(nil)
		h.probedAt = time.Time{}
		var l LeaderInfo
		if len(resp.Kvs) > 0 {
			_ = json.Unmarshal(resp.Kvs[0].Value, &l)
		}
		h.s.leaderInfo.Store(&l)
		h.checkDeposed(resp)
		// A watch does not end when etcd becomes unreachable (the client
		// reconnects behind it): read again every session TTL as well, so an
		// unreachable etcd is noticed within a TTL plus an etcd call's timeout.
		// The watch's context ends at that TTL too: creating a watch waits
		// for the client's watch stream, which, when etcd went away just
		// after the read above, is reconnecting and does not answer until
		// the context ends, and a scheduler waiting there kept naming the
		// leader of its last read (itself, deposed, in TestHAEtcdDown under
		// load) for as long as etcd stayed down.
		wctx, wcancel := context.WithTimeout(h.ctx, h.cfg.SessionTTL)
		wch := h.cli.Watch(clientv3.WithRequireLeader(wctx), h.keyElection, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
		recheck := time.NewTimer(h.cfg.SessionTTL)
		select {
		case <-wch: // any change (or an error): read again
		case <-recheck.C:
		case <-h.ctx.Done():
		}
		recheck.Stop()
		wcancel()
	}
}

// shutdown flushes the counters while still leading, then ends the term:
// the session's lease is revoked, which deletes our election key, so a
// follower takes over at once.
func (h *ha) shutdown(ctx context.Context) error {
	var err error
	h.mu.Lock()
	leading := h.fenceKey != ""
	h.mu.Unlock()
	if leading {
		fctx, cancel := context.WithTimeout(ctx, h.cfg.OpTimeout)
		err = h.flush(fctx)
		cancel()
	}
	h.cancel()
	// Every etcd call of the loops is bounded by OpTimeout, except the
	// clean-up etcd's Election.Campaign makes on its client's own context
	// when cancelled: with etcd unreachable it would wait forever, so
	// close the client if the loops have not ended by then.
	select {
	case <-h.done:
	case <-ctx.Done():
	case <-time.After(h.cfg.OpTimeout):
	}
	select {
	case <-h.done:
	default:
		// Past ctx, stop the session's lease revoke too: with etcd down
		// it retries on the closed client for seconds (etcd's retry
		// interceptor), and the lease then expires on its own.
		if ctx.Err() != nil {
			h.sessCancel()
		}
		_ = h.cli.Close()
		select {
		case <-h.done:
		case <-ctx.Done():
			h.sessCancel()
			<-h.done
		}
	}
	h.sessCancel()
	if err != nil {
		return fmt.Errorf("scheduler: final counter flush: %w", err)
	}
	return nil
}

func (h *ha) close() {
	h.cancel()
	h.sessCancel()
	_ = h.cli.Close()
}
