package schedapi

import "time"

// The JSON API's messages (DESIGN.md). The gRPC service in
// proto/scheduler/v1 carries the same fields; pkg/scheduler converts.

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
// completes. In a batch answer a task that was not placed has only Task,
// WaitedMS and Error set.
//
// "rack" is always encoded, "" when the node has none: DESIGN's answer
// lists the field (an answer without it, from an older scheduler, decodes
// as ""). Like "waited_ms", an unplaced batch member carries it too.
type Placement struct {
	Task        string `json:"task"`
	Node        string `json:"node,omitempty"`
	Address     string `json:"address,omitempty"`      // the node's gRPC address
	HTTPAddress string `json:"http_address,omitempty"` // the node's HTTP address (S3 gateway)
	Rack        string `json:"rack"`                   // the node's rack, "" when it has none
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
	Bytes         int64  `json:"bytes"` // 0 = local + peer + miss; bytes beyond that sum count as miss bytes
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
	// Code is the error code of Error (CodeNotFound: unknown job, or the
	// task is not running; CodeConflict: still waiting for its placement;
	// CodeBadRequest: its byte counts), "" when the task was recorded.
	Code string `json:"code,omitempty"`
	// Status is the HTTP status the task alone would have got: 200, 400
	// (bad byte counts, or code "not_found"), 409.
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
	HitRatio float64 `json:"hit_ratio"`
	// HitRatioByLocality is HitRatio per level; a level with no completed
	// bytes reads 0 (ByLocality's bytes tell it from a level that missed
	// everything).
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
	// EpochHex is Epoch in hexadecimal, 16 digits zero-padded, as
	// locusctl and the daemons' logs print it.
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

// ErrorResponse is the body of every error answer:
//
//	{"error": "not found: job \"j\": ...", "code": "not_found"}
type ErrorResponse struct {
	// Error says what went wrong, for people.
	Error string `json:"error"`
	// Code is the kind of error, for programs: one of the Code* constants
	// (a later scheduler may add codes; an older one sends none).
	Code string `json:"code,omitempty"`
	// Leader names the leader's HTTP address on a follower's 503.
	Leader string `json:"leader,omitempty"`
}

// JobsResponse answers GET /v1/jobs: the jobs the scheduler knows.
type JobsResponse struct {
	Jobs []string `json:"jobs"`
}
