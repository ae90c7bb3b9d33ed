package membership

import (
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"

	"github.com/hashicorp/memberlist"
)

// ProtocolVersion is the Locus wire protocol version this build speaks. It is
// the default for NodeMeta.ProtocolVersion; members whose version differs are
// refused.
const ProtocolVersion uint32 = 1

// DefaultBlockSize is the cluster block size a cache node gets when its
// NodeMeta.BlockSize is zero: 128 MiB, as in DESIGN.md.
const DefaultBlockSize int64 = 128 << 20

// DefaultReplication is the cluster replication (the length of every
// block's preference list) a cache node gets when its NodeMeta.Replication
// is zero: 2, as Trino's file-system cache (fs.cache.preferred-hosts-count
// defaults to 2). The placement simulation (pkg/placement/placementtest)
// shows why: with owner-only lists (1) a 2x oversubscribed cluster with
// realistic task times stays near 92% DATA_LOCAL under 3 s locality waits,
// with 2 it reaches 99%; the cost is that a hot block may be cached on both
// of its nodes.
const DefaultReplication = 2

// MaxReplication bounds NodeMeta.Replication. It equals the longest
// preference list the placement core accepts (placement.MaxPrefer).
const MaxReplication = 8

// Limits on metadata fields. With them the encoded NodeMeta always fits in
// memberlist's MetaMaxSize (512 bytes), leaving room for fields added later.
const (
	MaxIDLen   = 128     // node id (the memberlist node name)
	MaxRackLen = 64      // rack name
	MaxAddrLen = 96      // gRPC and HTTP addresses, host:port
	MaxSlots   = 1 << 20 // executor slots per node
)

// State is a member's lifecycle state as announced in its metadata.
type State string

const (
	// StateAlive: the member serves reads and takes new tasks. The zero
	// value of State means StateAlive.
	StateAlive State = "alive"
	// StateDraining: the member is going away. It keeps its ring ownership
	// (its cache still serves peer reads) until it leaves, but schedulers
	// must not place new tasks on it.
	StateDraining State = "draining"
)

// Role says whether a member owns part of the ring.
type Role string

const (
	// RoleCache: a cache node; it owns ring ranges. The zero value of Role
	// means RoleCache.
	RoleCache Role = "cache"
	// RoleObserver: a member that only watches the gossip (the scheduler,
	// locusctl). It never owns ring ranges and never receives tasks.
	RoleObserver Role = "observer"
)

// NodeMeta is what a member announces about itself through memberlist's node
// metadata. ID is also the memberlist node name and must be unique.
//
// The zero values of State and Role mean StateAlive and RoleCache; New fills
// ProtocolVersion (ProtocolVersion) and, for cache nodes, BlockSize
// (DefaultBlockSize) and Replication (DefaultReplication) when they are
// zero.
type NodeMeta struct {
	ID       string `json:"id"`        // 1..MaxIDLen bytes of [A-Za-z0-9._-]
	Rack     string `json:"rack"`      // optional, 0..MaxRackLen bytes of [A-Za-z0-9._-]
	GRPCAddr string `json:"grpc_addr"` // host:port peers dial; required for cache nodes
	HTTPAddr string `json:"http_addr"` // host:port of /metrics and the S3 gateway; optional

	Slots         int   `json:"slots"`          // executor slots, 0..MaxSlots
	CapacityBytes int64 `json:"capacity_bytes"` // cache capacity, >= 0
	State         State `json:"state"`          // alive or draining

	// BlockSize is the cluster block size in bytes: the unit of ring
	// ownership. It must be the same on every member; a member whose block
	// size differs is refused. Observers may leave it 0 to accept the
	// cluster's (View.BlockSize reports it).
	BlockSize int64 `json:"block_size"`
	// Replication is the cluster replication: the length of every block's
	// preference list (ring.Owners(key, Replication)). A cache node in a
	// block's list serves it from its own cache, the others read it through
	// the list, and a scheduler counts a task DATA_LOCAL on any node of the
	// list, so it is part of the cluster's data layout like BlockSize: it
	// must be the same on every member, and a member whose replication
	// differs is refused. Observers may leave it 0 to accept the cluster's
	// (View.Replication reports it). 0 on a cache node (decoded from a
	// release that did not announce it) is not checked. 0..MaxReplication.
	Replication int `json:"replication"`
	// PageSize is the node's cache page size in bytes (optional, 0 =
	// unknown). When set it must divide BlockSize, so a page never spans two
	// blocks. It may differ between members.
	PageSize int64 `json:"page_size"`
	// ProtocolVersion is the Locus protocol version; it must be the same on
	// every member.
	ProtocolVersion uint32 `json:"protocol_version"`
	Role            Role   `json:"role"` // cache or observer
	// Boot is a random number a member draws when its process starts (New
	// draws it when the Config leaves it 0; UpdateMeta keeps it). A member
	// whose Boot changes under the same ID has restarted, although the
	// gossip may never have seen it die (a restart quicker than the
	// failure detector): the scheduler then reports its running tasks
	// lost. 0: unknown (a release that did not announce it).
	Boot uint64 `json:"boot,omitempty"`
}

