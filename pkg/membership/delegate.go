package membership

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// delegate is the one value memberlist calls back into. It implements
//
//   - memberlist.Delegate: NodeMeta hands out this node's encoded metadata;
//     the user-message hooks are unused.
//   - memberlist.EventDelegate: NotifyJoin/Leave/Update keep the member table
//     that Views are built from.
//   - memberlist.AliveDelegate: NotifyAlive refuses members with corrupt
//     metadata or a different block size, replication or protocol version,
//     whichever way they arrive (gossip or a state exchange).
//   - memberlist.MergeDelegate: NotifyMerge refuses a join, in both
//     directions: the newcomer checks the cluster's members and the cluster
//     checks the newcomer, so Join on a misfit node fails with the reason.
//   - memberlist.ConflictDelegate: logs two addresses claiming one id, or
//     a member that died coming back at a new address before memberlist
//     lets it (DeadNodeReclaimTime; NotifyLeave remembers where members
//     were).
//
// Threading rules (memberlist's, and what this type does about them):
//
//   - NotifyAlive and the EventDelegate methods run with memberlist's node
//     lock held. They must not call back into the Memberlist (deadlock) and
//     must be quick (they stall probing and gossip). So they only decode
//     metadata, update the table under d.mu, and poke the publisher through
//     a non-blocking send on kick; building rings happens on the publisher
//     goroutine, never here.
//   - EventDelegate methods are never called concurrently with each other;
//     NotifyAlive, NotifyMerge and NodeMeta may be called concurrently from
//     memberlist's packet and stream goroutines. Everything shared is under
//     d.mu or atomic.
//   - NotifyMerge runs without memberlist's lock, on the goroutine that
//     called Join (newcomer side) or on a stream handler (cluster side).
type delegate struct {
	local    atomic.Pointer[localMeta] // this node's metadata; replaced by UpdateMeta
	name     string                    // this node's id (immutable)
	selfAddr atomic.Pointer[string]    // this node's gossip address, once memberlist announced it
	logger   *slog.Logger
	kick     chan struct{} // capacity 1: "the table changed", coalesced
	// conflicts (capacity 1) carries another address's claim on this
	// node's id (NotifyConflict) to Membership.watchConflicts, which
	// checks off memberlist's lock whether a live process makes it.
	conflicts chan memberlist.Node

	mu       sync.Mutex
	members  map[string]Member     // guarded by mu: live (alive or suspect) members by id, self included
	seq      uint64                // guarded by mu: bumped on every change to members
	attempts map[*joinAttempt]bool // guarded by mu: the state exchanges of Join calls in flight
	departed map[string]departure  // guarded by mu: members that left or died, by id, until the id comes back
	warned   map[string]string     // guarded by mu: last message logged per peer, to log each once
}

// joinAttempt is what one memberlist Join (a state exchange with each of
// its seeds) learned from its seeds' member lists. NotifyMerge fills it
// while it is registered (beginJoin to endJoin); its fields are guarded by
// delegate.mu until endJoin, and owned by the caller after.
type joinAttempt struct {
	seeds    map[string]bool // the ip:port addresses dialed
	refusals []error         // refusals of those seeds' lists (this node's side of its own Join)
	self     []selfRecord    // what each of those lists said about this node's id
	// stray are the lists merged or refused while the attempt ran that
	// named no seed address: another node's join, or a seed dialed at an
	// address it does not advertise (see adoptStray).
	stray []strayMerge
}

// strayMerge is a list that named none of an attempt's seeds: its refusal
// (nil: merged) and what it said about this node's id.
type strayMerge struct {
	err error
	rec selfRecord
}

