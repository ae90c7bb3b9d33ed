package placement

import (
	"fmt"
	"math"
	"time"
)

// NodeState is a cache node's membership state as the scheduler sees it.
type NodeState uint8

const (
	// Alive nodes take new tasks up to their slots. It is the zero value.
	Alive NodeState = iota
	// Draining nodes keep their running tasks but take no new ones.
	Draining
	// Dead nodes take nothing; their running tasks are reported lost.
	Dead
)

func (s NodeState) String() string {
	switch s {
	case Alive:
		return "alive"
	case Draining:
		return "draining"
	case Dead:
		return "dead"
	}
	return fmt.Sprintf("NodeState(%d)", uint8(s))
}

// Node is one member of the cluster view.
type Node struct {
	ID   string
	Rack string // "" = unknown rack: tasks it owns have no RACK_LOCAL level
	// Slots is how many tasks may run on the node at once.
	Slots int
	State NodeState
}

// Locality is how close a placement is to the task's data. The values match
// the proto enum (LOCALITY_DATA_LOCAL = 1, ...).
type Locality uint8

const (
	// DataLocal: on a node of the task's preference list (owner or replica).
	DataLocal Locality = 1
	// RackLocal: on another node in the owner's rack.
	RackLocal Locality = 2
	// OtherLocal: anywhere else.
	OtherLocal Locality = 3
)

// NumLocalities is the number of locality levels.
const NumLocalities = 3

// Localities lists the levels best first.
var Localities = [NumLocalities]Locality{DataLocal, RackLocal, OtherLocal}

func (l Locality) String() string {
	switch l {
	case DataLocal:
		return "DATA_LOCAL"
	case RackLocal:
		return "RACK_LOCAL"
	case OtherLocal:
		return "OTHER_LOCAL"
	}
	return fmt.Sprintf("Locality(%d)", uint8(l))
}

// Task is one unit of work to place.
type Task struct {
	Job string
	ID  string
	// Prefer is the preference list of the split's placement key, owner
	// first (length = replication). Node ids the placer does not know are
	// kept (they become usable if the node joins) but cannot be chosen while
	// unknown. Duplicates are ignored. It may be empty: the task then has no
	// DATA_LOCAL or RACK_LOCAL level and goes anywhere at once.
	Prefer []string
	// Wait is how long the task may wait at each locality level before
	// stepping down one level. Wait <= 0 steps down at once. The service
	// maps wait_ms with WaitFromMillis.
	Wait time.Duration
}

// Assignment is a placement decision: the task holds one slot on Node until
// Complete, Cancel, or the node dies.
type Assignment struct {
	Job, Task string
	Node      string
	Rack      string // the node's rack
	Locality  Locality
	Owner     string // Prefer[0], "" if the task had no preference
	// Submitted is the task's first-seen time (waits count from it).
	Submitted time.Time
	// Placed is the time of the decision.
	Placed time.Time
}

// Waited is how long the task waited for its slot.
func (a Assignment) Waited() time.Duration { return a.Placed.Sub(a.Submitted) }

// Lost is a running task whose node died, left the membership, or whose
// delivery the caller gave up (Cancel of a running task). Its slot is free
// and it is counted in Lost; a later Complete for it returns ErrUnknownTask.
type Lost struct {
	Job, Task string
	Node      string
	Locality  Locality
	Placed    time.Time
}

// Outcome is what a finished task reports: the bytes it read and how they
// were served (local cache hit, peer cache hit, origin miss).
type Outcome struct {
	Bytes    int64 // total bytes read; 0 means LocalHit+PeerHit+Miss; bytes beyond that sum count as Miss
	LocalHit int64
	PeerHit  int64
	Miss     int64
	Duration time.Duration
}

func (o *Outcome) validate() error {
	if o.Bytes < 0 || o.LocalHit < 0 || o.PeerHit < 0 || o.Miss < 0 || o.Duration < 0 {
		return fmt.Errorf("%w: negative field in %+v", ErrInvalidOutcome, *o)
	}
	if o.LocalHit > math.MaxInt64-o.PeerHit || o.LocalHit+o.PeerHit > math.MaxInt64-o.Miss {
		return fmt.Errorf("%w: byte counts overflow", ErrInvalidOutcome)
	}
	sum := o.LocalHit + o.PeerHit + o.Miss
	if o.Bytes == 0 {
		o.Bytes = sum
	}
	if o.Bytes < sum {
		return fmt.Errorf("%w: bytes %d < local %d + peer %d + miss %d",
			ErrInvalidOutcome, o.Bytes, o.LocalHit, o.PeerHit, o.Miss)
	}
	// Bytes the task did not say were hits were read from the origin:
	// counting them as misses keeps every hit ratio (the counters' and
	// locus_task_bytes_total's by source) over the same bytes.
	o.Miss += o.Bytes - sum
	return nil
}

// NodeStatus is a node as the placer tracks it (for GET /v1/ring and the
// locus_slots gauge).
type NodeStatus struct {
	Node
	Used    int // slots held by running tasks
	Waiting int // queued tasks that prefer this node
}
