package scheduler

import (
	"errors"
	"fmt"

	"github.com/locuscache/locus/pkg/placement"
	"github.com/locuscache/locus/pkg/schedapi"
)

// Sentinel errors. Every error the Scheduler's methods return wraps one of
// these (or one of placement's) with the detail an operator or a client
// needs; compare with errors.Is. CodeOf maps them onto the API's error
// codes (schedapi.Code*), StatusOf onto HTTP status codes, grpcError onto
// gRPC codes. Those of the API's error answers are
// schedapi's sentinels under the same names (the same values: errors.Is
// agrees across schedapi, scheduler and client).
var (
	// ErrInvalidConfig: a Config field is out of range or two fields
	// contradict each other. Returned by New.
	ErrInvalidConfig = errors.New("scheduler: invalid config")

	// ErrBadRequest: a request that does not decode (malformed JSON, an
	// unknown field, trailing data) or does not validate (empty job, task
	// or URI, negative offset, non-positive length, too many tasks, a task
	// listed twice in one batch, negative byte counts). HTTP 400 with code
	// "bad_request", gRPC INVALID_ARGUMENT.
	ErrBadRequest = schedapi.ErrBadRequest

	// ErrTooLarge: a request body over the size limit (Config.MaxBodyBytes
	// or MaxBatchBodyBytes). HTTP 413, gRPC RESOURCE_EXHAUSTED.
	ErrTooLarge = schedapi.ErrTooLarge

	// ErrUnauthorized: a mutating call without the bearer token configured
	// with --auth-token-file. HTTP 401, gRPC UNAUTHENTICATED.
	ErrUnauthorized = schedapi.ErrUnauthorized

	// ErrNotFound: an unknown job, or a task the scheduler does not hold
	// (never placed, already completed, or lost). Wraps
	// placement.ErrUnknownJob or placement.ErrUnknownTask as well. HTTP
	// 400 with code "not_found" (bad input, as DESIGN's API says; the code
	// tells it from ErrBadRequest), gRPC NOT_FOUND.
	ErrNotFound = schedapi.ErrNotFound

	// ErrConflict: the (job, task) is already queued or running (Place), or
	// is still waiting for its placement (Complete). HTTP 409, gRPC
	// ALREADY_EXISTS (Place) or FAILED_PRECONDITION (Complete).
	ErrConflict = schedapi.ErrConflict

	// ErrNoNode: no node can take the task: no alive cache node with slots
	// (at once), or none freed a slot the task may use within
	// Config.MaxQueueWait, or the queue is full. HTTP 503, gRPC
	// UNAVAILABLE.
	ErrNoNode = schedapi.ErrNoNode

	// ErrNotLeader: with etcd, this scheduler is a follower; the error is a
	// *NotLeaderError naming the leader. HTTP 503 with the leader's address
	// in the body and the X-Locus-Leader header, gRPC FAILED_PRECONDITION
	// with the x-locus-leader trailer.
	ErrNotLeader = schedapi.ErrNotLeader

	// ErrUnavailable: the scheduler cannot serve the call right now: it is
	// starting or stopping, the cluster's block size differs from the
	// configured one, or the counters could not be persisted to etcd (the
	// call's effect is then not guaranteed durable; a failover may lose
	// it). HTTP 503, gRPC UNAVAILABLE.
	ErrUnavailable = schedapi.ErrUnavailable

	// ErrStopped: Shutdown was called.
	ErrStopped = errors.New("scheduler stopped")
)

// NotLeaderError is the error of a mutating call on a follower. Leader is
// the leader's HTTP address ("" when no leader is elected right now),
// LeaderGRPC its gRPC address.
type NotLeaderError struct {
	Leader     string
	LeaderGRPC string
	LeaderID   string
}

func (e *NotLeaderError) Error() string {
	if e.Leader == "" {
		return "not the leader, and no leader is elected right now: retry shortly"
	}
	return fmt.Sprintf("not the leader: the leader is %s at %s", e.LeaderID, e.Leader)
}

// Unwrap makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }

// CodeOf returns the error code of an error returned by the Scheduler's
// methods (schedapi.CodeNotFound, ...): "" for nil, schedapi.CodeInternal
// for an unexpected one. It is the ErrorResponse's code; StatusOf and the
// gRPC code derive from it.
func CodeOf(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrTooLarge):
		return schedapi.CodeTooLarge
	case errors.Is(err, ErrBadRequest), errors.Is(err, placement.ErrInvalidTask), errors.Is(err, placement.ErrInvalidOutcome):
		return schedapi.CodeBadRequest
	case errors.Is(err, ErrUnauthorized):
		return schedapi.CodeUnauthorized
	case errors.Is(err, ErrNotFound), errors.Is(err, placement.ErrUnknownJob), errors.Is(err, placement.ErrUnknownTask):
		return schedapi.CodeNotFound
	case errors.Is(err, ErrConflict), errors.Is(err, placement.ErrDuplicateTask), errors.Is(err, placement.ErrNotPlaced):
		return schedapi.CodeConflict
	case errors.Is(err, ErrNotLeader):
		return schedapi.CodeNotLeader
	case errors.Is(err, ErrNoNode), errors.Is(err, placement.ErrNoCapacity), errors.Is(err, placement.ErrQueueFull):
		return schedapi.CodeNoNode
	case errors.Is(err, ErrUnavailable), errors.Is(err, ErrStopped):
		return schedapi.CodeUnavailable
	}
	return schedapi.CodeInternal
}

// StatusOf returns the HTTP status code for an error returned by the
// Scheduler's methods (500 for an unexpected one): that of its CodeOf
// (schedapi.StatusOfCode). ErrNotFound is 400, bad input like the others
// (the answer's code "not_found" tells it apart).
func StatusOf(err error) int {
	return schedapi.StatusOfCode(CodeOf(err))
}

// badRequest wraps ErrBadRequest with a message.
func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}
