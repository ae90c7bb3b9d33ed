package membership

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"

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
//   - memberlist.ConflictDelegate: logs two addresses claiming one id.
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

	mu       sync.Mutex
	members  map[string]Member // guarded by mu: live (alive or suspect) members by id, self included
	seq      uint64            // guarded by mu: bumped on every change to members
	joining  int               // guarded by mu: number of Join calls in flight
	seeds    map[string]int    // guarded by mu: the ip:port addresses those Joins dial (how many of them dial each)
	refusals []error           // guarded by mu: refusals of a seed's member list (this node's side of its own Join)
	warned   map[string]string // guarded by mu: last refusal logged per peer, to log each once
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
		name:    meta.ID,
		logger:  logger,
		kick:    make(chan struct{}, 1),
		members: make(map[string]Member),
		warned:  make(map[string]string),
	}
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
// declared dead.
func (d *delegate) NotifyLeave(n *memberlist.Node) {
	d.mu.Lock()
	delete(d.members, n.Name)
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
// healthy node whose seed was slow exited with a misfit's error).
func (d *delegate) NotifyMerge(peers []*memberlist.Node) error {
	d.mu.Lock()
	joining := false
	if d.joining > 0 {
		for _, peer := range peers {
			if (peer.State == memberlist.StateAlive || peer.State == memberlist.StateSuspect) && d.seeds[peer.Address()] > 0 {
				joining = true
				break
			}
		}
	}
	d.mu.Unlock()
	var self string
	if p := d.selfAddr.Load(); p != nil {
		self = *p
	}
	for _, peer := range peers {
		if peer.State != memberlist.StateAlive && peer.State != memberlist.StateSuspect {
			continue
		}
		addr := peer.Address()
		if peer.Name == d.name {
			if addr == self {
				continue // the other side already knows us
			}
			return d.refuse(joining, peer.Name, fmt.Errorf("%w: node id %q is already used by a live member at %s (this node is %s): give every node a unique --node-id",
				ErrDuplicateID, peer.Name, addr, self))
		}
		if _, err := d.check(peer, joining); err != nil {
			return d.refuse(joining, peer.Name, err)
		}
		d.mu.Lock()
		known, ok := d.members[peer.Name]
		d.mu.Unlock()
		if ok && known.GossipAddr != addr {
			return d.refuse(joining, peer.Name, fmt.Errorf("%w: member %q joins from %s but a live member with that id is at %s: give every node a unique --node-id",
				ErrDuplicateID, peer.Name, addr, known.GossipAddr))
		}
	}
	return nil
}

// refuse records a merge refusal for Join and logs it.
func (d *delegate) refuse(joining bool, peer string, err error) error {
	d.mu.Lock()
	if joining {
		d.refusals = append(d.refusals, err)
	}
	d.mu.Unlock()
	d.warnOnce(peer, err)
	return err
}

// warnOnce logs a refusal at Warn the first time (per peer and reason) and
// at Debug after that: a refused member may keep knocking.
func (d *delegate) warnOnce(peer string, err error) {
	msg := err.Error()
	d.mu.Lock()
	repeat := d.warned[peer] == msg
	if !repeat {
		if len(d.warned) >= 1024 {
			clear(d.warned)
		}
		d.warned[peer] = msg
	}
	d.mu.Unlock()
	level := slog.LevelWarn
	if repeat {
		level = slog.LevelDebug
	}
	d.logger.Log(context.Background(), level, "membership: refusing member", "node", peer, "err", err)
}

// beginJoin and endJoin bracket a Join dialing the ip:port addresses
// seeds: refusals of those seeds' lists recorded in between are returned
// by endJoin.
func (d *delegate) beginJoin(seeds []string) {
	d.mu.Lock()
	d.joining++
	if d.seeds == nil {
		d.seeds = map[string]int{}
	}
	for _, s := range seeds {
		d.seeds[s]++
	}
	d.mu.Unlock()
}

func (d *delegate) endJoin(seeds []string) []error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.joining--
	for _, s := range seeds {
		if d.seeds[s]--; d.seeds[s] <= 0 {
			delete(d.seeds, s)
		}
	}
	out := d.refusals
	if d.joining == 0 {
		d.refusals = nil
	}
	return out
}

// NotifyConflict implements memberlist.ConflictDelegate: two addresses claim
// one node id. memberlist keeps the existing one; we log it loudly.
func (d *delegate) NotifyConflict(existing, other *memberlist.Node) {
	if existing.Name == d.name {
		d.logger.Error("membership: another process claims this node's id; give every node a unique --node-id",
			"node", existing.Name, "this", existing.Address(), "other", other.Address())
		return
	}
	d.logger.Warn("membership: two members claim one node id; keeping the first",
		"node", existing.Name, "kept", existing.Address(), "ignored", other.Address())
}
