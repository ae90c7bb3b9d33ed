package ring

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// Node is a ring member.
type Node struct {
	// ID names the node; it must be non-empty and unique in the ring. The
	// node's virtual nodes are placed by hashing "ID#0", "ID#1", ..., so
	// the ID alone decides where the node sits on the circle. IDs also
	// break ties: of two nodes equally near a key, the one whose ID sorts
	// first wins.
	ID string
	// Rack is the node's failure domain, used by OwnersRackAware. The empty
	// string is a rack like any other (the unnamed rack), so a ring whose
	// nodes all leave Rack empty has one rack.
	Rack string
	// Weight is the node's capacity relative to a weight-1 node: it gets
	// about Weight times as many virtual nodes, hence about Weight times the
	// keys. It must be finite and > 0. Weights are not normalised: changing
	// one node's weight moves keys only to or from that node.
	Weight float64
}

// Config tunes a ring. The zero Config is valid and gives the defaults. Every
// member of a cluster must build its ring with the same Config (and the same
// member set) to agree on owners.
type Config struct {
	// VNodes is the number of virtual nodes (points on the circle) of a
	// node of weight 1. A node of weight w gets max(1, round(w*VNodes))
	// points. 0 means DefaultVNodes; negative is an error.
	//
	// The share of keys a node owns varies around its fair share with a
	// coefficient of variation of about 0.41/sqrt(VNodes) (see the package
	// documentation), and so does the fraction of keys that moves when a
	// node joins; memory and build time grow linearly with it (8 bytes per
	// point, plus a prefix index of 2 to 4 bytes per point, at most 1
	// byte per point past 2^19 points).
	VNodes int

	// Hash maps a key, and a virtual node's name "ID#j", to 64 bits. A
	// point sits at the high 32 bits of its hash; a key probes the circle
	// at both the high and the low 32 bits of its hash. nil means xxhash
	// (github.com/cespare/xxhash/v2), which is fast and well mixed in all
	// 64 bits. A custom Hash must be deterministic, the same on every
	// member, and well mixed in both halves; it must not modify or retain
	// its argument (the ring passes key strings to it without copying).
	// Tests use an identity-like hash to work out owners by hand.
	Hash func([]byte) uint64
}

const (
	// DefaultVNodes is the default Config.VNodes: 2048 points per unit of
	// weight. With two probes per key that keeps the spread of each node's
	// share near 0.9% (coefficient of variation), so a node that joins
	// takes within a few percent of its fair 1/(N+1) of the keys and, at
	// 100 nodes, the busiest node holds well under 10% over the mean. It
	// costs about 17 KiB per weight-1 node: 17.4 MB at 1,000 nodes, built
	// in about 0.15 s on the 2-core development machine.
	DefaultVNodes = 2048

	// MaxNodes is the largest member count.
	MaxNodes = 1 << 16

	// MaxPoints bounds the total number of virtual nodes in a ring (the sum
	// over nodes of max(1, round(Weight*VNodes))): 2^26 points take about
	// 640 MiB.
	MaxPoints = 1 << 26
)

// Ring is an immutable consistent-hash ring. Build one with New whenever the
// member set changes, and publish it to readers with an atomic.Pointer; all
// methods are safe for concurrent use because nothing mutates a built Ring.
//
// The zero Ring (and a nil *Ring) has no nodes: lookups on it return the zero
// Node, empty lists or ErrEmptyRing, never a panic.
type Ring struct {
	nodes     []Node              // members, sorted by ID; the index is the node index
	ids       map[string]int      // ID -> node index
	rack      []uint16            // rack index of each node
	nracks    int                 // distinct racks
	weightSum float64             // sum of node weights
	vnodes    int                 // Config.VNodes after defaults
	custom    func([]byte) uint64 // Config.Hash, nil for the default xxhash

	// The circle (lookup.go describes the layout). points holds one entry
	// per distinct position, position<<32 | dupFlag | node index, sorted,
	// in points[1..last], after a copy of the last entry (points[0]) and
	// before padding; the entry's node is the lowest node index at its
	// position, which follows the ID order, so ties break the same way in
	// every process. dups holds the other points at shared positions,
	// position<<32 | node index, sorted. table is the prefix index:
	// table[b] is the index in points of the first entry whose position's
	// top bits (position >> shift) are >= b; mask keeps the other bits, and
	// interp says the buckets are big enough to interpolate in (see
	// indexBits). npoints counts every point, shared positions included.
	points  []uint64
	dups    []uint64
	last    int
	npoints int
	table   []uint32
	shift   uint
	mask    uint32
	interp  bool
}

