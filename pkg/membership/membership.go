package membership

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/locuscache/locus/pkg/ring"
)

// Membership is this process's seat in the cluster gossip. Create one with
// New, Join seeds, read View, and Leave (or Shutdown) at the end. All methods
// are safe for concurrent use.
type Membership struct {
	cfg validated
	ml  *memberlist.Memberlist
	del *delegate

	view atomic.Pointer[View] // the current View; never nil after New

	stop chan struct{} // closed by Shutdown: stops the publisher, wakes WaitFor
	done chan struct{} // closed when the publisher goroutine has exited

	updateMu sync.Mutex // serializes UpdateMeta

	joinMu sync.Mutex  // guards prev
	prev   *selfRecord // guarded by joinMu: a previous incarnation whose wait ended before every member confirmed this node (Join)

	lifeMu sync.Mutex // guards closed, and orders Leave and Shutdown
	closed bool       // guarded by lifeMu

	fatal      atomic.Pointer[error] // why the Membership shut itself down (Err); set before it closes stop
	boundPort  int                   // the gossip port bound (Config.BindAddr's, or the one picked for port 0)
	gossipAddr string                // the advertised "ip:port" (GossipAddr), fixed at New
}

// New validates cfg, binds the gossip address and starts a one-member
// cluster (this node). Call Join to meet the others. Errors wrap
// ErrInvalidConfig, ErrInvalidMeta, ErrBadAddress, ErrKeyFile or
// ErrKeyLength; failing to bind is returned with the address and the OS
// error.
func New(cfg Config) (*Membership, error) {
	v, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if v.Ring.VNodes < 0 {
		return nil, fmt.Errorf("%w: Ring.VNodes is negative (%d)", ErrInvalidConfig, v.Ring.VNodes)
	}
	// Let the ring package judge its config once, on a one-node ring.
	if _, err := ring.New([]ring.Node{{ID: v.Meta.ID, Weight: 1}}, v.Ring); err != nil {
		return nil, fmt.Errorf("%w: Ring: %w", ErrInvalidConfig, err)
	}
	del, err := newDelegate(v.Meta, v.Logger)
	if err != nil {
		return nil, err
	}

	mc := memberlist.DefaultLANConfig()
	mc.Name = v.Meta.ID
	mc.BindAddr, mc.BindPort = v.bindIP, v.bindPort
	mc.AdvertiseAddr, mc.AdvertisePort = v.advertiseIP, v.advPort
	if v.advertiseIP == "" || v.advPort == 0 {
		mc.AdvertisePort = v.bindPort
	}
	t := v.Tuning
	mc.ProbeInterval, mc.ProbeTimeout = t.ProbeInterval, t.ProbeTimeout
	mc.IndirectChecks = t.IndirectChecks
	mc.SuspicionMult, mc.SuspicionMaxTimeoutMult = t.SuspicionMult, t.SuspicionMaxTimeoutMult
	mc.GossipInterval, mc.GossipNodes = t.GossipInterval, t.GossipNodes
	mc.GossipToTheDeadTime = t.GossipToTheDeadTime
	mc.RetransmitMult = t.RetransmitMult
	mc.PushPullInterval = t.PushPullInterval
	mc.TCPTimeout = t.TCPTimeout
	mc.DeadNodeReclaimTime = t.DeadNodeReclaimTime
	mc.SecretKey = v.key
	mc.Delegate = del
	mc.Events = del
	mc.Alive = del
	mc.Merge = del
	mc.Conflict = del
	mc.LogOutput = nil
	mc.Logger = newMemberlistLogger(v.Logger)

	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("membership: cannot start gossip on %s: %w", v.BindAddr, err)
	}
	m := &Membership{
		cfg:  v,
		ml:   ml,
		del:  del,
		stop: make(chan struct{}),
		done: make(chan struct{}),

		boundPort: mc.BindPort, // memberlist.Create sets the port it picked for 0
		// Read once: memberlist's LocalNode is its live state, which
		// UpdateNode (UpdateMeta) rewrites without a lock readers share.
		gossipAddr: ml.LocalNode().Address(),
	}
	// Create announced this node (NotifyJoin for self): publish the first
	// View now, so View is never nil, then hand over to the publisher.
	m.publish()
	go m.publishLoop()
	go m.watchConflicts()
	return m, nil
}

