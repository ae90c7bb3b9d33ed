package placement

import "errors"

// Sentinel errors. Methods wrap them with context; compare with errors.Is.
var (
	// ErrInvalidConfig is returned by New for a Config with a negative field.
	ErrInvalidConfig = errors.New("placement: invalid config")
	// ErrInvalidNode is returned by SetNodes and UpsertNode for a node with an
	// empty ID, negative slots, an unknown state, or an ID listed twice.
	ErrInvalidNode = errors.New("placement: invalid node")
	// ErrInvalidTask is returned by Submit and PlaceBatch for a task with an
	// empty job or ID, or more than MaxPrefer preferred nodes.
	ErrInvalidTask = errors.New("placement: invalid task")
	// ErrDuplicateTask is returned by Submit and PlaceBatch for a (job, task)
	// that is already queued or running, or listed twice in one batch.
	ErrDuplicateTask = errors.New("placement: duplicate task")
	// ErrNoCapacity is returned by Submit and PlaceBatch when no alive node
	// has any slot, so a queued task could never be placed (the service
	// answers 503).
	ErrNoCapacity = errors.New("placement: no alive node with slots")
	// ErrQueueFull is returned by Submit and PlaceBatch when queueing the
	// task(s) would exceed Config.MaxQueued.
	ErrQueueFull = errors.New("placement: queue full")
	// ErrUnknownJob is returned by Complete, Cancel and Counters for a job the
	// placer has no record of (never seen, or forgotten under Config.MaxJobs).
	ErrUnknownJob = errors.New("placement: unknown job")
	// ErrUnknownTask is returned by Complete and Cancel for a task that is
	// neither queued nor running in a known job (already completed, lost or
	// cancelled, or never submitted).
	ErrUnknownTask = errors.New("placement: unknown task")
	// ErrNotPlaced is returned by Complete for a task that is still queued.
	ErrNotPlaced = errors.New("placement: task not placed yet")
	// ErrInvalidOutcome is returned by Complete for negative byte counts or
	// duration, or Bytes smaller than LocalHit+PeerHit+Miss.
	ErrInvalidOutcome = errors.New("placement: invalid outcome")
	// ErrNotEmpty is returned by Import on a placer that has already placed,
	// queued or counted tasks.
	ErrNotEmpty = errors.New("placement: placer not empty")
	// ErrInvalidState is returned by Import for an exported State that does
	// not add up (negative counts, placed != completed+running+lost, an
	// unknown version).
	ErrInvalidState = errors.New("placement: invalid exported state")
)
