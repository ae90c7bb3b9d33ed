package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/locuscache/locus/pkg/readpath"
	"github.com/locuscache/locus/pkg/schedapi"
)

// The scheduler's messages, as its JSON API defines them (DESIGN.md).
type (
	// Placement answers a placement: the task holds one slot on Node
	// (Address is its gRPC address, for ReadSplit) until it is completed.
	// In a PlaceBatch answer a deferred task has only Task and Error set
	// (Placed reports false).
	Placement = schedapi.Placement
	// CompleteResult is one task's result in CompleteBatch: its locality,
	// or Error, its Code (schedapi.CodeNotFound: unknown job, or the task
	// is not running; CodeConflict: still waiting for its placement) and
	// the HTTP Status the task alone would have got.
	CompleteResult = schedapi.CompleteResult
	// JobCounters are a job's locality counters and hit ratios.
	JobCounters = schedapi.JobCounters
	// RingStatus is the scheduler's view of the ring: members with rack,
	// state, slots in use and share; block size; replication; epoch.
	RingStatus = schedapi.RingStatus
)

// Sentinel errors of the scheduler calls. They are the scheduler's API
// sentinels (pkg/schedapi), which pkg/scheduler exports under the same
// names, so errors.Is works with any of the three. Every error answer
// comes back as a *SchedulerError wrapping the sentinel of its code
// (ErrorResponse.Code), or of its status when it has none.
var (
	// ErrBadRequest (400, code "bad_request"): the request does not
	// validate (empty job or task, empty URI, negative offset,
	// non-positive length, a task listed twice in a batch, negative byte
	// counts). The message names the problem.
	ErrBadRequest = schedapi.ErrBadRequest
	// ErrUnauthorized (401): a mutating call without the right bearer
	// token (SchedulerConfig.Token).
	ErrUnauthorized = schedapi.ErrUnauthorized
	// ErrNotFound (400 with code "not_found"; 404 from a scheduler older
	// than the code field): an unknown job, or a task the scheduler does
	// not hold (never placed, completed already, lost). Such an answer is
	// not ErrBadRequest, though its status is 400.
	ErrNotFound = schedapi.ErrNotFound
	// ErrConflict (409): the task is already queued or running (Place), or
	// still waiting for its placement (Complete).
	ErrConflict = schedapi.ErrConflict
	// ErrTooLarge (413): the request body is over the scheduler's limit.
	ErrTooLarge = schedapi.ErrTooLarge
	// ErrNoNode (503): no node can take the task: no alive cache node
	// with slots, or none freed a slot in time, or the queue is full.
	// Retry later.
	ErrNoNode = schedapi.ErrNoNode
	// ErrNotLeader (503): the scheduler is a follower; SchedulerError.Leader
	// names the leader's HTTP address when one is elected. With
	// SchedulerConfig.FollowLeader the client resends the call there
	// itself.
	ErrNotLeader = schedapi.ErrNotLeader
	// ErrSchedulerUnavailable: the scheduler cannot be reached (connection
	// refused, timeout), or answered 503 for another reason (starting,
	// stopping, block size mismatch, etcd down), or a proxy answered
	// 502/504. Every 503 wraps it, ErrNoNode and ErrNotLeader included.
	ErrSchedulerUnavailable = schedapi.ErrUnavailable
)

// SchedulerError is an error answer of the scheduler (any status other
// than 200). It wraps the sentinel of its code, or of its status when it
// has no code the client knows (an older scheduler, a proxy); see the Err*
// variables. Compare with errors.Is, or errors.As to read the details.
type SchedulerError struct {
	// Method and Path name the call ("POST", "/v1/place").
	Method, Path string
	// Status is the HTTP status code.
	Status int
	// Message is the scheduler's {"error": ...} text (or the start of the
	// body when it was not JSON).
	Message string
	// Code is the answer's machine-readable {"code": ...}: one of
	// schedapi's Code* constants ("not_found", "bad_request", ...), ""
	// from a scheduler older than the field or a non-JSON answer.
	Code string
	// Leader is the leader's HTTP address (host:port) on a follower's 503,
	// "" otherwise or when no leader is elected.
	Leader string
}