// watchConflicts settles claims on this node's id from another address
// (delegate.NotifyConflict) until the Membership shuts down. Two processes
// started with one id that join through different members at the same
// time are both let in (neither seed lists the other yet); each member
// then keeps whichever address it heard of first, and nothing ever
// changes that: the cluster would disagree for good on where the node is,
// under one ring epoch. So when the claimant answers a ping for this id
// (a live process, not the news of a previous incarnation), and again
// conflictRecheck later (a duplicate the cluster refused also answers,
// until it exits at its failed Join), and both are cache nodes, one of the
// two stops: the one whose Boot is larger (its
// gossip address breaks a tie). It records the reason for Err and shuts
// down, and the members that listed it move to the other once the failure
// detector has declared it dead. An observer never stops itself (the
// scheduler does not watch Err); it, and a cache node whose claimant is
// an observer, only log.
func (m *Membership) watchConflicts() {
	for {
		select {
		case <-m.stop:
			return
		case other := <-m.del.conflicts:
			m.resolveConflict(other)
		}
	}
}

// conflictRecheck is how long a claimant on this node's id must stay live
// before resolveConflict takes it for a member the cluster let in; a
// process whose Join was refused exits well within it. A var for tests.
var conflictRecheck = 5 * time.Second

func (m *Membership) resolveConflict(other memberlist.Node) {
	ua := &net.UDPAddr{IP: other.Addr, Port: int(other.Port)}
	if m.mayBeSelf(ua) {
		return // this process would answer the ping itself
	}
	if _, err := m.ml.Ping(m.cfg.Meta.ID, ua); err != nil {
		return // silent: news of a previous incarnation, or gone already
	}
	// A process the cluster refused (its Join failed with ErrDuplicateID)
	// answers too until it exits, which it does at once: only one still
	// live after conflictRecheck was let in, as this node was.
	select {
	case <-m.stop:
		return
	case <-time.After(conflictRecheck):
	}
	if _, err := m.ml.Ping(m.cfg.Meta.ID, ua); err != nil {
		return
	}
	var theirs NodeMeta
	derr := theirs.UnmarshalBinary(other.Meta)
	self, mine := m.GossipAddr(), m.LocalMeta()
	if derr != nil || mine.IsObserver() || theirs.IsObserver() ||
		mine.Boot < theirs.Boot || mine.Boot == theirs.Boot && self < other.Address() {
		m.del.logOnce(m.cfg.Meta.ID, "keeps "+other.Address(), slog.LevelError,
			"membership: another live process uses this node's id; this one keeps running (give every node a unique --node-id)",
			"node", m.cfg.Meta.ID, "this", self, "other", other.Address())
		return
	}
	err := fmt.Errorf("%w: node id %q is also used by a live member at %s (this node is %s), which joined at the same time; this node leaves the gossip to it: give every node a unique --node-id",
		ErrDuplicateID, m.cfg.Meta.ID, other.Address(), self)
	m.lifeMu.Lock()
	defer m.lifeMu.Unlock()
	if m.closed {
		return
	}
	m.cfg.Logger.Error("membership: stopping", "err", err)
	m.fatal.Store(&err)
	m.shutdownLocked() // no goodbye: a leave message for this id could mark the other process left
}

// mayBeSelf reports whether a ping to a could reach this very process:
// it is bound to a wildcard address on a's port, and a's IP is one of
// this host's (a node whose advertised address changed between two of the
// host's addresses sees news of itself at the old one).
func (m *Membership) mayBeSelf(a *net.UDPAddr) bool {
	if a.Port != m.boundPort || !net.ParseIP(m.cfg.bindIP).IsUnspecified() {
		return false
	}
	if a.IP.IsLoopback() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true
	}
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok && n.IP.Equal(a.IP) {
			return true
		}
	}
	return false
}

