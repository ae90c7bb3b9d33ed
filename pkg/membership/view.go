package membership

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sort"

	"github.com/locuscache/locus/pkg/ring"
)

// Member is one member of a View: what it announced, and where it gossips.
type Member struct {
	NodeMeta
	// GossipAddr is the member's memberlist address, "ip:port".
	GossipAddr string `json:"gossip_addr"`
}

// View is an immutable snapshot of the membership and the ring built from
// it. A Membership publishes a fresh View after every join, leave and
// metadata update it learns of (changes that arrive together may share one
// View). Views are shared between goroutines: do not modify one, nor the
// Members slice.
//
// Ring ownership: every cache member in state alive or draining is on the
// ring with weight 1. Draining members keep ownership until they leave, so
// their cache still serves peer reads while tasks move away; schedulers
// must check Member.Placeable before placing a task. Observers are listed in
// Members but never own ring ranges.
type View struct {
	// Epoch fingerprints the ring's membership: a 53-bit FNV-1a hash of the
	// sorted ring members' ids, racks and weights (exact as a JSON number). It is a deterministic
	// function of that membership, not a counter, so two members that see
	// the same ring members compute the same Epoch on their own: equal
	// epochs mean equal rings (given the same Config.Ring everywhere, which
	// the epoch does not cover). It ignores observers and member states,
	// which do not change ownership. 0 means no ring (no cache member).
	Epoch uint64 `json:"epoch"`
	// Generation counts the Views this process published (1 for the first).
	// It is local: members disagree on it. It grows on every change,
	// including those that keep Epoch (a member draining, an observer
	// joining).
	Generation uint64 `json:"generation"`
	// Ring is the consistent-hash ring of the cache members, nil when there
	// are none. Rings are shared between Views with equal epochs.
	Ring *ring.Ring `json:"-"`
	// Members are the live members (alive or suspected, not yet declared
	// dead), this node included, sorted by ID.
	Members []Member `json:"members"`

	seq     uint64        // delegate change counter this view reflects
	changed chan struct{} // closed when a newer View is published
}

// Changed returns a channel closed when a newer View replaces this one (then
// call Membership.View again). It never closes for the last View of a
// Membership that was shut down (select on Membership.Done too), nor for a
// View made by NewView.
func (v *View) Changed() <-chan struct{} { return v.changed }

// Member returns the member with the given id.
func (v *View) Member(id string) (Member, bool) {
	i := sort.Search(len(v.Members), func(i int) bool { return v.Members[i].ID >= id })
	if i < len(v.Members) && v.Members[i].ID == id {
		return v.Members[i], true
	}
	return Member{}, false
}

// CacheMembers counts the cache nodes among the members (the observers
// left out). It may differ from the ring's nodes: a cache node without a
// cache owns none (ringNodes).
func (v *View) CacheMembers() int {
	n := 0
	for _, m := range v.Members {
		if !m.IsObserver() {
			n++
		}
	}
	return n
}

// BlockSize returns the cluster block size: the BlockSize of the cache
// members (they agree; mismatches are refused), else of any member that
// declared one, else 0.
func (v *View) BlockSize() int64 {
	var any int64
	for _, m := range v.Members {
		if m.BlockSize == 0 {
			continue
		}
		if !m.IsObserver() {
			return m.BlockSize
		}
		any = m.BlockSize
	}
	return any
}

// Replication returns the cluster replication (the length of every block's
// preference list): the Replication of the cache members (they agree;
// mismatches are refused), else of any member that declared one, else 0
// (no member declared one: callers use their own setting or
// DefaultReplication).
func (v *View) Replication() int {
	var any int
	for _, m := range v.Members {
		if m.Replication == 0 {
			continue
		}
		if !m.IsObserver() {
			return m.Replication
		}
		any = m.Replication
	}
	return any
}