// IsObserver reports whether m is an observer (it owns no ring ranges).
func (m NodeMeta) IsObserver() bool { return m.Role == RoleObserver }

// Placeable reports whether a scheduler may place new tasks on this member:
// a cache node in state alive. Draining members and observers are not
// placeable.
func (m NodeMeta) Placeable() bool {
	return !m.IsObserver() && (m.State == StateAlive || m.State == "")
}

// withDefaults fills the zero values New documents.
func (m NodeMeta) withDefaults() NodeMeta {
	if m.State == "" {
		m.State = StateAlive
	}
	if m.Role == "" {
		m.Role = RoleCache
	}
	if m.ProtocolVersion == 0 {
		m.ProtocolVersion = ProtocolVersion
	}
	if m.BlockSize == 0 && m.Role == RoleCache {
		m.BlockSize = DefaultBlockSize
	}
	if m.Replication == 0 && m.Role == RoleCache {
		m.Replication = DefaultReplication
	}
	return m
}

// Validate reports the first invalid field as an error wrapping
// ErrInvalidMeta (and ErrBadAddress for addresses). Empty State and Role are
// accepted as their defaults; ProtocolVersion must be set (New sets it).
func (m NodeMeta) Validate() error {
	if err := validateName("node id", m.ID, MaxIDLen, false); err != nil {
		return err
	}
	if err := validateName("rack", m.Rack, MaxRackLen, true); err != nil {
		return err
	}
	observer := false
	switch m.Role {
	case RoleCache, "":
	case RoleObserver:
		observer = true
	default:
		return fmt.Errorf("%w: node %q: unknown role %q (want %q or %q)", ErrInvalidMeta, m.ID, m.Role, RoleCache, RoleObserver)
	}
	switch m.State {
	case StateAlive, StateDraining, "":
	default:
		return fmt.Errorf("%w: node %q: unknown state %q (want %q or %q)", ErrInvalidMeta, m.ID, m.State, StateAlive, StateDraining)
	}
	if m.GRPCAddr == "" && !observer {
		return fmt.Errorf("%w: node %q: a cache node needs a gRPC address (host:port) that peers can dial", ErrInvalidMeta, m.ID)
	}
	for _, a := range []struct{ name, addr string }{{"gRPC", m.GRPCAddr}, {"HTTP", m.HTTPAddr}} {
		if a.addr == "" {
			continue
		}
		if len(a.addr) > MaxAddrLen {
			return fmt.Errorf("%w: node %q: %s address is %d bytes, the limit is %d: %w", ErrInvalidMeta, m.ID, a.name, len(a.addr), MaxAddrLen, ErrBadAddress)
		}
		if err := checkDialAddr(a.addr); err != nil {
			return fmt.Errorf("%w: node %q: %s address: %w", ErrInvalidMeta, m.ID, a.name, err)
		}
	}
	if m.Slots < 0 || m.Slots > MaxSlots {
		return fmt.Errorf("%w: node %q: slots %d out of range [0, %d]", ErrInvalidMeta, m.ID, m.Slots, MaxSlots)
	}
	if m.CapacityBytes < 0 {
		return fmt.Errorf("%w: node %q: negative capacity %d", ErrInvalidMeta, m.ID, m.CapacityBytes)
	}
	switch {
	case m.BlockSize < 0:
		return fmt.Errorf("%w: node %q: negative block size %d", ErrInvalidMeta, m.ID, m.BlockSize)
	case m.BlockSize == 0 && !observer:
		return fmt.Errorf("%w: node %q: a cache node needs a block size", ErrInvalidMeta, m.ID)
	}
	if m.Replication < 0 || m.Replication > MaxReplication {
		return fmt.Errorf("%w: node %q: replication %d out of range [0, %d] (0: not declared)", ErrInvalidMeta, m.ID, m.Replication, MaxReplication)
	}
	if m.PageSize < 0 {
		return fmt.Errorf("%w: node %q: negative page size %d", ErrInvalidMeta, m.ID, m.PageSize)
	}
	if m.PageSize > 0 && m.BlockSize > 0 && (m.PageSize > m.BlockSize || m.BlockSize%m.PageSize != 0) {
		return fmt.Errorf("%w: node %q: page size %s does not divide block size %s (a page must not span two blocks)",
			ErrInvalidMeta, m.ID, FormatBytes(m.PageSize), FormatBytes(m.BlockSize))
	}
	if m.ProtocolVersion == 0 {
		return fmt.Errorf("%w: node %q: protocol version 0 (this build speaks %d)", ErrInvalidMeta, m.ID, ProtocolVersion)
	}
	return nil
}