// adoptStray takes as the attempt's own the stray lists of seeds dialed at
// an address their lists do not name (a NAT, a Service address, a seed
// bound to 0.0.0.0 and dialed at another of its addresses). When the Join
// failed, those are the refusals memberlist returned for it: joinErr (its
// Join error, which quotes each merge's refusal) names them, and another
// node's join refused meanwhile is not named there. When it merged a list
// (joinErr "") but no list named a seed, the merged stray lists are taken:
// what another node's list said about this node's id, taken wrongly, at
// worst makes Join check with the members that they list it. The caller
// owns a (after endJoin).
func (a *joinAttempt) adoptStray(joinErr string) {
	if joinErr == "" {
		if len(a.self) == 0 {
			for _, s := range a.stray {
				if s.err == nil {
					a.self = append(a.self, s.rec)
				}
			}
		}
		return
	}
	for _, s := range a.stray {
		if s.err == nil || !strings.Contains(joinErr, s.err.Error()) {
			continue
		}
		err := s.err
		var ie *IncompatibleError
		if errors.As(err, &ie) {
			own := *ie
			own.Joining = true
			err = &own
		}
		a.refusals = append(a.refusals, err)
		a.self = append(a.self, s.rec)
	}
}

// selfRecord is what one member list said about this node's own id.
type selfRecord struct {
	listed bool                     // the list names this id
	addr   string                   // at this address
	state  memberlist.NodeStateType // in this state
}

// elsewhere reports whether the list names this id at an address other
// than self: a previous incarnation of this node (or another process with
// its id, when alive).
func (r selfRecord) elsewhere(self string) bool { return r.listed && r.addr != self }

// live reports whether the list names this id as alive or suspect.
func (r selfRecord) live() bool {
	return r.listed && (r.state == memberlist.StateAlive || r.state == memberlist.StateSuspect)
}

// lists reports whether the list names this node at its own address as a
// live member: the member that sent it has accepted this node.
func (r selfRecord) lists(self string) bool { return r.live() && r.addr == self }

// previous returns the first of the attempt's records that names this id
// at another address than self.
func (a *joinAttempt) previous(self string) (selfRecord, bool) {
	for _, r := range a.self {
		if r.elsewhere(self) {
			return r, true
		}
	}
	return selfRecord{}, false
}

// accepted reports whether the attempt merged at least one list and every
// list it merged lists this node at self.
func (a *joinAttempt) accepted(self string) bool {
	for _, r := range a.self {
		if !r.lists(self) {
			return false
		}
	}
	return len(a.self) > 0
}

// departure is where and when a member left or was declared dead.
type departure struct {
	addr string
	at   time.Time
}

// localMeta pairs this node's metadata with its encoding, swapped as a unit.
type localMeta struct {
	meta NodeMeta
	enc  []byte
}

var (
	_ memberlist.Delegate         = (*delegate)(nil)
	_ memberlist.EventDelegate    = (*delegate)(nil)
	_ memberlist.AliveDelegate    = (*delegate)(nil)
	_ memberlist.MergeDelegate    = (*delegate)(nil)
	_ memberlist.ConflictDelegate = (*delegate)(nil)
)

func newDelegate(meta NodeMeta, logger *slog.Logger) (*delegate, error) {
	enc, err := meta.MarshalBinary()
	if err != nil {
		return nil, err
	}
	d := &delegate{
		name:     meta.ID,
		logger:   logger,
		kick:     make(chan struct{}, 1),
		members:  make(map[string]Member),
		attempts: make(map[*joinAttempt]bool),
		departed: make(map[string]departure),
		warned:   make(map[string]string),
	}
	d.conflicts = make(chan memberlist.Node, 1)
	d.local.Store(&localMeta{meta: meta, enc: enc})
	return d, nil
}

// localMeta returns this node's current metadata.
func (d *delegate) localMeta() NodeMeta { return d.local.Load().meta }

// setLocal replaces this node's metadata; memberlist reads it on its next
// alive message (UpdateNode sends one).
func (d *delegate) setLocal(meta NodeMeta, enc []byte) {
	d.local.Store(&localMeta{meta: meta, enc: enc})
}

// NodeMeta implements memberlist.Delegate. The encoding never exceeds
// memberlist.MetaMaxSize, the only limit memberlist v0.7.0 passes.
func (d *delegate) NodeMeta(limit int) []byte {
	enc := d.local.Load().enc
	if len(enc) > limit {
		d.logger.Error("membership: node metadata exceeds memberlist's limit; announcing none", "bytes", len(enc), "limit", limit)
		return nil
	}
	return enc
}

// NotifyMsg implements memberlist.Delegate (unused).
func (d *delegate) NotifyMsg([]byte) {}

