package schedapi

import (
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/locuscache/locus/pkg/objuri"
)

// Limits on names in requests: non-empty valid UTF-8 up to MaxNameLen
// bytes; a job may not be "." or ".." (GET /v1/jobs/{job} could not name
// it).
const (
	MaxNameLen = 256  // job and task ids, bytes
	MaxURILen  = 4096 // split URIs, bytes
)

// Validation: what the scheduler accepts, so a client can check a request
// before sending it. Every Validate returns nil or an error wrapping
// ErrBadRequest whose message names the field.

// CheckName checks a job or task id (what is "job" or "task") as the
// Validate methods do: non-empty valid UTF-8 of at most MaxNameLen bytes,
// and a job neither "." nor "..". The scheduler also checks names given
// outside a body with it (GET /v1/jobs/{job}).
func CheckName(what, s string) error {
	switch {
	case s == "":
		return badRequest("empty %s", what)
	case len(s) > MaxNameLen:
		return badRequest("%s is %d bytes, the limit is %d", what, len(s), MaxNameLen)
	case !utf8.ValidString(s):
		return badRequest("%s is not valid UTF-8", what)
	case what == "job" && (s == "." || s == ".."):
		// HTTP clients and servers resolve a "." or ".." path segment:
		// GET /v1/jobs/.. would never reach the job.
		return badRequest("job %q cannot be named in GET /v1/jobs/{job}: use another name", s)
	}
	return nil
}

// Validate checks a split: non-empty URI, offset >= 0, length > 0, no
// overflow.
func (s *Split) Validate() error {
	switch {
	case s.URI == "":
		return badRequest("empty split uri")
	case len(s.URI) > MaxURILen:
		return badRequest("split uri is %d bytes, the limit is %d", len(s.URI), MaxURILen)
	case s.Offset < 0:
		return badRequest("negative split offset %d", s.Offset)
	case s.Length <= 0:
		return badRequest("split length %d must be > 0", s.Length)
	case s.Offset > math.MaxInt64-s.Length:
		return badRequest("split offset %d + length %d overflows", s.Offset, s.Length)
	}
	if err := objuri.CheckObject(s.URI); err != nil {
		return badRequest("split uri: %v (want s3://bucket/key or file:///abs/path, as the cache nodes read it)", err)
	}
	return nil
}

func checkWait(ms int64, max time.Duration) error {
	if ms > max.Milliseconds() {
		return badRequest("wait_ms %d exceeds the limit %d", ms, max.Milliseconds())
	}
	return nil
}

// Validate checks a place request (maxWait bounds wait_ms).
func (r *PlaceRequest) Validate(maxWait time.Duration) error {
	if err := CheckName("job", r.Job); err != nil {
		return err
	}
	if err := CheckName("task", r.Task); err != nil {
		return err
	}
	if err := r.Split.Validate(); err != nil {
		return err
	}
	return checkWait(r.WaitMS, maxWait)
}

// Validate checks a batch: a job, 1..maxTasks tasks with distinct valid
// ids and splits.
func (r *PlaceBatchRequest) Validate(maxWait time.Duration, maxTasks int) error {
	if err := CheckName("job", r.Job); err != nil {
		return err
	}
	if len(r.Tasks) == 0 {
		return badRequest("empty batch: no tasks")
	}
	if len(r.Tasks) > maxTasks {
		return badRequest("batch of %d tasks exceeds the limit %d", len(r.Tasks), maxTasks)
	}
	seen := make(map[string]struct{}, len(r.Tasks))
	for i := range r.Tasks {
		t := &r.Tasks[i]
		if err := CheckName("task", t.Task); err != nil {
			return badRequest("tasks[%d]: %v", i, StripBadRequest(err))
		}
		if err := t.Split.Validate(); err != nil {
			return badRequest("tasks[%d] (%q): %v", i, t.Task, StripBadRequest(err))
		}
		if _, dup := seen[t.Task]; dup {
			return badRequest("tasks[%d]: task %q is listed twice", i, t.Task)
		}
		seen[t.Task] = struct{}{}
	}
	return checkWait(r.WaitMS, maxWait)
}

func checkOutcome(bytes, local, peer, miss, durMS int64) error {
	switch {
	case bytes < 0 || local < 0 || peer < 0 || miss < 0:
		return badRequest("negative byte count (bytes %d, local %d, peer %d, miss %d)", bytes, local, peer, miss)
	case durMS < 0:
		return badRequest("negative duration_ms %d", durMS)
	case durMS > math.MaxInt64/int64(time.Millisecond):
		return badRequest("duration_ms %d overflows", durMS)
	case local > math.MaxInt64-peer || local+peer > math.MaxInt64-miss:
		return badRequest("byte counts overflow")
	case bytes != 0 && bytes < local+peer+miss:
		return badRequest("bytes %d < local_hit_bytes %d + peer_hit_bytes %d + miss_bytes %d", bytes, local, peer, miss)
	}
	return nil
}

// Validate checks a complete request.
func (r *CompleteRequest) Validate() error {
	if err := CheckName("job", r.Job); err != nil {
		return err
	}
	if err := CheckName("task", r.Task); err != nil {
		return err
	}
	return checkOutcome(r.Bytes, r.LocalHitBytes, r.PeerHitBytes, r.MissBytes, r.DurationMS)
}

// Validate checks a complete batch (maxTasks bounds it). Tasks are checked
// as a whole: one bad task rejects the batch.
func (r *CompleteBatchRequest) Validate(maxTasks int) error {
	if err := CheckName("job", r.Job); err != nil {
		return err
	}
	if len(r.Tasks) == 0 {
		return badRequest("empty batch: no tasks")
	}
	if len(r.Tasks) > maxTasks {
		return badRequest("batch of %d tasks exceeds the limit %d", len(r.Tasks), maxTasks)
	}
	for i := range r.Tasks {
		t := &r.Tasks[i]
		if err := CheckName("task", t.Task); err != nil {
			return badRequest("tasks[%d]: %v", i, StripBadRequest(err))
		}
		if err := checkOutcome(t.Bytes, t.LocalHitBytes, t.PeerHitBytes, t.MissBytes, t.DurationMS); err != nil {
			return badRequest("tasks[%d] (%q): %v", i, t.Task, StripBadRequest(err))
		}
	}
	return nil
}

// StripBadRequest returns err's message without the "bad request: " prefix
// its ErrBadRequest wrapping adds, to nest it in another bad request's
// message (tasks[3]: ...).
func StripBadRequest(err error) string {
	s := err.Error()
	const p = "bad request: "
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// badRequest wraps ErrBadRequest with a message.
func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}