// validateName checks an id or rack: bounded length, [A-Za-z0-9._-].
func validateName(what, s string, limit int, optional bool) error {
	if s == "" {
		if optional {
			return nil
		}
		return fmt.Errorf("%w: empty %s", ErrInvalidMeta, what)
	}
	if len(s) > limit {
		return fmt.Errorf("%w: %s %.20q... is %d bytes, the limit is %d", ErrInvalidMeta, what, s, len(s), limit)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			continue
		}
		return fmt.Errorf("%w: %s %q: byte %q at %d is not allowed (use letters, digits, '.', '_', '-')", ErrInvalidMeta, what, s, c, i)
	}
	return nil
}

// checkDialAddr checks that addr is host:port with a non-empty host that is
// not an unspecified IP (0.0.0.0 or ::) and a port in 1..65535: an address a
// peer can dial.
func checkDialAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: %q: %v", ErrBadAddress, addr, err)
	}
	if host == "" {
		return fmt.Errorf("%w: %q has no host; advertise a host or IP peers can dial", ErrBadAddress, addr)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("%w: %q is a wildcard address; advertise a host or IP peers can dial", ErrBadAddress, addr)
	}
	if _, err := parsePort(port, false); err != nil {
		return fmt.Errorf("%w: %q: %v", ErrBadAddress, addr, err)
	}
	return nil
}

// parsePort parses a decimal port in 1..65535 (0..65535 if zeroOK).
func parsePort(s string, zeroOK bool) (int, error) {
	p, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("port %q is not a number in 0..65535", s)
	}
	if p == 0 && !zeroOK {
		return 0, fmt.Errorf("port 0 is not dialable")
	}
	return int(p), nil
}

// Wire format of NodeMeta (format version 1):
//
//	byte 0      format version (metaFormat)
//	then fields: tag (1 byte), length (uvarint), value (length bytes)
//
// Strings are raw bytes; integers are uvarints filling exactly the field's
// length; State and Role are one byte codes. Zero-valued fields are omitted
// (except ID and ProtocolVersion). A decoder skips tags it does not know, so
// later releases can add fields without a format bump; a known tag may appear
// once. A new format version means a layout this decoder cannot read.
//
// Replication (tag 12) was added that way, after the first release: a
// release that does not know it skips it, and this release decodes such a
// release's metadata with Replication 0, which compatible does not check.
// Neither metaFormat nor ProtocolVersion changed, so a cluster can be
// upgraded one node at a time.
const metaFormat = 1

const (
	tagID              = 1
	tagRack            = 2
	tagGRPCAddr        = 3
	tagHTTPAddr        = 4
	tagSlots           = 5
	tagCapacityBytes   = 6
	tagState           = 7
	tagBlockSize       = 8
	tagPageSize        = 9
	tagProtocolVersion = 10
	tagRole            = 11
	tagReplication     = 12 // added after the first release: old decoders skip it
	tagBoot            = 13 // added later still, the same way
	maxKnownTag        = 13
)

