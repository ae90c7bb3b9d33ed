package schedapi

import "errors"

// Sentinel errors of the API, one per kind of error answer. The scheduler
// (pkg/scheduler) returns errors wrapping them and answers with their
// status; its clients (pkg/client) wrap an error answer's status in the
// same sentinel. Both packages re-export them under the same names, so
// errors.Is(err, schedapi.ErrNotFound), scheduler.ErrNotFound and
// client.ErrNotFound all agree. Every error answer's body is an
// ErrorResponse.
var (
	// ErrBadRequest (HTTP 400, gRPC INVALID_ARGUMENT): a request that does
	// not decode (malformed JSON, an unknown field, trailing data) or does
	// not validate (empty job, task or URI, negative offset, non-positive
	// length, too many tasks, a task listed twice in one batch, negative
	// byte counts). Returned by the Validate methods and the request
	// decoders.
	ErrBadRequest = errors.New("bad request")

	// ErrTooLarge (HTTP 413, gRPC RESOURCE_EXHAUSTED): a request body over
	// the scheduler's size limit. Returned by DecodeJSON when its reader
	// is an http.MaxBytesReader past its limit.
	ErrTooLarge = errors.New("request body too large")

	// ErrUnauthorized (HTTP 401, gRPC UNAUTHENTICATED): a mutating call
	// without the scheduler's bearer token.
	ErrUnauthorized = errors.New("missing or wrong bearer token")

	// ErrNotFound (HTTP 404, gRPC NOT_FOUND): an unknown job, or a task the
	// scheduler does not hold (never placed, already completed, or lost).
	ErrNotFound = errors.New("not found")

	// ErrConflict (HTTP 409): the (job, task) is already queued or running
	// (place), or is still waiting for its placement (complete).
	ErrConflict = errors.New("conflict")

	// ErrNoNode (HTTP 503, gRPC UNAVAILABLE): no node can take the task
	// (no alive cache node with slots, none freed a slot in time, or the
	// queue is full). Retry later.
	ErrNoNode = errors.New("no node available")

	// ErrNotLeader (HTTP 503 with the leader's address in
	// ErrorResponse.Leader and the X-Locus-Leader header; gRPC
	// FAILED_PRECONDITION): the scheduler is a follower.
	ErrNotLeader = errors.New("not the leader")

	// ErrUnavailable (HTTP 503, gRPC UNAVAILABLE): the scheduler cannot
	// serve the call right now (starting, stopping, block size mismatch,
	// counters not persisted).
	ErrUnavailable = errors.New("scheduler unavailable")
)