// Err returns why the Membership shut itself down, closing Done: an error
// wrapping ErrDuplicateID when another live process uses its id and
// joined at the same time (see Join). It is nil while it runs and after
// Leave or Shutdown. Callers that watch Done should stop on a non-nil Err:
// the node is no longer in the cluster.
func (m *Membership) Err() error {
	if p := m.fatal.Load(); p != nil {
		return *p
	}
	return nil
}

// publishLoop builds and publishes a View each time the delegate reports a
// change. It is the only goroutine that calls publish after New, so Views
// are published in order; bursts of changes coalesce into one View.
func (m *Membership) publishLoop() {
	defer close(m.done)
	for {
		select {
		case <-m.stop:
			return
		case <-m.del.kick:
			m.publish()
		}
	}
}

func (m *Membership) publish() {
	members, seq := m.del.snapshot()
	prev := m.view.Load()
	v, err := buildView(members, seq, prev, m.cfg.Ring)
	if err != nil {
		m.cfg.Logger.Error("membership: publishing a view without a ring", "err", err)
	}
	m.view.Store(v)
	if prev != nil {
		close(prev.changed)
	}
}

// View returns the current View. It never returns nil and never blocks.
func (m *Membership) View() *View { return m.view.Load() }

// Done returns a channel closed when the Membership is shut down: by
// Leave or Shutdown, or by itself (then Err says why).
func (m *Membership) Done() <-chan struct{} { return m.stop }

// WaitFor blocks until cond holds for the current View and returns that View.
// It returns the last View seen with ctx.Err() when ctx ends, or with
// ErrClosed when the Membership is shut down. cond runs on the caller's
// goroutine and must not block.
func (m *Membership) WaitFor(ctx context.Context, cond func(*View) bool) (*View, error) {
	for {
		v := m.View()
		if cond(v) {
			return v, nil
		}
		select {
		case <-v.Changed():
		case <-ctx.Done():
			return v, ctx.Err()
		case <-m.stop:
			return m.View(), ErrClosed
		}
	}
}

// catchUp waits until the published View reflects every change the
// delegate has seen so far, so a method returns only once View shows its
// effect.
func (m *Membership) catchUp(ctx context.Context) error {
	seq := m.del.currentSeq()
	_, err := m.WaitFor(ctx, func(v *View) bool { return v.seq >= seq })
	return err
}

// LocalMeta returns this node's current metadata, defaults filled.
func (m *Membership) LocalMeta() NodeMeta { return m.del.localMeta() }

// GossipAddr returns the "ip:port" other members reach this node at (with
// the port actually bound when Config.BindAddr asked for port 0): the
// address to give other nodes' Join.
func (m *Membership) GossipAddr() string { return m.gossipAddr }