func (e *SchedulerError) Error() string {
	return fmt.Sprintf("scheduler: %s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), e.Message)
}

// Unwrap returns the sentinels the code maps to (schedapi.ErrOfCode), else
// those the status maps to. A 404 without a code is ErrNotFound (what
// schedulers before the code field answered for an unknown job); the 404
// of an endpoint the scheduler does not have (code "no_endpoint") maps to
// none.
func (e *SchedulerError) Unwrap() []error {
	switch sentinel := schedapi.ErrOfCode(e.Code); {
	case sentinel == ErrNoNode, sentinel == ErrNotLeader:
		return []error{sentinel, ErrSchedulerUnavailable}
	case sentinel != nil:
		return []error{sentinel}
	case e.Code == schedapi.CodeNoEndpoint:
		return nil
	}
	switch e.Status {
	case http.StatusBadRequest:
		return []error{ErrBadRequest}
	case http.StatusUnauthorized:
		return []error{ErrUnauthorized}
	case http.StatusNotFound:
		return []error{ErrNotFound}
	case http.StatusConflict:
		return []error{ErrConflict}
	case http.StatusRequestEntityTooLarge:
		return []error{ErrTooLarge}
	case http.StatusServiceUnavailable:
		switch {
		case e.Leader != "" || strings.HasPrefix(e.Message, ErrNotLeader.Error()):
			return []error{ErrNotLeader, ErrSchedulerUnavailable}
		case strings.HasPrefix(e.Message, ErrNoNode.Error()):
			return []error{ErrNoNode, ErrSchedulerUnavailable}
		}
		return []error{ErrSchedulerUnavailable}
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return []error{ErrSchedulerUnavailable}
	}
	return nil
}

// Defaults of SchedulerConfig.
const (
	// DefaultSchedulerTimeout bounds one call, on top of the locality waits
	// a Place or PlaceBatch asks for: above twice the scheduler's default
	// --locality-wait (3 s) plus its default --max-queue-wait (30 s), so
	// the scheduler's own 503 arrives first.
	DefaultSchedulerTimeout = time.Minute
	// DefaultMaxResponseBytes bounds an answer's body: a 100,000-task
	// batch answer is about 16 MiB.
	DefaultMaxResponseBytes = 64 << 20
	// MaxLeaderHops bounds how many times one call follows a leader
	// redirect (FollowLeader).
	MaxLeaderHops = 3
)

// Locality waits for Place and PlaceBatch.
const (
	// DefaultWait asks for the scheduler's --locality-wait (wait_ms 0).
	DefaultWait time.Duration = 0
	// NoWait asks the scheduler not to wait for a better locality level
	// (wait_ms -1): the task goes to any free slot at once.
	NoWait time.Duration = -1
)

// ErrInvalidSchedulerConfig is returned by NewScheduler for a config that
// cannot work.
var ErrInvalidSchedulerConfig = errors.New("client: invalid scheduler config")

// SchedulerConfig configures a Scheduler client.
type SchedulerConfig struct {
	// URL is the scheduler's HTTP API: "http://host:port" (or https).
	// A bare "host:port" means http://host:port. Required.
	URL string
	// Token, if set, is sent as "Authorization: Bearer <token>" (the
	// scheduler's --auth-token-file; required there for every POST).
	Token string
	// HTTPClient makes the requests. Default: a client of its own with
	// keep-alive connections (64 idle per host) and TLS, when set.
	HTTPClient *http.Client
	// TLS configures the default HTTPClient's transport for an https URL
	// (the CA, and a client certificate for mTLS). Ignored when
	// HTTPClient is set.
	TLS *tls.Config
	// Timeout bounds each call, plus twice the locality wait of Place and
	// PlaceBatch (a task may wait once for its data-local level and once
	// more for its rack). With DefaultWait the client does not know the
	// scheduler's --locality-wait: Timeout must then cover twice it plus
	// the scheduler's --max-queue-wait (the defaults, 3 s and 30 s, need
	// 36 s). A call that runs out of this bound fails wrapping
	// ErrSchedulerUnavailable and context.DeadlineExceeded. Default
	// DefaultSchedulerTimeout; negative: no bound beyond the caller's
	// context.
	Timeout time.Duration
	// FollowLeader makes the client resend a call that a follower
	// answered with 503 naming the leader (HA schedulers with etcd) to
	// the leader, at most MaxLeaderHops times per call, and use the
	// leader for later calls. When the leader it follows cannot be
	// reached any more (a failover), it goes back to URL: a call that
	// could not connect is resent there, later calls go there. Off: such
	// calls fail wrapping ErrNotLeader.
	FollowLeader bool
	// MaxResponseBytes bounds an answer's body (default
	// DefaultMaxResponseBytes).
	MaxResponseBytes int64
	// Logger receives leader changes (Info). Default: discard.
	Logger *slog.Logger
}

func (c *SchedulerConfig) validate() (*url.URL, error) {
	raw := strings.TrimSpace(c.URL)
	if raw == "" {
		return nil, fmt.Errorf("%w: URL is empty; want http://host:port of the scheduler's --http-addr", ErrInvalidSchedulerConfig)
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: URL %q: want http://host:port (or https) of the scheduler's --http-addr", ErrInvalidSchedulerConfig, c.URL)
	}
	u.Path, u.RawPath = strings.TrimRight(u.Path, "/"), "" // calls append "/v1/..."
	if c.Token != strings.TrimSpace(c.Token) || strings.ContainsAny(c.Token, "\r\n") {
		return nil, fmt.Errorf("%w: the token has white space around it or a line break", ErrInvalidSchedulerConfig)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultSchedulerTimeout
	}
	if c.MaxResponseBytes < 0 {
		return nil, fmt.Errorf("%w: negative MaxResponseBytes", ErrInvalidSchedulerConfig)
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		tr.TLSClientConfig = c.TLS
		c.HTTPClient = &http.Client{Transport: tr}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return u, nil
}

// Scheduler is a client of the scheduler's HTTP JSON API: it asks where
// tasks should run and reports them complete. Safe for concurrent use.
type Scheduler struct {
	cfg  SchedulerConfig
	home *url.URL                // SchedulerConfig.URL
	base atomic.Pointer[url.URL] // the scheduler calls go to; FollowLeader moves it
}

// NewScheduler returns a client of the scheduler at cfg.URL, or an error
// wrapping ErrInvalidSchedulerConfig. It does not connect until the first
// call.
func NewScheduler(cfg SchedulerConfig) (*Scheduler, error) {
	u, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	s := &Scheduler{cfg: cfg, home: u}
	s.base.Store(u)
	return s, nil
}

// URL returns the scheduler the calls go to: SchedulerConfig.URL, or the
// leader it was redirected to (FollowLeader).
func (s *Scheduler) URL() string { return s.base.Load().String() }

// Close closes the idle connections of the client's transport.
func (s *Scheduler) Close() error {
	s.cfg.HTTPClient.CloseIdleConnections()
	return nil
}

// BatchTask is one task of PlaceBatch.
type BatchTask struct {
	Task  string
	Split Split
}

// CompleteInfo is how a task went: the bytes it read and how they were
// served, and how long it ran. Bytes 0 means LocalHit+PeerHit+Miss.
type CompleteInfo struct {
	Bytes    int64
	LocalHit int64 // served from the cache of the node the task ran on
	PeerHit  int64 // served from another node's cache
	Miss     int64 // read from the origin
	Duration time.Duration
}

// InfoFromSummary returns the CompleteInfo of a task that read what sum
// describes (a ReadSplit's summary, or a ReaderAt's Summary) in d.
func InfoFromSummary(sum readpath.Summary, d time.Duration) CompleteInfo {
	return CompleteInfo{Bytes: sum.Bytes, LocalHit: sum.LocalHitBytes, PeerHit: sum.PeerHitBytes, Miss: sum.OriginBytes, Duration: d}
}

// CompletedTask is one task of CompleteBatch.
type CompletedTask struct {
	Task string
	CompleteInfo
}

// waitMS converts a locality wait to the API's wait_ms: DefaultWait (0)
// is 0, negative is -1, a positive wait is rounded up to whole
// milliseconds.
func waitMS(wait time.Duration) int64 {
	switch {
	case wait < 0:
		return -1
	case wait == 0:
		return 0
	}
	ms := int64(wait / time.Millisecond)
	if wait%time.Millisecond != 0 {
		ms++ // rounded up; no overflow: wait/ms is far below MaxInt64
	}
	return ms
}

// twice is 2 x d, saturating (a wait of "forever" must not wrap to a
// negative timeout extension).
func twice(d time.Duration) time.Duration {
	if d > math.MaxInt64/2 {
		return math.MaxInt64
	}
	return 2 * d
}

func durationMS(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return d.Milliseconds()
}

func schedSplit(sp Split) schedapi.Split {
	return schedapi.Split{URI: sp.URI, Offset: sp.Offset, Length: sp.Length}
}

// Place asks where a task of job reading split should run (POST
// /v1/place). wait is the task's locality wait: how long it may wait for
// a data-local slot before stepping down to rack-local (and as long again
// before any node); DefaultWait takes the scheduler's --locality-wait,
// NoWait none. The task holds a slot on the answer's node until Complete.
//
// Errors wrap ErrBadRequest, ErrConflict (the task is already queued or
// running), ErrNoNode (no node could take it within the scheduler's queue
// wait), ErrNotLeader, ErrUnauthorized, ErrSchedulerUnavailable, or the
// context's error.
func (s *Scheduler) Place(ctx context.Context, job, task string, split Split, wait time.Duration) (Placement, error) {
	body, err := json.Marshal(schedapi.PlaceRequest{Job: job, Task: task, Split: schedSplit(split), WaitMS: waitMS(wait)})
	if err != nil {
		return Placement{}, err
	}
	var p Placement
	raw, err := s.do(ctx, http.MethodPost, "/v1/place", body, twice(wait))
	if err != nil {
		return Placement{}, err
	}
	if err := decode(raw, &p, "/v1/place"); err != nil {
		return Placement{}, err
	}
	return p, nil
}

// PlaceBatch places a stage of tasks of job at once (POST
// /v1/place/batch): the scheduler matches tasks to their preferred nodes'
// free slots first, then rack, then any, as their waits allow. The answer
// has one Placement per task, in order. It returns when every task is
// placed or as soon as no node has a free slot left: the tasks not placed
// then come back deferred (Placed false, Error "deferred: ..."); run and
// complete some of the placed ones, then resubmit the deferred ones (they
// keep their place in the locality waits).
//
// Errors (for the whole batch) are Place's.
func (s *Scheduler) PlaceBatch(ctx context.Context, job string, tasks []BatchTask, wait time.Duration) ([]Placement, error) {
	req := schedapi.PlaceBatchRequest{Job: job, WaitMS: waitMS(wait), Tasks: make([]schedapi.BatchTask, len(tasks))}
	for i, t := range tasks {
		req.Tasks[i] = schedapi.BatchTask{Task: t.Task, Split: schedSplit(t.Split)}
	}
	body := schedapi.AppendPlaceBatchRequest(make([]byte, 0, 64+len(tasks)*128), &req)
	raw, err := s.do(ctx, http.MethodPost, "/v1/place/batch", body, twice(wait))
	if err != nil {
		return nil, err
	}
	resp, err := schedapi.DecodePlaceBatchResponse(raw)
	if err != nil {
		return nil, fmt.Errorf("scheduler: decoding the answer to /v1/place/batch: %w", err)
	}
	if len(resp.Placements) != len(tasks) {
		return nil, fmt.Errorf("scheduler: /v1/place/batch answered %d placements for %d tasks", len(resp.Placements), len(tasks))
	}
	return resp.Placements, nil
}

// Complete reports a task of job done (POST /v1/complete): it frees the
// task's slot and records the bytes it read by source against the
// locality it was placed with. It returns that locality ("DATA_LOCAL",
// "RACK_LOCAL" or "OTHER_LOCAL").
//
// Errors wrap ErrNotFound (unknown job, task not running: never placed,
// completed already, or lost), ErrConflict (still waiting for its
// placement), ErrBadRequest (negative counts, Bytes below their sum),
// ErrNotLeader, ErrUnauthorized, ErrSchedulerUnavailable.
func (s *Scheduler) Complete(ctx context.Context, job, task string, info CompleteInfo) (string, error) {
	body, err := json.Marshal(schedapi.CompleteRequest{
		Job: job, Task: task, Bytes: info.Bytes, LocalHitBytes: info.LocalHit, PeerHitBytes: info.PeerHit,
		MissBytes: info.Miss, DurationMS: durationMS(info.Duration),
	})
	if err != nil {
		return "", err
	}
	raw, err := s.do(ctx, http.MethodPost, "/v1/complete", body, 0)
	if err != nil {
		return "", err
	}
	var resp schedapi.CompleteResponse
	if err := decode(raw, &resp, "/v1/complete"); err != nil {
		return "", err
	}
	return resp.Locality, nil
}

// CompleteBatch reports many tasks of job done in one call (POST
// /v1/complete/batch). Each task gets its own result, in order: a task
// that could not be completed has Error, Code and the Status it alone
// would have got (Code "not_found" with 400, "conflict" with 409) and does
// not fail the others. From an older scheduler, which sent no code, Code
// is filled in from the status (404 "not_found", 409 "conflict", 400
// "bad_request"), so callers need only read Code. The call fails as a
// whole for bad input (ErrBadRequest) and Complete's other errors.
func (s *Scheduler) CompleteBatch(ctx context.Context, job string, tasks []CompletedTask) ([]CompleteResult, error) {
	req := schedapi.CompleteBatchRequest{Job: job, Tasks: make([]schedapi.CompleteTask, len(tasks))}
	for i, t := range tasks {
		req.Tasks[i] = schedapi.CompleteTask{
			Task: t.Task, Bytes: t.Bytes, LocalHitBytes: t.LocalHit, PeerHitBytes: t.PeerHit,
			MissBytes: t.Miss, DurationMS: durationMS(t.Duration),
		}
	}
	body := schedapi.AppendCompleteBatchRequest(make([]byte, 0, 64+len(tasks)*128), &req)
	raw, err := s.do(ctx, http.MethodPost, "/v1/complete/batch", body, 0)
	if err != nil {
		return nil, err
	}
	resp, err := schedapi.DecodeCompleteBatchResponse(raw)
	if err != nil {
		return nil, fmt.Errorf("scheduler: decoding the answer to /v1/complete/batch: %w", err)
	}
	if len(resp.Results) != len(tasks) {
		return nil, fmt.Errorf("scheduler: /v1/complete/batch answered %d results for %d tasks", len(resp.Results), len(tasks))
	}
	for i := range resp.Results {
		if r := &resp.Results[i]; r.Code == "" && r.Status != http.StatusOK {
			r.Code = legacyCode(r.Status)
		}
	}
	return resp.Results, nil
}

// legacyCode is the code of a batch result's status from a scheduler
// older than the code field ("" for a status it never sent).
func legacyCode(status int) string {
	switch status {
	case http.StatusNotFound:
		return schedapi.CodeNotFound
	case http.StatusConflict:
		return schedapi.CodeConflict
	case http.StatusBadRequest:
		return schedapi.CodeBadRequest
	}
	return ""
}

// JobCounters returns a job's counters (GET /v1/jobs/{job}): tasks per
// locality level, hit ratio overall and per level, bytes by source. Job
// "" returns every job's together (GET /v1/counters). Errors wrap
// ErrNotFound for an unknown job, or ErrSchedulerUnavailable.
func (s *Scheduler) JobCounters(ctx context.Context, job string) (JobCounters, error) {
	path := "/v1/counters"
	if job != "" {
		path = "/v1/jobs/" + url.PathEscape(job)
	}
	var c JobCounters
	raw, err := s.do(ctx, http.MethodGet, path, nil, 0)
	if err == nil {
		err = decode(raw, &c, path)
	}
	return c, err
}

// Jobs lists the jobs the scheduler knows (GET /v1/jobs).
func (s *Scheduler) Jobs(ctx context.Context) ([]string, error) {
	var r struct {
		Jobs []string `json:"jobs"`
	}
	raw, err := s.do(ctx, http.MethodGet, "/v1/jobs", nil, 0)
	if err == nil {
		err = decode(raw, &r, "/v1/jobs")
	}
	return r.Jobs, err
}

// Ring returns the members the scheduler sees (GET /v1/ring), with the
// cluster's block size, replication and ring epoch.
func (s *Scheduler) Ring(ctx context.Context) (RingStatus, error) {
	var r RingStatus
	raw, err := s.do(ctx, http.MethodGet, "/v1/ring", nil, 0)
	if err == nil {
		err = decode(raw, &r, "/v1/ring")
	}
	return r, err
}

func decode(raw []byte, v any, path string) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("scheduler: decoding the answer to %s: %w (%.120q)", path, err, raw)
	}
	return nil
}

