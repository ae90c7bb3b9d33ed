package scheduler

import (
	"math"
	"time"
	"unicode/utf8"

	"github.com/locuscache/locus/pkg/placement"
)

// The JSON API's messages (DESIGN.md). The gRPC service in
// proto/scheduler/v1 carries the same fields; grpc.go converts.

// Split is what a task reads: bytes [Offset, Offset+Length) of URI.
type Split struct {
	URI    string `json:"uri"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
}

// PlaceRequest is the body of POST /v1/place.
type PlaceRequest struct {
	Job   string `json:"job"`
	Task  string `json:"task"`
	Split Split  `json:"split"`
	// WaitMS is the task's locality wait in milliseconds: 0 = the
	// scheduler's --locality-wait, negative = no wait.
	WaitMS int64 `json:"wait_ms"`
}

// Placement answers a placement: the task holds one slot on Node until it
// completes. In a batch answer a task that was not placed has only Task and
// Error set.
type Placement struct {
	Task        string `json:"task"`
	Node        string `json:"node,omitempty"`
	Address     string `json:"address,omitempty"`      // the node's gRPC address
	HTTPAddress string `json:"http_address,omitempty"` // the node's HTTP address (S3 gateway)
	Rack        string `json:"rack,omitempty"`
	// Locality is "DATA_LOCAL", "RACK_LOCAL" or "OTHER_LOCAL".
	Locality string `json:"locality,omitempty"`
	// Owner is the first node of the split's preference list.
	Owner string `json:"owner,omitempty"`
	// RingEpoch is the epoch of the ring the preference list came from.
	RingEpoch uint64 `json:"ring_epoch,omitempty"`
	// WaitedMS is how long the task waited for its slot, from its first
	// submission (a deferred and resubmitted task counts from the first).
	WaitedMS int64 `json:"waited_ms"`
	// Error is set, in batch answers only, for a task that was not placed:
	// "deferred: ..." (see PlaceBatch).
	Error string `json:"error,omitempty"`
}

// Placed reports whether p is a placement (not a deferred batch member).
func (p *Placement) Placed() bool { return p.Node != "" }

// BatchTask is one task of a batch.
type BatchTask struct {
	Task  string `json:"task"`
	Split Split  `json:"split"`
}

// PlaceBatchRequest is the body of POST /v1/place/batch.
type PlaceBatchRequest struct {
	Job    string      `json:"job"`
	Tasks  []BatchTask `json:"tasks"`
	WaitMS int64       `json:"wait_ms"`
}

// PlaceBatchResponse answers a batch: one Placement per task, in request
// order.
type PlaceBatchResponse struct {
	Placements []Placement `json:"placements"`
}

// CompleteRequest is the body of POST /v1/complete.
type CompleteRequest struct {
	Job           string `json:"job"`
	Task          string `json:"task"`
	Bytes         int64  `json:"bytes"` // 0 = local + peer + miss
	LocalHitBytes int64  `json:"local_hit_bytes"`
	PeerHitBytes  int64  `json:"peer_hit_bytes"`
	MissBytes     int64  `json:"miss_bytes"`
	DurationMS    int64  `json:"duration_ms"`
}

// CompleteResponse answers POST /v1/complete.
type CompleteResponse struct {
	Job      string `json:"job"`
	Task     string `json:"task"`
	Locality string `json:"locality"`
}

// CompleteTask is one task of POST /v1/complete/batch.
type CompleteTask struct {
	Task          string `json:"task"`
	Bytes         int64  `json:"bytes"`
	LocalHitBytes int64  `json:"local_hit_bytes"`
	PeerHitBytes  int64  `json:"peer_hit_bytes"`
	MissBytes     int64  `json:"miss_bytes"`
	DurationMS    int64  `json:"duration_ms"`
}

// CompleteBatchRequest is the body of POST /v1/complete/batch (an addition
// to DESIGN's API: completing a stage in one call).
type CompleteBatchRequest struct {
	Job   string         `json:"job"`
	Tasks []CompleteTask `json:"tasks"`
}

// CompleteResult is one task's result in a CompleteBatchResponse: its
// locality, or why it was not recorded.
type CompleteResult struct {
	Task     string `json:"task"`
	Locality string `json:"locality,omitempty"`
	Error    string `json:"error,omitempty"`
	// Status is the HTTP status the task alone would have got (200, 404,
	// 409, 400).
	Status int `json:"status"`
}

// CompleteBatchResponse answers POST /v1/complete/batch, in request order.
type CompleteBatchResponse struct {
	Results []CompleteResult `json:"results"`
}

// LocalityStats are the tasks and cache outcome of one locality level.
type LocalityStats struct {
	Placed        int64   `json:"placed"`
	Running       int64   `json:"running"`
	Completed     int64   `json:"completed"`
	Lost          int64   `json:"lost"`
	Bytes         int64   `json:"bytes"`
	LocalHitBytes int64   `json:"local_hit_bytes"`
	PeerHitBytes  int64   `json:"peer_hit_bytes"`
	MissBytes     int64   `json:"miss_bytes"`
	TaskTimeMS    int64   `json:"task_time_ms"`
	HitRatio      float64 `json:"hit_ratio"`
	LocalHitRatio float64 `json:"local_hit_ratio"`
}

// ByLocality holds one value per locality level, keyed as DESIGN's JSON
// ("DATA_LOCAL", "RACK_LOCAL", "OTHER_LOCAL").
type ByLocality[T any] struct {
	DataLocal  T `json:"DATA_LOCAL"`
	RackLocal  T `json:"RACK_LOCAL"`
	OtherLocal T `json:"OTHER_LOCAL"`
}

// JobCounters answers GET /v1/jobs/{job} and GET /v1/counters (Job "":
// every job together).
type JobCounters struct {
	Job             string `json:"job"`
	DataLocalTasks  int64  `json:"DATA_LOCAL_TASKS"`
	RackLocalTasks  int64  `json:"RACK_LOCAL_TASKS"`
	OtherLocalTasks int64  `json:"OTHER_LOCAL_TASKS"`
	// HitRatio is (local + peer hit bytes) / bytes over completed tasks.
	HitRatio           float64             `json:"hit_ratio"`
	HitRatioByLocality ByLocality[float64] `json:"hit_ratio_by_locality"`
	// DataLocalRatio is DATA_LOCAL_TASKS over all placed tasks.
	DataLocalRatio float64 `json:"data_local_ratio"`
	// Running, Completed and Lost sum the levels; Queued counts tasks
	// waiting for a slot.
	Running   int64 `json:"running"`
	Completed int64 `json:"completed"`
	Lost      int64 `json:"lost"`
	Queued    int64 `json:"queued"`
	// Bytes read by completed tasks, by source.
	Bytes         int64 `json:"bytes"`
	LocalHitBytes int64 `json:"local_hit_bytes"`
	PeerHitBytes  int64 `json:"peer_hit_bytes"`
	MissBytes     int64 `json:"miss_bytes"`
	// ByLocality details each level.
	ByLocality ByLocality[LocalityStats] `json:"by_locality"`
}

// RingMember is one member in GET /v1/ring.
type RingMember struct {
	Node string `json:"node"`
	Rack string `json:"rack"`
	// State is "alive", "draining" or, for a node the placer still counts
	// tasks on but the gossip no longer lists, "dead".
	State         string `json:"state"`
	Role          string `json:"role"` // "cache" or "observer"
	Address       string `json:"address,omitempty"`
	HTTPAddress   string `json:"http_address,omitempty"`
	Slots         int    `json:"slots"`
	SlotsInUse    int    `json:"slots_in_use"`
	Waiting       int    `json:"waiting"` // queued tasks preferring the node
	CapacityBytes int64  `json:"capacity_bytes"`
	// Share is the fraction of the ring the node owns.
	Share float64 `json:"share"`
}

// RingStatus answers GET /v1/ring.
type RingStatus struct {
	Epoch uint64 `json:"epoch"`
	// EpochHex is Epoch in hexadecimal (JavaScript numbers cannot hold a
	// 64-bit epoch exactly).
	EpochHex    string       `json:"epoch_hex"`
	Generation  uint64       `json:"generation"`
	BlockSize   int64        `json:"block_size"`
	Replication int          `json:"replication"`
	LocalityMS  int64        `json:"locality_wait_ms"`
	Scheduler   string       `json:"scheduler"`
	Leader      bool         `json:"leader"`
	LeaderHTTP  string       `json:"leader_http,omitempty"`
	Standalone  bool         `json:"standalone"`
	Members     []RingMember `json:"members"`
}

// LostTask is one entry of GET /v1/lost: a running task whose node died or
// left (or whose placement could not be delivered).
type LostTask struct {
	Job      string    `json:"job"`
	Task     string    `json:"task"`
	Node     string    `json:"node"`
	Locality string    `json:"locality"`
	Placed   time.Time `json:"placed"`
	Lost     time.Time `json:"lost"`
	Reason   string    `json:"reason"`
}

// LostResponse answers GET /v1/lost.
type LostResponse struct {
	Lost []LostTask `json:"lost"`
}

// ErrorResponse is the body of every error answer.
type ErrorResponse struct {
	Error string `json:"error"`
	// Leader names the leader's HTTP address on a follower's 503.
	Leader string `json:"leader,omitempty"`
}

// Validation. Each returns an error wrapping ErrBadRequest.

func checkName(what, s string) error {
	switch {
	case s == "":
		return badRequest("empty %s", what)
	case len(s) > MaxNameLen:
		return badRequest("%s is %d bytes, the limit is %d", what, len(s), MaxNameLen)
	case !utf8.ValidString(s):
		return badRequest("%s is not valid UTF-8", what)
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
	if err := checkName("job", r.Job); err != nil {
		return err
	}
	if err := checkName("task", r.Task); err != nil {
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
	if err := checkName("job", r.Job); err != nil {
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
		if err := checkName("task", t.Task); err != nil {
			return badRequest("tasks[%d]: %v", i, stripBad(err))
		}
		if err := t.Split.Validate(); err != nil {
			return badRequest("tasks[%d] (%q): %v", i, t.Task, stripBad(err))
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
	if err := checkName("job", r.Job); err != nil {
		return err
	}
	if err := checkName("task", r.Task); err != nil {
		return err
	}
	return checkOutcome(r.Bytes, r.LocalHitBytes, r.PeerHitBytes, r.MissBytes, r.DurationMS)
}

// Validate checks a complete batch (maxTasks bounds it). Tasks are checked
// as a whole: one bad task rejects the batch.
func (r *CompleteBatchRequest) Validate(maxTasks int) error {
	if err := checkName("job", r.Job); err != nil {
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
		if err := checkName("task", t.Task); err != nil {
			return badRequest("tasks[%d]: %v", i, stripBad(err))
		}
		if err := checkOutcome(t.Bytes, t.LocalHitBytes, t.PeerHitBytes, t.MissBytes, t.DurationMS); err != nil {
			return badRequest("tasks[%d] (%q): %v", i, t.Task, stripBad(err))
		}
	}
	return nil
}

func (t *CompleteTask) outcome() placement.Outcome {
	return placement.Outcome{
		Bytes: t.Bytes, LocalHit: t.LocalHitBytes, PeerHit: t.PeerHitBytes, Miss: t.MissBytes,
		Duration: time.Duration(t.DurationMS) * time.Millisecond,
	}
}

// stripBad removes the "bad request: " prefix of a nested validation error.
func stripBad(err error) string {
	s := err.Error()
	const p = "bad request: "
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// countersFrom converts the placer's counters to the API's.
func countersFrom(job string, c placement.Counters) JobCounters {
	lv := func(l placement.LevelCounters) LocalityStats {
		return LocalityStats{
			Placed: l.Placed, Running: l.Running, Completed: l.Completed, Lost: l.Lost,
			Bytes: l.Bytes, LocalHitBytes: l.LocalHitBytes, PeerHitBytes: l.PeerHitBytes, MissBytes: l.MissBytes,
			TaskTimeMS: l.TaskTime.Milliseconds(), HitRatio: l.HitRatio(), LocalHitRatio: l.LocalHitRatio(),
		}
	}
	t := c.Total()
	return JobCounters{
		Job:             job,
		DataLocalTasks:  c.DataLocal.Placed,
		RackLocalTasks:  c.RackLocal.Placed,
		OtherLocalTasks: c.OtherLocal.Placed,
		HitRatio:        t.HitRatio(),
		HitRatioByLocality: ByLocality[float64]{
			DataLocal: c.DataLocal.HitRatio(), RackLocal: c.RackLocal.HitRatio(), OtherLocal: c.OtherLocal.HitRatio(),
		},
		DataLocalRatio: c.DataLocalRatio(),
		Running:        t.Running,
		Completed:      t.Completed,
		Lost:           t.Lost,
		Queued:         c.Queued,
		Bytes:          t.Bytes,
		LocalHitBytes:  t.LocalHitBytes,
		PeerHitBytes:   t.PeerHitBytes,
		MissBytes:      t.MissBytes,
		ByLocality: ByLocality[LocalityStats]{
			DataLocal: lv(c.DataLocal), RackLocal: lv(c.RackLocal), OtherLocal: lv(c.OtherLocal),
		},
	}
}