// Join contacts the seeds ("host:port" each) and exchanges full state with
// every one it reaches. It returns how many seeds it reached; when it
// returns, View shows the members those seeds knew of. Joining no seeds
// (nil) is a no-op: the first node of a cluster need not join.
//
// A node that restarts with the id of a previous incarnation the cluster
// still remembers at another address (a pod recreated with a new IP) is
// not let in at once: memberlist moves a dead member's id to a new address
// only Tuning.DeadNodeReclaimTime after it was declared dead (a member
// that left is moved at once), and a previous incarnation not yet declared
// dead is still a live member with this id. Join then waits until every
// member it can reach lists this node at its own address, exchanging state
// with them every Tuning.ProbeInterval, and logs why it waits. The wait is
// bounded by the failure detector's worst case plus DeadNodeReclaimTime
// (Tuning's docs); a member that never answers this node (alive in the
// gossip, unreachable from here) does not fail the Join: once the bound
// has passed and every member it reaches lists it, Join returns and logs
// a warning naming them. A member with this id that answers a ping at the
// other address is another live process: ErrDuplicateID at once. (One
// that joins through another member at the same time as this node is
// let in too; one of the two stops once they hear of each other: see
// Err.)
//
// Errors: ErrBadAddress for a seed that does not parse (nothing contacted);
// when no seed accepted this node, the reason the cluster refused it, an
// *IncompatibleError (ErrIncompatible: block size, replication or
// protocol version differs) or ErrDuplicateID (this node's id is taken); otherwise ErrJoin
// with memberlist's reasons (unreachable seeds, wrong gossip key), or
// because the cluster did not accept this restarted node within the bound
// above (retry: a later Join waits for every member again). A node
// that failed to join keeps running alone (after that last error it may
// list the members that do not list it yet); callers usually retry, or
// Shutdown and exit. Each seed attempt is bounded by Tuning.TCPTimeout.
// ErrClosed after Shutdown, also during the wait.
func (m *Membership) Join(seeds []string) (int, error) {
	if len(seeds) == 0 {
		return 0, nil
	}
	for _, s := range seeds {
		if err := checkDialAddr(s); err != nil {
			return 0, fmt.Errorf("join seed: %w", err)
		}
	}
	if m.isClosed() {
		return 0, ErrClosed
	}
	addrs := resolveSeeds(seeds, m.cfg.Tuning.TCPTimeout)
	n, at, err := m.exchange(seeds, addrs)
	self := m.GossipAddr()
	prev, restarted := at.previous(self)
	if !restarted {
		prev, restarted = m.unconfirmed()
	}
	if restarted && (n > 0 || prev.live()) {
		n, err = m.awaitNewAddress(seeds, addrs, prev, n, err)
	}
	if n == 0 || err != nil {
		return 0, err
	}
	for _, r := range at.refusals {
		m.cfg.Logger.Warn("membership: a seed refused this node; joined through others", "err", r)
	}
	// Join's merge has fired NotifyJoin for every new member; wait until a
	// View shows them. The publisher is quick, the bound is a safety net.
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.Tuning.TCPTimeout)
	defer cancel()
	_ = m.catchUp(ctx)
	return n, nil
}

// exchange runs one memberlist Join: a state exchange with each seed
// (addrs are the ip:port addresses they resolve to). It returns how many
// it completed, what their lists said (see joinAttempt) and, when none
// completed, why: a seed's refusal of this node, else ErrJoin.
func (m *Membership) exchange(seeds, addrs []string) (int, *joinAttempt, error) {
	at := m.del.beginJoin(addrs)
	n, err := m.ml.Join(seeds)
	m.del.endJoin(at)
	if n > 0 {
		at.adoptStray("")
		return n, at, nil
	}
	if len(at.refusals) == 0 && err != nil {
		at.adoptStray(err.Error())
	}
	if len(at.refusals) > 0 {
		return 0, at, at.refusals[0]
	}
	return 0, at, fmt.Errorf("%w via %v: %s", ErrJoin, seeds, flattenJoinError(err))
}