// do sends one call and returns the body of its 200 answer, following
// leader redirects when configured. extra extends the call's timeout (a
// locality wait).
func (s *Scheduler) do(ctx context.Context, method, path string, body []byte, extra time.Duration) ([]byte, error) {
	if s.cfg.Timeout > 0 {
		bound := s.cfg.Timeout + min(max(extra, 0), math.MaxInt64-s.cfg.Timeout)
		caller := ctx
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
		raw, err := s.follow(ctx, method, path, body)
		if err != nil && errors.Is(err, context.DeadlineExceeded) && caller.Err() == nil {
			// The client's own bound ran out, not the caller's: the
			// scheduler did not answer in time.
			return raw, fmt.Errorf("%w: no answer within %v (SchedulerConfig.Timeout %v plus the locality waits asked for; with DefaultWait, Timeout must cover twice the scheduler's --locality-wait plus its --max-queue-wait): %w",
				ErrSchedulerUnavailable, bound, s.cfg.Timeout, err)
		}
		return raw, err
	}
	return s.follow(ctx, method, path, body)
}

// follow sends one call to the scheduler the client uses, following
// leader redirects and failovers (FollowLeader).
func (s *Scheduler) follow(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	base := s.base.Load()
	for hop := 0; ; hop++ {
		raw, err := s.once(ctx, base, method, path, body)
		var se *SchedulerError
		if s.cfg.FollowLeader && base != s.home && err != nil && !errors.As(err, &se) && ctx.Err() == nil {
			// The leader followed earlier does not answer (it stopped or
			// died: a failover): back to the configured URL, which is or
			// names the new leader. Only a call that never reached the
			// old leader is resent; another may have been applied there.
			s.cfg.Logger.Info("scheduler: the followed leader does not answer; back to the configured URL", "from", base.Host, "to", s.home.Host, "err", err)
			s.base.CompareAndSwap(base, s.home)
			if hop >= MaxLeaderHops || !dialFailed(err) {
				return raw, err
			}
			base = s.home
			continue
		}
		if !s.cfg.FollowLeader || hop >= MaxLeaderHops || !errors.As(err, &se) || se.Leader == "" || !errors.Is(err, ErrNotLeader) {
			return raw, err
		}
		next := *base
		next.Host = se.Leader
		if next.Host == base.Host {
			return raw, err
		}
		s.cfg.Logger.Info("scheduler: following the leader", "from", base.Host, "to", next.Host)
		s.base.CompareAndSwap(base, &next)
		base = &next
	}
}

