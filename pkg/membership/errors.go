package membership

import "errors"

// Sentinel errors. Compare with errors.Is: every error this package returns
// wraps one of these and adds the detail an operator needs (which field, which
// node, which values).
var (
	// ErrInvalidConfig: a Config field is out of range or two fields
	// contradict each other (for example both Key and KeyFile are set).
	// Returned by New.
	ErrInvalidConfig = errors.New("membership: invalid config")

	// ErrInvalidMeta: a NodeMeta field is invalid (empty or over-long id,
	// unknown state, negative slots, page size that does not divide the block
	// size, ...). Returned by NodeMeta.Validate, NodeMeta.MarshalBinary, New
	// and UpdateMeta.
	ErrInvalidMeta = errors.New("membership: invalid node metadata")

	// ErrCorruptMeta: bytes that do not decode as NodeMeta (truncated,
	// unknown format version, duplicate or malformed field). Returned by
	// NodeMeta.UnmarshalBinary; members whose metadata is corrupt are refused.
	ErrCorruptMeta = errors.New("membership: corrupt node metadata")

	// ErrBadAddress: an address that does not parse as host:port (or, for
	// the gossip bind address, as ip:port). Returned by New (bind, advertise,
	// gRPC and HTTP addresses) and Join (seed addresses). Errors for metadata
	// addresses wrap both ErrInvalidMeta and ErrBadAddress.
	ErrBadAddress = errors.New("membership: bad address")

	// ErrKeyFile: the gossip key file cannot be read. Returned by
	// ReadKeyFile and New.
	ErrKeyFile = errors.New("membership: cannot read gossip key file")

	// ErrKeyLength: a gossip key is not 16, 24 or 32 bytes (AES-128/192/256),
	// neither as base64 text nor as raw bytes. Returned by ParseKey,
	// ReadKeyFile and New.
	ErrKeyLength = errors.New("membership: gossip key must be 16, 24 or 32 bytes")

	// ErrIncompatible: a member runs with a different block size,
	// replication or Locus protocol version than this node. Such members are refused in both
	// directions; Join returns it (as an *IncompatibleError) when the
	// cluster refuses this node.
	ErrIncompatible = errors.New("membership: incompatible member")

	// ErrDuplicateID: another live member already uses this node id (the
	// memberlist node name) from a different address. Join returns it when
	// this node's id is taken by a member that answers at its address (a
	// silent one is taken for this node's own crashed previous incarnation:
	// Join waits, see Membership.Join). Membership.Err returns it when two
	// processes with one id joined at the same time and this one stopped.
	ErrDuplicateID = errors.New("membership: duplicate node id")

	// ErrJoin: none of the seed addresses could be reached or completed a
	// state exchange, or, for a node restarted at a new address, the
	// cluster did not let it in within the bound Join waits (see
	// Membership.Join). Returned by Join; the underlying memberlist error
	// or the members still refusing are in the message. Retrying may help.
	ErrJoin = errors.New("membership: cannot join cluster")

	// ErrImmutableField: UpdateMeta tried to change a field that is fixed
	// for the life of a member (ID, Role, BlockSize, Replication,
	// ProtocolVersion).
	ErrImmutableField = errors.New("membership: field cannot change while running")

	// ErrClosed: the Membership was shut down (Leave or Shutdown).
	ErrClosed = errors.New("membership: closed")
)