// awaitNewAddress is Join's wait for a cluster that remembers prev, a
// previous incarnation of this node's id at another address, to accept
// this node at its own. n and err are the first exchange's outcome: a
// merge (n > 0) whose seed may still drop this node, or a refusal (prev
// is alive or suspect, so the seed's list names a live member with this
// node's id). It returns the seeds reached and nil once every member this
// node knows and can reach lists it, or past Tuning.newAddressWait when
// the only members that do not are members it cannot reach; ErrDuplicateID
// if prev answers a ping (another live process has this id); ErrJoin past
// Tuning.newAddressWait while a member it reaches refuses; err as is when
// a new exchange fails for another reason.
func (m *Membership) awaitNewAddress(seeds, addrs []string, prev selfRecord, n int, err error) (int, error) {
	t := m.cfg.Tuning
	self := m.GossipAddr()
	began := time.Now()
	bound := t.newAddressWait(len(m.View().Members))
	m.setUnconfirmed(prev)
	m.cfg.Logger.Info("membership: the cluster remembers this node's id at another address (a previous incarnation); waiting until every member lists this node at its new address",
		"node", m.cfg.Meta.ID, "addr", self, "previous", prev.addr, "previous_state", stateName(prev.state),
		"dead_node_reclaim_time", t.DeadNodeReclaimTime, "up_to", bound)
	var pending []string // gossip addresses of the members still to confirm, seeds first
	for {
		switch {
		case n > 0:
			if pending == nil {
				pending = m.othersSeedsFirst(addrs)
			}
			var refused bool
			pending, refused = m.confirm(pending, self)
			if len(pending) == 0 {
				m.clearUnconfirmed()
				m.cfg.Logger.Info("membership: every member lists this node at its new address",
					"node", m.cfg.Meta.ID, "addr", self, "previous", prev.addr, "waited", time.Since(began).Round(time.Millisecond))
				return n, nil
			}
			if !refused && time.Since(began) > bound {
				// Every member this node reaches lists it; the others
				// never answered (alive in the gossip, but not to this
				// node) and cannot be asked.
				m.clearUnconfirmed()
				m.cfg.Logger.Warn("membership: joined at the new address; members this node cannot reach may list it only after their next state exchange",
					"node", m.cfg.Meta.ID, "addr", self, "previous", prev.addr, "unreachable", pending, "waited", time.Since(began).Round(time.Millisecond))
				return n, nil
			}
		case prev.live():
			// A live process, or this node's previous incarnation before
			// the failure detector has declared it dead. Only the former
			// answers a ping for this id.
			if ua, uerr := net.ResolveUDPAddr("udp", prev.addr); uerr == nil {
				if _, perr := m.ml.Ping(m.cfg.Meta.ID, ua); perr == nil {
					m.clearUnconfirmed()
					return 0, fmt.Errorf("%w: node id %q is already used by a live member at %s, which answers there (this node is %s): give every node a unique --node-id",
						ErrDuplicateID, m.cfg.Meta.ID, prev.addr, self)
				}
			}
		default:
			return 0, err // not this wait's business: the caller retries
		}
		if time.Since(began) > bound {
			if n == 0 {
				return 0, fmt.Errorf("%w: the cluster still lists node id %q alive at %s, which does not answer this node at %s, after %v: "+
					"if another process runs with this --node-id, give every node a unique one; if it is this node's previous incarnation, "+
					"the cluster has not declared it dead in time (do all members use the same gossip tuning?)",
					ErrJoin, m.cfg.Meta.ID, prev.addr, self, bound)
			}
			return 0, fmt.Errorf("%w: members at %v still refuse this node's new address %s after %v: they remember node id %q at %s, "+
				"and memberlist moves a dead member's id to a new address only DeadNodeReclaimTime (%v on this node) after it died "+
				"(do all members use the same gossip tuning?); a later Join retries",
				ErrJoin, pending, self, bound, m.cfg.Meta.ID, prev.addr, t.DeadNodeReclaimTime)
		}
		select {
		case <-m.stop:
			return 0, ErrClosed
		case <-time.After(t.ProbeInterval):
		}
		if n == 0 {
			var at *joinAttempt
			n, at, err = m.exchange(seeds, addrs)
			if p, ok := at.previous(self); ok {
				prev = p // alive, then suspect, then dead
			}
		}
	}
}

// stateName names a memberlist state for logs.
func stateName(s memberlist.NodeStateType) string {
	switch s {
	case memberlist.StateAlive:
		return "alive"
	case memberlist.StateSuspect:
		return "suspect"
	case memberlist.StateDead:
		return "dead"
	case memberlist.StateLeft:
		return "left"
	}
	return fmt.Sprintf("state %d", s)
}

