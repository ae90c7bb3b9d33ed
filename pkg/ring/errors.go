package ring

import "errors"

// Sentinel errors. Compare with errors.Is: every error this package returns
// wraps one of these and adds the detail (which node, which value).
var (
	// ErrNoNodes: New was given an empty member list. A ring needs at least
	// one node.
	ErrNoNodes = errors.New("ring: no nodes")

	// ErrEmptyID: a Node has an empty ID. Returned by New.
	ErrEmptyID = errors.New("ring: empty node id")

	// ErrDuplicateID: two Nodes share an ID. Returned by New.
	ErrDuplicateID = errors.New("ring: duplicate node id")

	// ErrBadWeight: a Node's Weight is zero, negative, NaN or infinite.
	// Returned by New.
	ErrBadWeight = errors.New("ring: node weight must be a finite number > 0")

	// ErrTooManyNodes: more than MaxNodes members. Returned by New.
	ErrTooManyNodes = errors.New("ring: too many nodes")

	// ErrTooManyPoints: the members' weights times Config.VNodes add up to
	// more than MaxPoints virtual nodes. Returned by New.
	ErrTooManyPoints = errors.New("ring: too many virtual nodes")

	// ErrBadConfig: a Config field is out of range (negative VNodes).
	// Returned by New.
	ErrBadConfig = errors.New("ring: invalid config")

	// ErrBadLoadFactor: OwnerBounded was given a load factor c that is NaN,
	// infinite or below 1.
	ErrBadLoadFactor = errors.New("ring: load factor must be a finite number >= 1")

	// ErrBadLoad: OwnerBounded was given a nil load function or a negative
	// total load.
	ErrBadLoad = errors.New("ring: bad load")

	// ErrNoCapacity: OwnerBounded found every node at or over its capacity.
	// This cannot happen when the load function and totalLoad agree (some
	// node is always below the mean); it means they do not.
	ErrNoCapacity = errors.New("ring: every node is at capacity")

	// ErrEmptyRing: a lookup on the zero Ring (or a nil *Ring), which has no
	// nodes. Rings made by New are never empty.
	ErrEmptyRing = errors.New("ring: empty ring")

	// ErrEmptyURI: PlacementKey was given an empty URI.
	ErrEmptyURI = errors.New("ring: empty uri")

	// ErrNegativeOffset: a split's offset is negative.
	ErrNegativeOffset = errors.New("ring: negative split offset")

	// ErrBadLength: a split's length is zero or negative.
	ErrBadLength = errors.New("ring: split length must be > 0")

	// ErrBadBlockSize: the block size is zero or negative.
	ErrBadBlockSize = errors.New("ring: block size must be > 0")

	// ErrOverflow: a split's offset+length does not fit in an int64.
	ErrOverflow = errors.New("ring: split offset+length overflows int64")
)