// MarshalBinary encodes m in the compact wire format memberlist carries as
// node metadata. It validates m first (errors wrap ErrInvalidMeta) and the
// result is at most memberlist.MetaMaxSize (512) bytes.
func (m NodeMeta) MarshalBinary() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 128)
	b = append(b, metaFormat)
	putStr := func(tag byte, s string, always bool) {
		if s == "" && !always {
			return
		}
		b = append(b, tag)
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	putUint := func(tag byte, v uint64, always bool) {
		if v == 0 && !always {
			return
		}
		var tmp [binary.MaxVarintLen64]byte
		n := binary.PutUvarint(tmp[:], v)
		b = append(b, tag, byte(n))
		b = append(b, tmp[:n]...)
	}
	putStr(tagID, m.ID, true)
	putStr(tagRack, m.Rack, false)
	putStr(tagGRPCAddr, m.GRPCAddr, false)
	putStr(tagHTTPAddr, m.HTTPAddr, false)
	putUint(tagSlots, uint64(m.Slots), false)
	putUint(tagCapacityBytes, uint64(m.CapacityBytes), false)
	if m.State == StateDraining {
		b = append(b, tagState, 1, 1)
	}
	putUint(tagBlockSize, uint64(m.BlockSize), false)
	putUint(tagPageSize, uint64(m.PageSize), false)
	putUint(tagProtocolVersion, uint64(m.ProtocolVersion), true)
	if m.Role == RoleObserver {
		b = append(b, tagRole, 1, 1)
	}
	putUint(tagReplication, uint64(m.Replication), false)
	putUint(tagBoot, m.Boot, false)
	if len(b) > memberlist.MetaMaxSize {
		// Unreachable with the field limits above; kept as a guard.
		return nil, fmt.Errorf("%w: node %q: encoded metadata is %d bytes, memberlist allows %d", ErrInvalidMeta, m.ID, len(b), memberlist.MetaMaxSize)
	}
	return b, nil
}

// UnmarshalBinary decodes the wire format written by MarshalBinary. Malformed
// input gives an error wrapping ErrCorruptMeta; well-formed input with an
// invalid field gives ErrInvalidMeta (see Validate). On success State and
// Role are explicit (never empty).
func (m *NodeMeta) UnmarshalBinary(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty", ErrCorruptMeta)
	}
	if len(b) > memberlist.MetaMaxSize {
		return fmt.Errorf("%w: %d bytes, more than memberlist's %d", ErrCorruptMeta, len(b), memberlist.MetaMaxSize)
	}
	if b[0] != metaFormat {
		return fmt.Errorf("%w: format version %d, this build reads %d (upgrade this node)", ErrCorruptMeta, b[0], metaFormat)
	}
	var out NodeMeta
	var seen [maxKnownTag + 1]bool
	for p := 1; p < len(b); {
		tag := b[p]
		p++
		n, k := binary.Uvarint(b[p:])
		if k <= 0 {
			return fmt.Errorf("%w: bad length of field %d at byte %d", ErrCorruptMeta, tag, p)
		}
		p += k
		if n > uint64(len(b)-p) {
			return fmt.Errorf("%w: field %d is %d bytes but only %d remain", ErrCorruptMeta, tag, n, len(b)-p)
		}
		val := b[p : p+int(n)]
		p += int(n)
		if tag == 0 || tag > maxKnownTag {
			continue // a field from a later release: skip it
		}
		if seen[tag] {
			return fmt.Errorf("%w: field %d appears twice", ErrCorruptMeta, tag)
		}
		seen[tag] = true
		var err error
		switch tag {
		case tagID:
			out.ID = string(val)
		case tagRack:
			out.Rack = string(val)
		case tagGRPCAddr:
			out.GRPCAddr = string(val)
		case tagHTTPAddr:
			out.HTTPAddr = string(val)
		case tagSlots:
			var v uint64
			v, err = decodeUint(val, MaxSlots)
			out.Slots = int(v)
		case tagCapacityBytes:
			var v uint64
			v, err = decodeUint(val, math.MaxInt64)
			out.CapacityBytes = int64(v)
		case tagState:
			switch {
			case len(val) == 1 && val[0] == 0:
				out.State = StateAlive
			case len(val) == 1 && val[0] == 1:
				out.State = StateDraining
			default:
				err = fmt.Errorf("unknown state code %v", val)
			}
		case tagBlockSize:
			var v uint64
			v, err = decodeUint(val, math.MaxInt64)
			out.BlockSize = int64(v)
		case tagPageSize:
			var v uint64
			v, err = decodeUint(val, math.MaxInt64)
			out.PageSize = int64(v)
		case tagProtocolVersion:
			var v uint64
			v, err = decodeUint(val, math.MaxUint32)
			out.ProtocolVersion = uint32(v)
		case tagRole:
			switch {
			case len(val) == 1 && val[0] == 0:
				out.Role = RoleCache
			case len(val) == 1 && val[0] == 1:
				out.Role = RoleObserver
			default:
				err = fmt.Errorf("unknown role code %v", val)
			}
		case tagReplication:
			var v uint64
			v, err = decodeUint(val, MaxReplication)
			out.Replication = int(v)
		case tagBoot:
			out.Boot, err = decodeUint(val, math.MaxUint64)
		}
		if err != nil {
			return fmt.Errorf("%w: field %d: %v", ErrCorruptMeta, tag, err)
		}
	}
	if !seen[tagID] {
		return fmt.Errorf("%w: no node id", ErrCorruptMeta)
	}
	if !seen[tagProtocolVersion] {
		return fmt.Errorf("%w: node %q: no protocol version", ErrCorruptMeta, out.ID)
	}
	if out.State == "" {
		out.State = StateAlive
	}
	if out.Role == "" {
		out.Role = RoleCache
	}
	if err := out.Validate(); err != nil {
		return err
	}
	*m = out
	return nil
}