// dialFailed reports whether err is a failure to connect: the request was
// not sent, so resending it elsewhere cannot apply it twice.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func (s *Scheduler) once(ctx context.Context, base *url.URL, method, path string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	// base has no trailing "/" (validate); path is already escaped.
	req, err := http.NewRequestWithContext(ctx, method, base.String()+path, rd)
	if err != nil {
		return nil, fmt.Errorf("scheduler: %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if s.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.cfg.Token)
	}
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("scheduler: %s %s: %w", method, path, ctx.Err())
		}
		return nil, fmt.Errorf("%w: %s %s at %s: %w", ErrSchedulerUnavailable, method, path, base.Host, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, s.cfg.MaxResponseBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("scheduler: %s %s: %w", method, path, ctx.Err())
		}
		return nil, fmt.Errorf("%w: %s %s at %s: reading the answer: %w", ErrSchedulerUnavailable, method, path, base.Host, err)
	}
	if int64(len(raw)) > s.cfg.MaxResponseBytes {
		return nil, fmt.Errorf("scheduler: %s %s: the answer is over %d bytes (SchedulerConfig.MaxResponseBytes)", method, path, s.cfg.MaxResponseBytes)
	}
	if resp.StatusCode == http.StatusOK {
		return raw, nil
	}
	se := &SchedulerError{Method: method, Path: path, Status: resp.StatusCode, Leader: resp.Header.Get("X-Locus-Leader")}
	var er schedapi.ErrorResponse
	if json.Unmarshal(raw, &er) == nil && er.Error != "" {
		se.Message, se.Code = er.Error, er.Code
		if se.Leader == "" {
			se.Leader = er.Leader
		}
	} else {
		se.Message = strings.TrimSpace(string(raw[:min(len(raw), 200)]))
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("<?xml")) {
			// An S3-style XML error: the address is a cache node's S3
			// gateway (its --http-addr), not the scheduler's.
			se.Message = "the answer is an S3 XML error, not the scheduler's JSON: is this a cache node's --http-addr rather than the scheduler's? (" + se.Message + ")"
		}
	}
	return nil, se
}