// GetBroadcasts implements memberlist.Delegate (unused).
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }

// LocalState implements memberlist.Delegate (unused).
func (d *delegate) LocalState(join bool) []byte { return nil }

// MergeRemoteState implements memberlist.Delegate (unused).
func (d *delegate) MergeRemoteState(buf []byte, join bool) {}

// NotifyJoin implements memberlist.EventDelegate.
func (d *delegate) NotifyJoin(n *memberlist.Node) { d.upsert(n) }

// NotifyUpdate implements memberlist.EventDelegate.
func (d *delegate) NotifyUpdate(n *memberlist.Node) { d.upsert(n) }

// NotifyLeave implements memberlist.EventDelegate: the member left or was
// declared dead. It remembers where the member was, for NotifyConflict.
func (d *delegate) NotifyLeave(n *memberlist.Node) {
	d.mu.Lock()
	delete(d.members, n.Name)
	if len(d.departed) >= 1024 {
		clear(d.departed)
	}
	d.departed[n.Name] = departure{addr: n.Address(), at: time.Now()}
	d.seq++
	d.mu.Unlock()
	d.poke()
}

func (d *delegate) upsert(n *memberlist.Node) {
	addr := n.Address()
	if n.Name == d.name {
		d.selfAddr.Store(&addr)
	}
	var meta NodeMeta
	err := meta.UnmarshalBinary(n.Meta)
	if err == nil && meta.ID != n.Name {
		err = fmt.Errorf("%w: metadata names %q but the memberlist node is %q", ErrInvalidMeta, meta.ID, n.Name)
	}
	d.mu.Lock()
	delete(d.departed, n.Name)
	if err != nil {
		// NotifyAlive refuses such members, so this is not expected; keep
		// the member out of the table rather than guess.
		delete(d.members, n.Name)
	} else {
		d.members[n.Name] = Member{NodeMeta: meta, GossipAddr: addr}
	}
	d.seq++
	d.mu.Unlock()
	if err != nil {
		d.logger.Error("membership: ignoring member with bad metadata", "node", n.Name, "addr", addr, "err", err)
	}
	d.poke()
}

// poke tells the publisher the table changed, without ever blocking.
func (d *delegate) poke() {
	select {
	case d.kick <- struct{}{}:
	default: // a publish is already pending; it will see this change
	}
}

// snapshot returns the members sorted by id and the change counter they
// reflect.
func (d *delegate) snapshot() ([]Member, uint64) {
	d.mu.Lock()
	out := make([]Member, 0, len(d.members))
	for _, m := range d.members {
		out = append(out, m)
	}
	seq := d.seq
	d.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, seq
}

func (d *delegate) currentSeq() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seq
}

// NotifyAlive implements memberlist.AliveDelegate: a non-nil error keeps the
// peer out of this node's member list.
func (d *delegate) NotifyAlive(peer *memberlist.Node) error {
	if peer.Name == d.name {
		return nil // our own alive messages; memberlist handles impostors as conflicts
	}
	_, err := d.check(peer, false)
	if err != nil {
		d.warnOnce(peer.Name, err)
	}
	return err
}

// check decodes a peer's metadata and checks it against this node's.
func (d *delegate) check(peer *memberlist.Node, joining bool) (NodeMeta, error) {
	var meta NodeMeta
	if err := meta.UnmarshalBinary(peer.Meta); err != nil {
		return meta, fmt.Errorf("member %q at %s: %w", peer.Name, peer.Address(), err)
	}
	if meta.ID != peer.Name {
		return meta, fmt.Errorf("%w: member %q at %s announces id %q in its metadata", ErrInvalidMeta, peer.Name, peer.Address(), meta.ID)
	}
	if err := compatible(d.reference(peer.Name), meta, joining); err != nil {
		return meta, err
	}
	return meta, nil
}