// othersSeedsFirst returns the gossip addresses of the members this node
// lists, itself excepted, those at a seed address first (the seed decides
// first: the others learn of this node from it).
func (m *Membership) othersSeedsFirst(seedAddrs []string) []string {
	isSeed := make(map[string]bool, len(seedAddrs))
	for _, a := range seedAddrs {
		isSeed[a] = true
	}
	var seeds, others []string
	members, _ := m.del.snapshot()
	for _, mem := range members {
		switch {
		case mem.ID == m.cfg.Meta.ID || mem.GossipAddr == "":
		case isSeed[mem.GossipAddr]:
			seeds = append(seeds, mem.GossipAddr)
		default:
			others = append(others, mem.GossipAddr)
		}
	}
	return append(seeds, others...)
}

// confirm exchanges state with the members at pending, in order, and
// returns those that do not list this node at self yet. An exchange sends
// this node's state too, so each is also a new try to be accepted; a
// member sends its list before it merges this node's state, so one that
// does not list this node is asked once more at once. confirm stops at
// the first member that still does not (the others most likely do not
// either, until DeadNodeReclaimTime has passed) and reports refused. A
// member it cannot reach stays pending while this node lists it, and is
// dropped once the failure detector has removed it; if none refused, the
// pending ones are all members it could not reach.
func (m *Membership) confirm(pending []string, self string) (still []string, refused bool) {
	for i, addr := range pending {
		n, at, _ := m.exchange([]string{addr}, []string{addr})
		if n > 0 && !at.accepted(self) {
			n, at, _ = m.exchange([]string{addr}, []string{addr})
		}
		switch {
		case n > 0 && at.accepted(self):
		case n > 0:
			return append(still, pending[i:]...), true
		case m.lists(addr):
			still = append(still, addr)
		}
	}
	return still, false
}

// lists reports whether this node lists a member at gossip address addr.
func (m *Membership) lists(addr string) bool {
	members, _ := m.del.snapshot()
	for _, mem := range members {
		if mem.GossipAddr == addr {
			return true
		}
	}
	return false
}

// unconfirmed returns the previous incarnation a Join's wait ended without
// every member confirming this node's new address, if any: the next Join
// waits again.
func (m *Membership) unconfirmed() (selfRecord, bool) {
	m.joinMu.Lock()
	defer m.joinMu.Unlock()
	if m.prev == nil {
		return selfRecord{}, false
	}
	return *m.prev, true
}

func (m *Membership) setUnconfirmed(r selfRecord) {
	m.joinMu.Lock()
	m.prev = &r
	m.joinMu.Unlock()
}

func (m *Membership) clearUnconfirmed() {
	m.joinMu.Lock()
	m.prev = nil
	m.joinMu.Unlock()
}

// resolveSeeds returns the ip:port addresses seeds (host:port) name, as
// memberlist dials them (a name may have several; one that does not
// resolve within timeout adds none), to tell a seed's member list apart.
func resolveSeeds(seeds []string, timeout time.Duration) []string {
	var out []string
	for _, s := range seeds {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			continue
		}
		if ip := net.ParseIP(host); ip != nil {
			out = append(out, net.JoinHostPort(ip.String(), port))
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		cancel()
		if err != nil {
			continue
		}
		for _, ip := range ips {
			out = append(out, net.JoinHostPort(ip.IP.String(), port))
		}
	}
	return out
}

// flattenJoinError turns memberlist's multi-line join error ("2 errors
// occurred:\n\t* failed to join a: ...\n\t* ...") into one line, with a hint
// when the cause is the gossip key.
func flattenJoinError(err error) string {
	if err == nil {
		return "no seed answered"
	}
	s := err.Error()
	if i := strings.Index(s, "occurred:"); i >= 0 {
		s = s[i+len("occurred:"):]
	}
	var parts []string
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimLeft(strings.TrimSpace(line), "* "); line != "" {
			parts = append(parts, line)
		}
	}
	s = strings.Join(parts, "; ")
	if strings.Contains(s, "crypt") {
		s += " (every member needs the same gossip key: check --gossip-key-file)"
	}
	return s
}