// decodeUint reads a uvarint that must fill val exactly and be <= max.
func decodeUint(val []byte, max uint64) (uint64, error) {
	v, k := binary.Uvarint(val)
	if k <= 0 || k != len(val) {
		return 0, fmt.Errorf("malformed integer % x", val)
	}
	if v > max {
		return 0, fmt.Errorf("integer %d exceeds %d", v, max)
	}
	return v, nil
}

// FormatBytes renders a size the way error messages quote block and page
// sizes: "128 MiB", "4 KiB", "1 GiB", or "1000 bytes" when no binary unit
// divides it exactly.
func FormatBytes(n int64) string {
	units := []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}}
	if n > 0 {
		for _, u := range units {
			if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
				return strconv.FormatInt(n>>u.shift, 10) + " " + u.name
			}
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// IncompatibleError explains why a member was refused: its block size,
// replication or protocol version differs from this node's. It wraps
// ErrIncompatible.
type IncompatibleError struct {
	Field  string // "block size", "replication" or "protocol version"
	Local  int64  // this node's value
	Remote int64  // the other member's value
	Peer   string // the other member's id
	// Joining is true when this node is the newcomer (the error comes from
	// Join): the message then tells the operator how to restart this node.
	Joining bool
}

func (e *IncompatibleError) Error() string {
	local, remote := e.format(e.Local), e.format(e.Remote)
	var b strings.Builder
	b.WriteString("membership: ")
	if e.Joining {
		fmt.Fprintf(&b, "this node's %s %s differs from the cluster's %s (member %q): ", e.Field, local, remote, e.Peer)
		switch e.Field {
		case "block size":
			fmt.Fprintf(&b, "start this node with --block-size=%d (%s), the same on every node", e.Remote, remote)
		case "replication":
			fmt.Fprintf(&b, "start this node with --replication=%d, the same on every node (it is the preference-list length: nodes that disagree on it disagree on which node caches a block)", e.Remote)
		default:
			b.WriteString("run the same Locus release on every node")
		}
	} else {
		fmt.Fprintf(&b, "refusing member %q: its %s %s differs from this cluster's %s", e.Peer, e.Field, remote, local)
		if e.Field == "replication" {
			fmt.Fprintf(&b, " (start it with --replication=%d)", e.Local)
		}
	}
	return b.String()
}

func (e *IncompatibleError) format(v int64) string {
	if e.Field == "block size" {
		return FormatBytes(v)
	}
	return strconv.FormatInt(v, 10)
}

// Unwrap makes errors.Is(err, ErrIncompatible) true.
func (e *IncompatibleError) Unwrap() error { return ErrIncompatible }

// compatible reports whether peer may be a member of a cluster that local
// belongs to: same protocol version, same block size unless one of them
// is an observer that declared none (0), and same replication unless one of
// them declared none (an observer, or a release that did not announce it).
// The check is symmetric.
func compatible(local, peer NodeMeta, joining bool) error {
	if local.ProtocolVersion != peer.ProtocolVersion {
		return &IncompatibleError{Field: "protocol version", Local: int64(local.ProtocolVersion), Remote: int64(peer.ProtocolVersion), Peer: peer.ID, Joining: joining}
	}
	if local.BlockSize != 0 && peer.BlockSize != 0 && local.BlockSize != peer.BlockSize {
		return &IncompatibleError{Field: "block size", Local: local.BlockSize, Remote: peer.BlockSize, Peer: peer.ID, Joining: joining}
	}
	if local.Replication != 0 && peer.Replication != 0 && local.Replication != peer.Replication {
		return &IncompatibleError{Field: "replication", Local: int64(local.Replication), Remote: int64(peer.Replication), Peer: peer.ID, Joining: joining}
	}
	return nil
}
