package schedapi

import (
	"errors"
	"net/http"
)

// Sentinel errors of the API, one per kind of error answer. The scheduler
// (pkg/scheduler) returns errors wrapping them and answers with their
// status; its clients (pkg/client) wrap an error answer's status in the
// same sentinel. Both packages re-export them under the same names, so
// errors.Is(err, schedapi.ErrNotFound), scheduler.ErrNotFound and
// client.ErrNotFound all agree. Every error answer's body is an
// ErrorResponse, whose Code names the sentinel (see the Code* constants):
// the status alone does not, since ErrBadRequest and ErrNotFound are both
// 400.
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

	// ErrNotFound (HTTP 400 with code "not_found", gRPC NOT_FOUND): an
	// unknown job, or a task the scheduler does not hold (never placed,
	// already completed, or lost). It is bad input over HTTP, as DESIGN's
	// API says; schedulers before the code field answered 404, which
	// clients still read as ErrNotFound.
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

// Error codes: ErrorResponse.Code and CompleteResult.Code, the
// machine-readable kind of an error answer. Each names one sentinel
// (ErrOfCode) and one HTTP status (StatusOfCode). Read the code rather
// than the status: ErrBadRequest and ErrNotFound share 400, and the three
// 503s differ only here.
const (
	CodeBadRequest   = "bad_request"  // ErrBadRequest, 400
	CodeNotFound     = "not_found"    // ErrNotFound, 400
	CodeUnauthorized = "unauthorized" // ErrUnauthorized, 401
	CodeConflict     = "conflict"     // ErrConflict, 409
	CodeTooLarge     = "too_large"    // ErrTooLarge, 413
	CodeNoNode       = "no_node"      // ErrNoNode, 503
	CodeNotLeader    = "not_leader"   // ErrNotLeader, 503
	CodeUnavailable  = "unavailable"  // ErrUnavailable, 503
	CodeInternal     = "internal"     // no sentinel: a bug, 500
	// CodeNoEndpoint is the 404 of a path the API does not have
	// (routing, not bad input: a client newer than its scheduler).
	CodeNoEndpoint = "no_endpoint" // no sentinel, 404
	// CodeMethodNotAllowed is the 405 of a path the API has, asked with a
	// method it does not take there (GET /v1/place); the answer's Allow
	// header lists the methods it takes.
	CodeMethodNotAllowed = "method_not_allowed" // no sentinel, 405
)

// ErrOfCode returns the sentinel error an error code names, nil for ""
// and for the codes without one (CodeInternal, CodeNoEndpoint,
// CodeMethodNotAllowed, a code of a later scheduler).
func ErrOfCode(code string) error {
	switch code {
	case CodeBadRequest:
		return ErrBadRequest
	case CodeNotFound:
		return ErrNotFound
	case CodeUnauthorized:
		return ErrUnauthorized
	case CodeConflict:
		return ErrConflict
	case CodeTooLarge:
		return ErrTooLarge
	case CodeNoNode:
		return ErrNoNode
	case CodeNotLeader:
		return ErrNotLeader
	case CodeUnavailable:
		return ErrUnavailable
	}
	return nil
}

// StatusOfCode returns the HTTP status of an error code: 200 for "", 500
// for CodeInternal and unknown codes.
func StatusOfCode(code string) int {
	switch code {
	case "":
		return http.StatusOK
	case CodeBadRequest, CodeNotFound:
		return http.StatusBadRequest
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeConflict:
		return http.StatusConflict
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeNoNode, CodeNotLeader, CodeUnavailable:
		return http.StatusServiceUnavailable
	case CodeNoEndpoint:
		return http.StatusNotFound
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	}
	return http.StatusInternalServerError
}