// New builds a ring over nodes. The ring depends only on the member set and
// cfg, not on the order of nodes: every process that builds a ring from the
// same members computes the same owners. New copies nodes.
//
// Errors: ErrNoNodes for an empty list, ErrEmptyID, ErrDuplicateID,
// ErrBadWeight for a zero, negative, NaN or infinite weight, ErrTooManyNodes
// over MaxNodes members, ErrBadConfig for a negative VNodes, and
// ErrTooManyPoints when the weights times VNodes exceed MaxPoints.
func New(nodes []Node, cfg Config) (*Ring, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, ErrNoNodes
	}
	if len(nodes) > MaxNodes {
		return nil, fmt.Errorf("%w: %d members, at most %d", ErrTooManyNodes, len(nodes), MaxNodes)
	}
	r := &Ring{
		nodes:  slices.Clone(nodes),
		ids:    make(map[string]int, len(nodes)),
		rack:   make([]uint16, len(nodes)),
		vnodes: cfg.VNodes,
	}
	slices.SortFunc(r.nodes, func(a, b Node) int { return strings.Compare(a.ID, b.ID) })
	counts := make([]int, len(r.nodes))
	total := 0
	racks := make(map[string]uint16)
	for i, n := range r.nodes {
		if n.ID == "" {
			return nil, ErrEmptyID
		}
		if i > 0 && r.nodes[i-1].ID == n.ID {
			return nil, fmt.Errorf("%w: %q", ErrDuplicateID, n.ID)
		}
		if math.IsNaN(n.Weight) || math.IsInf(n.Weight, 0) || n.Weight <= 0 {
			return nil, fmt.Errorf("%w: node %q has weight %v", ErrBadWeight, n.ID, n.Weight)
		}
		v := max(1, math.Round(n.Weight*float64(cfg.VNodes)))
		if v > float64(MaxPoints-total) {
			return nil, fmt.Errorf("%w: node %q with weight %v needs %.0f points; the ring holds at most %d in all",
				ErrTooManyPoints, n.ID, n.Weight, v, MaxPoints)
		}
		counts[i] = int(v)
		total += counts[i]
		r.ids[n.ID] = i
		r.weightSum += n.Weight
		ri, ok := racks[n.Rack]
		if !ok {
			ri = uint16(len(racks))
			racks[n.Rack] = ri
		}
		r.rack[i] = ri
	}
	r.nracks = len(racks)

	r.custom = cfg.Hash
	hashBytes := cfg.Hash
	if hashBytes == nil {
		hashBytes = xxhash.Sum64
	}
	r.build(counts, total, hashBytes)
	return r, nil
}

// validate fills defaults into c and rejects impossible values.
func (c *Config) validate() error {
	if c.VNodes < 0 {
		return fmt.Errorf("%w: VNodes is %d, want >= 0 (0 means %d)", ErrBadConfig, c.VNodes, DefaultVNodes)
	}
	if c.VNodes == 0 {
		c.VNodes = DefaultVNodes
	}
	return nil
}

// hash hashes a key with Config.Hash. The Hash contract forbids modifying
// or retaining the argument, so a custom hash gets the string's bytes
// without a copy (and without an allocation per lookup).
func (r *Ring) hash(key string) uint64 {
	if r.custom == nil {
		return xxhash.Sum64String(key)
	}
	return r.custom(unsafe.Slice(unsafe.StringData(key), len(key)))
}

func (r *Ring) empty() bool { return r == nil || len(r.nodes) == 0 }

// Len returns the number of nodes.
func (r *Ring) Len() int {
	if r == nil {
		return 0
	}
	return len(r.nodes)
}

// Node returns the node with index i, 0 <= i < Len(). Node indices follow the
// order of IDs, so they change when the member set changes: do not keep an
// index across rings. Out of range, it returns the zero Node.
func (r *Ring) Node(i int) Node {
	if r == nil || i < 0 || i >= len(r.nodes) {
		return Node{}
	}
	return r.nodes[i]
}

// Nodes returns a copy of the members, sorted by ID (so the slice index is
// the node index).
func (r *Ring) Nodes() []Node {
	if r == nil {
		return nil
	}
	return slices.Clone(r.nodes)
}

// Index returns the index of the node with the given ID.
func (r *Ring) Index(id string) (int, bool) {
	if r == nil {
		return 0, false
	}
	i, ok := r.ids[id]
	return i, ok
}

// VNodes returns Config.VNodes after defaults: the points of a weight-1 node.
func (r *Ring) VNodes() int {
	if r == nil {
		return 0
	}
	return r.vnodes
}

// Points returns the number of virtual nodes on the circle.
func (r *Ring) Points() int {
	if r == nil {
		return 0
	}
	return r.npoints
}

// SizeBytes estimates the ring's memory: the points, the prefix index and
// the per-node data (not counting the bytes of the ID and rack strings,
// which are shared with the caller's Nodes).
func (r *Ring) SizeBytes() int {
	if r == nil {
		return 0
	}
	const perNode = int(unsafe.Sizeof(Node{})) + 2 + 48 // node, rack index, map entry (approx.)
	return 8*len(r.points) + 8*len(r.dups) + 4*len(r.table) + perNode*len(r.nodes)
}