// reference is the metadata a peer is checked against: this node's, with
// a block size and replication it does not declare (an observer: the
// scheduler) taken from the live members it knows, other than the peer
// itself. An observer checked only against its own zeros would admit a
// cache node of any block size: a misfit joining through the scheduler's
// gossip address, or a wrong --join bridging two clusters, would then sit
// in the scheduler's View and ring while the cache nodes refuse it, and
// View.BlockSize could become the misfit's. Members agree on both values
// (each was checked when it came in); where they do not (two clusters
// merged before this check existed), the member with the smallest id wins,
// so the choice is deterministic. With no member declaring them yet, the
// first cache node to come in sets them.
func (d *delegate) reference(peer string) NodeMeta {
	ref := d.localMeta()
	if ref.BlockSize != 0 && ref.Replication != 0 {
		return ref
	}
	needBlock, needRepl := ref.BlockSize == 0, ref.Replication == 0
	var blockFrom, replFrom string
	d.mu.Lock()
	defer d.mu.Unlock()
	// O(members) under d.mu, for observers only: they are few, and
	// memberlist calls check once per alive message or merged member.
	for id, m := range d.members {
		if id == peer || id == d.name {
			continue
		}
		if needBlock && m.BlockSize != 0 && (blockFrom == "" || id < blockFrom) {
			ref.BlockSize, blockFrom = m.BlockSize, id
		}
		if needRepl && m.Replication != 0 && (replFrom == "" || id < replFrom) {
			ref.Replication, replFrom = m.Replication, id
		}
	}
	return ref
}

// NotifyMerge implements memberlist.MergeDelegate. peers is the other side's
// member list; only its live members are checked (dead entries may linger
// from an earlier configuration).
//
// Merges come from both sides of a join: this node joining a seed (peers
// is the seed's list, which holds the seed at the address dialed), and
// another node joining this one (peers is the newcomer's list). Only the
// first is this node's own Join's outcome: a refusal there is what Join
// returns, phrased as this node's misfit; a refusal of a newcomer is the
// newcomer's (was: any refusal during a Join in flight was Join's, so a
// healthy node whose seed was slow exited with a misfit's error). A seed
// dialed at an address its list does not name (a NAT, a Service address)
// cannot be told from a newcomer here: its refusal is recorded as a stray
// one, which Join takes as its own when memberlist returns it
// (joinAttempt.adoptStray). A seed's list also tells this node's Join
// whether the seed lists this node, or a previous incarnation of its id
// at another address (see Join).
func (d *delegate) NotifyMerge(peers []*memberlist.Node) error {
	var self string
	if p := d.selfAddr.Load(); p != nil {
		self = *p
	}
	var rec selfRecord
	for _, peer := range peers {
		if peer.Name == d.name {
			rec = selfRecord{listed: true, addr: peer.Address(), state: peer.State}
		}
	}
	d.mu.Lock()
	var mine []*joinAttempt // the Joins whose seed sent peers
	for a := range d.attempts {
		for _, peer := range peers {
			if (peer.State == memberlist.StateAlive || peer.State == memberlist.StateSuspect) && a.seeds[peer.Address()] {
				mine = append(mine, a)
				a.self = append(a.self, rec)
				break
			}
		}
	}
	d.mu.Unlock()
	joining := len(mine) > 0
	for _, peer := range peers {
		if peer.State != memberlist.StateAlive && peer.State != memberlist.StateSuspect {
			continue
		}
		addr := peer.Address()
		if peer.Name == d.name {
			if addr == self {
				continue // the other side already knows us
			}
			return d.refuse(mine, rec, peer.Name, fmt.Errorf("%w: node id %q is already used by a live member at %s (this node is %s): give every node a unique --node-id",
				ErrDuplicateID, peer.Name, addr, self))
		}
		if _, err := d.check(peer, joining); err != nil {
			return d.refuse(mine, rec, peer.Name, err)
		}
		d.mu.Lock()
		known, ok := d.members[peer.Name]
		d.mu.Unlock()
		if ok && known.GossipAddr != addr {
			return d.refuse(mine, rec, peer.Name, fmt.Errorf("%w: member %q joins from %s but a live member with that id is at %s: give every node a unique --node-id "+
				"(a member restarted at a new address is let in once the failure detector has declared its old address dead)",
				ErrDuplicateID, peer.Name, addr, known.GossipAddr))
		}
	}
	d.mu.Lock()
	d.strayLocked(mine, rec, nil)
	d.mu.Unlock()
	return nil
}

