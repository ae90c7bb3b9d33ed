package node

import (
	"sync"
	"time"

	"github.com/locuscache/locus/pkg/membership"
)

// RejoinWindow is how long a node keeps trying to rejoin a member that
// vanished from its view while alive (see rejoiner).
const RejoinWindow = time.Hour

// rejoiner heals network partitions. The gossip declares the members on
// the other side of a partition dead, and forgets them once
// GossipToTheDeadTime has passed; from then on neither side contacts the
// other, so without help the two halves stay two clusters after the
// network heals (memberlist has no reconnect of its own; Serf adds one).
//
// So the node remembers the gossip address of every member that vanished
// from its view while in state alive (a draining member leaves on purpose
// and is not remembered), and every GossipToTheDeadTime it joins the ones
// still absent, for up to RejoinWindow. A successful join merges the full
// state of both sides, so one node reaching across is enough. A member
// that was killed costs one failed dial per interval until it comes back
// or the window closes.
//
// Threading: watchViews calls observe on every view; run owns the
// retries. Both lock mu.
type rejoiner struct {
	mu   sync.Mutex
	lost map[string]lostMember // by member id
	prev map[string]membership.Member
}

type lostMember struct {
	addr  string
	since time.Time
}

func newRejoiner(v *membership.View) *rejoiner {
	r := &rejoiner{lost: map[string]lostMember{}, prev: map[string]membership.Member{}}
	r.observe(v, time.Now())
	return r
}

// observe records the members that vanished while alive since the last
// view, and forgets those that are back.
func (r *rejoiner) observe(v *membership.View, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := make(map[string]membership.Member, len(v.Members))
	for _, m := range v.Members {
		cur[m.ID] = m
		delete(r.lost, m.ID)
	}
	for id, m := range r.prev {
		if _, ok := cur[id]; !ok && m.State != membership.StateDraining && m.GossipAddr != "" {
			r.lost[id] = lostMember{addr: m.GossipAddr, since: now}
		}
	}
	r.prev = cur
}

// due returns the addresses to try now, dropping those past RejoinWindow.
func (r *rejoiner) due(now time.Time) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var addrs []string
	for id, l := range r.lost {
		if now.Sub(l.since) > RejoinWindow {
			delete(r.lost, id)
			continue
		}
		addrs = append(addrs, l.addr)
	}
	return addrs
}

// rejoinLoop tries the lost members every interval until the node stops.
// It is not counted in n.bg: a join across a silent network can take the
// gossip's TCP timeout, which Stop need not wait for.
func (n *Node) rejoinLoop(r *rejoiner, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-n.done:
			return
		case <-t.C:
		}
		if n.state.Load() != stateReady {
			continue
		}
		for _, addr := range r.due(time.Now()) {
			if _, err := n.gossip.Join([]string{addr}); err == nil {
				n.log.Info("rejoined a lost member", "gossip", addr, "members", len(n.members.View().Members))
			} else {
				n.log.Debug("rejoin failed", "gossip", addr, "err", err)
			}
		}
	}
}

// rejoinInterval is the tuning's GossipToTheDeadTime (the LAN default's
// when unset).
func rejoinInterval(t membership.Tuning) time.Duration {
	if t.GossipToTheDeadTime > 0 {
		return t.GossipToTheDeadTime
	}
	return membership.LANTuning().GossipToTheDeadTime
}