// NewView builds a View from a fixed member list, without gossip: for tests
// of code that consumes Views (placement, the scheduler's API) and for tools.
// Members may be in any order; each NodeMeta gets New's defaults and must
// validate. Duplicate ids are an error wrapping ErrDuplicateID; a ring the
// ring package refuses is returned as its error. The View's Generation is 1
// and its Changed channel never closes.
func NewView(members []Member, cfg ring.Config) (*View, error) {
	ms := make([]Member, len(members))
	for i, m := range members {
		m.NodeMeta = m.NodeMeta.withDefaults()
		if err := m.Validate(); err != nil {
			return nil, err
		}
		ms[i] = m
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
	for i := 1; i < len(ms); i++ {
		if ms[i].ID == ms[i-1].ID {
			return nil, fmt.Errorf("%w: %q appears twice", ErrDuplicateID, ms[i].ID)
		}
	}
	v, err := buildView(ms, 0, nil, cfg)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// buildView makes the View after prev for members (sorted by id). It reuses
// prev's ring when the epoch is unchanged. On a ring error it still returns
// a View (with a nil Ring) along with the error, so the membership stays
// visible.
func buildView(members []Member, seq uint64, prev *View, cfg ring.Config) (*View, error) {
	nodes := ringNodes(members)
	v := &View{
		Epoch:   ringEpoch(nodes),
		Members: members,
		seq:     seq,
		changed: make(chan struct{}),
	}
	if prev != nil {
		v.Generation = prev.Generation + 1
	} else {
		v.Generation = 1
	}
	switch {
	case len(nodes) == 0:
	case prev != nil && prev.Ring != nil && prev.Epoch == v.Epoch:
		v.Ring = prev.Ring
	default:
		r, err := ring.New(nodes, cfg)
		if err != nil {
			return v, fmt.Errorf("membership: cannot build the ring of %d members: %w", len(nodes), err)
		}
		v.Ring = r
	}
	return v, nil
}

// ringNodes returns the ring members among members (sorted by id): the cache
// nodes, alive or draining, each of weight 1, except those that announce no
// cache capacity while another does. Ownership decides where a block is
// cached; a node whose cache passes every read through (no slab fitted on
// its disk, and no memory tier) would never cache its share of the blocks,
// and every read of them, its own and its peers', would go to the origin.
// It stays a member: tasks may run there, reading through the owners. When
// no node announces a cache, all own blocks, as the ring still spreads the
// tasks' placement.
func ringNodes(members []Member) []ring.Node {
	cached := slices.ContainsFunc(members, func(m Member) bool { return !m.IsObserver() && m.CapacityBytes > 0 })
	nodes := make([]ring.Node, 0, len(members))
	for _, m := range members {
		if m.IsObserver() || (cached && m.CapacityBytes == 0) {
			continue
		}
		nodes = append(nodes, ring.Node{ID: m.ID, Rack: m.Rack, Weight: 1})
	}
	return nodes
}

// maxEpoch keeps epochs within 53 bits: the scheduler's JSON carries the
// epoch as a number, and JavaScript, jq and any reader that decodes JSON
// numbers as doubles read integers above 2^53 inexactly.
const maxEpoch = 1<<53 - 1

// ringEpoch fingerprints nodes (sorted by id): FNV-1a 64 over each node's
// length-prefixed id, length-prefixed rack and weight bits, its low 53 bits
// (maxEpoch). 0 for no nodes; a non-empty membership never gets 0.
func ringEpoch(nodes []ring.Node) uint64 {
	if len(nodes) == 0 {
		return 0
	}
	h := fnv.New64a()
	var buf []byte
	for _, n := range nodes {
		buf = buf[:0]
		buf = binary.AppendUvarint(buf, uint64(len(n.ID)))
		buf = append(buf, n.ID...)
		buf = binary.AppendUvarint(buf, uint64(len(n.Rack)))
		buf = append(buf, n.Rack...)
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(n.Weight))
		h.Write(buf)
	}
	if e := h.Sum64() & maxEpoch; e != 0 {
		return e
	}
	return 1
}