// refuse records a merge refusal for the Joins in mine still in flight
// (a Join's caller reads its attempt after endJoin), or as a stray one
// for every Join in flight when mine is empty (rec is what the list said
// about this node's id), and logs it.
func (d *delegate) refuse(mine []*joinAttempt, rec selfRecord, peer string, err error) error {
	d.mu.Lock()
	for _, a := range mine {
		if d.attempts[a] {
			a.refusals = append(a.refusals, err)
		}
	}
	d.strayLocked(mine, rec, err)
	d.mu.Unlock()
	d.warnOnce(peer, err)
	return err
}

// strayLocked records a list that named no seed (mine is empty) for every
// Join in flight: its refusal err (nil: merged) and rec. d.mu is held.
func (d *delegate) strayLocked(mine []*joinAttempt, rec selfRecord, err error) {
	if len(mine) > 0 {
		return
	}
	for a := range d.attempts {
		a.stray = append(a.stray, strayMerge{err: err, rec: rec})
	}
}

// warnOnce logs a refusal at Warn the first time (per peer and reason) and
// at Debug after that: a refused member may keep knocking.
func (d *delegate) warnOnce(peer string, err error) {
	d.logOnce(peer, err.Error(), slog.LevelWarn, "membership: refusing member", "node", peer, "err", err)
}

// logOnce logs msg at level the first time key is logged for peer in a
// row, and at Debug after that.
func (d *delegate) logOnce(peer, key string, level slog.Level, msg string, args ...any) {
	d.mu.Lock()
	repeat := d.warned[peer] == key
	if !repeat {
		if len(d.warned) >= 1024 {
			clear(d.warned)
		}
		d.warned[peer] = key
	}
	d.mu.Unlock()
	if repeat {
		level = slog.LevelDebug
	}
	d.logger.Log(context.Background(), level, msg, args...)
}

// beginJoin and endJoin bracket a memberlist Join dialing the ip:port
// addresses seeds: what NotifyMerge learns from those seeds' lists in
// between is in the returned attempt, which the caller may read after
// endJoin.
func (d *delegate) beginJoin(seeds []string) *joinAttempt {
	a := &joinAttempt{seeds: make(map[string]bool, len(seeds))}
	for _, s := range seeds {
		a.seeds[s] = true
	}
	d.mu.Lock()
	d.attempts[a] = true
	d.mu.Unlock()
	return a
}

func (d *delegate) endJoin(a *joinAttempt) {
	d.mu.Lock()
	delete(d.attempts, a)
	d.mu.Unlock()
}

// NotifyConflict implements memberlist.ConflictDelegate: two addresses claim
// one node id. memberlist keeps the existing one; we log it loudly, unless
// the existing one is a member that died and the other its restart at a
// new address, which memberlist lets in DeadNodeReclaimTime after the
// death (the restarted node's Join waits for that).
func (d *delegate) NotifyConflict(existing, other *memberlist.Node) {
	if existing.Name == d.name {
		d.logger.Error("membership: another process claims this node's id; give every node a unique --node-id",
			"node", existing.Name, "this", existing.Address(), "other", other.Address())
		o := *other
		o.Meta = slices.Clone(other.Meta)
		select {
		case d.conflicts <- o:
		default: // a check is pending; the claim comes again with the next message
		}
		return
	}
	d.mu.Lock()
	dep, gone := d.departed[existing.Name]
	d.mu.Unlock()
	if gone && dep.addr == existing.Address() {
		// memberlist keeps a dead member's address for DeadNodeReclaimTime
		// and drops its id's alive messages from any other address until
		// then; that member's Join waits for it.
		d.logOnce(existing.Name, "back at "+other.Address(), slog.LevelInfo,
			"membership: a member that died is back at a new address; it is let in once DeadNodeReclaimTime has passed since it was declared dead",
			"node", existing.Name, "old", existing.Address(), "new", other.Address(), "died_ago", time.Since(dep.at).Round(time.Millisecond))
		return
	}
	d.logger.Warn("membership: two members claim one node id; keeping the first",
		"node", existing.Name, "kept", existing.Address(), "ignored", other.Address())
}