// UpdateMeta changes this node's metadata and gossips it. update gets a copy
// of the current metadata to modify. ID, Role, BlockSize, Replication and
// ProtocolVersion cannot change (ErrImmutableField); the result must
// validate (ErrInvalidMeta). It returns once the change is in View and has
// reached one other member (if any). The wait for a peer is bounded by ctx's
// deadline (DefaultBroadcastTimeout without one); past it UpdateMeta returns
// an error, but the change is in effect locally and keeps spreading.
// ErrClosed after Shutdown.
func (m *Membership) UpdateMeta(ctx context.Context, update func(*NodeMeta)) error {
	m.updateMu.Lock()
	defer m.updateMu.Unlock()
	if m.isClosed() {
		return ErrClosed
	}
	old := m.del.localMeta()
	meta := old
	update(&meta)
	meta = meta.withDefaults()
	switch {
	case meta.ID != old.ID:
		return fmt.Errorf("%w: ID %q -> %q", ErrImmutableField, old.ID, meta.ID)
	case meta.Role != old.Role:
		return fmt.Errorf("%w: Role %q -> %q", ErrImmutableField, old.Role, meta.Role)
	case meta.BlockSize != old.BlockSize:
		return fmt.Errorf("%w: BlockSize %d -> %d", ErrImmutableField, old.BlockSize, meta.BlockSize)
	case meta.Replication != old.Replication:
		return fmt.Errorf("%w: Replication %d -> %d", ErrImmutableField, old.Replication, meta.Replication)
	case meta.ProtocolVersion != old.ProtocolVersion:
		return fmt.Errorf("%w: ProtocolVersion %d -> %d", ErrImmutableField, old.ProtocolVersion, meta.ProtocolVersion)
	case meta.Boot != old.Boot:
		return fmt.Errorf("%w: Boot %d -> %d", ErrImmutableField, old.Boot, meta.Boot)
	}
	enc, err := meta.MarshalBinary()
	if err != nil {
		return err
	}
	if meta == old {
		return nil
	}
	m.del.setLocal(meta, enc)
	if err := m.ml.UpdateNode(broadcastTimeout(ctx)); err != nil {
		return fmt.Errorf("membership: metadata updated locally, not yet confirmed by a peer: %w", err)
	}
	return m.catchUp(ctx)
}

// SetState announces a new state (StateAlive or StateDraining) through
// UpdateMeta.
func (m *Membership) SetState(ctx context.Context, s State) error {
	return m.UpdateMeta(ctx, func(meta *NodeMeta) { meta.State = s })
}

// Leave tells the cluster this node is going away, waits until a peer has
// the news (at most until ctx's deadline, DefaultBroadcastTimeout without
// one), then shuts down. Peers drop a member that left at once, without the failure
// detector's delay. ErrClosed if already shut down.
func (m *Membership) Leave(ctx context.Context) error {
	m.lifeMu.Lock()
	defer m.lifeMu.Unlock()
	if m.closed {
		return ErrClosed
	}
	err := m.ml.Leave(broadcastTimeout(ctx))
	m.shutdownLocked()
	if err != nil {
		return fmt.Errorf("membership: leave broadcast not confirmed: %w", err)
	}
	return nil
}

// Shutdown stops gossiping without a goodbye: peers see this node fail and
// drop it after the failure detector's delay (use Leave for a planned
// exit). The last View stays readable. Safe to call more than once.
func (m *Membership) Shutdown() error {
	m.lifeMu.Lock()
	defer m.lifeMu.Unlock()
	if m.closed {
		return nil
	}
	m.shutdownLocked()
	return nil
}

func (m *Membership) shutdownLocked() {
	m.closed = true
	if err := m.ml.Shutdown(); err != nil {
		m.cfg.Logger.Warn("membership: memberlist shutdown", "err", err)
	}
	close(m.stop)
	<-m.done
}

func (m *Membership) isClosed() bool {
	m.lifeMu.Lock()
	defer m.lifeMu.Unlock()
	return m.closed
}

// broadcastTimeout turns ctx's deadline into memberlist's timeout argument.
func broadcastTimeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		if t := time.Until(d); t > 0 {
			return t
		}
		return time.Millisecond
	}
	return DefaultBroadcastTimeout
}
