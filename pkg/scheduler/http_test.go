package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// threeNodes is a fixed cluster: n1, n2 in rack r1, n3 in r2, 2 slots each.
func threeNodes(t *testing.T) *schedulertest.Views {
	return schedulertest.NewViews(t,
		schedulertest.Node("n1", "r1", 2), schedulertest.Node("n2", "r1", 2), schedulertest.Node("n3", "r2", 2))
}

func startWith(t *testing.T, views scheduler.Membership, mod func(*scheduler.Config)) (*scheduler.Scheduler, *schedulertest.Client) {
	t.Helper()
	cfg := scheduler.Config{Membership: views}
	if mod != nil {
		mod(&cfg)
	}
	s := schedulertest.Start(t, cfg)
	return s, schedulertest.NewClient(s.HTTPAddr())
}

func split(uri string) schedapi.Split { return schedapi.Split{URI: uri, Offset: 0, Length: 1 << 20} }

// placeAllNow places tasks t0..t(n-1) of job over objects o0..o(n-1) in
// one batch without a locality wait, and fails the test unless every one
// was placed.
func placeAllNow(t *testing.T, c *schedulertest.Client, job string, n int) []schedapi.Placement {
	t.Helper()
	var tasks []schedapi.BatchTask
	for i := 0; i < n; i++ {
		tasks = append(tasks, schedapi.BatchTask{Task: fmt.Sprint("t", i), Split: split(fmt.Sprint("s3://bkt/o", i))})
	}
	resp, err := c.PlaceBatch(context.Background(), schedapi.PlaceBatchRequest{Job: job, WaitMS: -1, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range resp.Placements {
		if !p.Placed() {
			t.Fatalf("%s deferred: %s", p.Task, p.Error)
		}
	}
	return resp.Placements
}

// codeOf returns the "code" of an error answer ("" for anything else).
func codeOf(err error) string {
	var se *schedulertest.StatusError
	if errors.As(err, &se) {
		return se.Body.Code
	}
	return ""
}

func statusOf(err error) int {
	var se *schedulertest.StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	if err == nil {
		return 200
	}
	return -1
}

// TestBadInput checks the answers to bad requests: status code and a JSON
// {"error": ...} naming the problem.
func TestBadInput(t *testing.T) {
	_, c := startWith(t, threeNodes(t), func(cfg *scheduler.Config) {
		cfg.MaxBodyBytes = 4 << 10
		cfg.MaxBatchBodyBytes = 64 << 10
		cfg.MaxBatchTasks = 100
	})
	ctx := context.Background()
	// A running task for the duplicate and complete cases.
	if _, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "running", Split: split("s3://bkt/k")}); err != nil {
		t.Fatal(err)
	}
	big := `{"job":"j","task":"t","split":{"uri":"` + strings.Repeat("x", 5000) + `","offset":0,"length":1}}`
	manyTasks := `{"job":"j","tasks":[` + strings.TrimSuffix(strings.Repeat(`{"task":"t","split":{"uri":"s3://bkt/u","offset":0,"length":1}},`, 101), ",") + `]}`
	cases := []struct {
		name, method, path, body string
		code                     int    // HTTP status
		want                     string // in the error message
		kind                     string // the answer's "code"
	}{
		{"malformed JSON", "POST", "/v1/place", `{"job":`, 400, "truncated", schedapi.CodeBadRequest},
		{"not JSON", "POST", "/v1/place", `hello`, 400, "malformed JSON", schedapi.CodeBadRequest},
		{"empty body", "POST", "/v1/place", ``, 400, "empty body", schedapi.CodeBadRequest},
		{"unknown field", "POST", "/v1/place", `{"job":"j","task":"t","split":{"uri":"s3://bkt/u","offset":0,"length":1},"priority":3}`, 400, `unknown field "priority"`, schedapi.CodeBadRequest},
		{"unknown nested field", "POST", "/v1/place", `{"job":"j","task":"t","split":{"uri":"s3://bkt/u","offset":0,"length":1,"version":"x"}}`, 400, `unknown field "version"`, schedapi.CodeBadRequest},
		{"wrong type", "POST", "/v1/place", `{"job":"j","task":"t","split":{"uri":"s3://bkt/u","offset":"0","length":1}}`, 400, "split.offset", schedapi.CodeBadRequest},
		{"trailing data", "POST", "/v1/place", `{"job":"j","task":"t","split":{"uri":"s3://bkt/u","offset":0,"length":1}} {}`, 400, "after the JSON object", schedapi.CodeBadRequest},
		{"negative offset", "POST", "/v1/place", `{"job":"j","task":"t","split":{"uri":"s3://bkt/u","offset":-1,"length":1}}`, 400, "negative split offset", schedapi.CodeBadRequest},
		{"relative uri", "POST", "/v1/place", `{"job":"j","task":"t","split":{"uri":"relative/path","offset":0,"length":1}}`, 400, "split uri", schedapi.CodeBadRequest},
		{"unsupported scheme", "POST", "/v1/place", `{"job":"j","task":"t","split":{"uri":"ftp://host/x","offset":0,"length":1}}`, 400, "unsupported URI scheme", schedapi.CodeBadRequest},
		{"no bucket", "POST", "/v1/place", `{"job":"j","task":"t","split":{"uri":"s3:///key","offset":0,"length":1}}`, 400, "split uri", schedapi.CodeBadRequest},
		{"prefix uri", "POST", "/v1/place", `{"job":"j","task":"t","split":{"uri":"s3://bkt/dir/","offset":0,"length":1}}`, 400, "names a prefix", schedapi.CodeBadRequest},
		{"relative file uri", "POST", "/v1/place", `{"job":"j","task":"t","split":{"uri":"file://relative","offset":0,"length":1}}`, 400, "split uri", schedapi.CodeBadRequest},
		{"non-canonical file uri", "POST", "/v1/place", `{"job":"j","task":"t","split":{"uri":"file://localhost/data/x","offset":0,"length":1}}`, 400, "not canonical", schedapi.CodeBadRequest},
		{"zero length", "POST", "/v1/place", `{"job":"j","task":"t","split":{"uri":"s3://bkt/u","offset":0,"length":0}}`, 400, "length 0", schedapi.CodeBadRequest},
		{"empty URI", "POST", "/v1/place", `{"job":"j","task":"t","split":{"uri":"","offset":0,"length":1}}`, 400, "empty split uri", schedapi.CodeBadRequest},
		{"empty job", "POST", "/v1/place", `{"job":"","task":"t","split":{"uri":"s3://bkt/u","offset":0,"length":1}}`, 400, "empty job", schedapi.CodeBadRequest},
		{"empty task", "POST", "/v1/place", `{"job":"j","task":"","split":{"uri":"s3://bkt/u","offset":0,"length":1}}`, 400, "empty task", schedapi.CodeBadRequest},
		{"overflow", "POST", "/v1/place", `{"job":"j","task":"t","split":{"uri":"s3://bkt/u","offset":9223372036854775807,"length":1}}`, 400, "overflows", schedapi.CodeBadRequest},
		{"huge wait", "POST", "/v1/place", `{"job":"j","task":"t","split":{"uri":"s3://bkt/u","offset":0,"length":1},"wait_ms":999999999}`, 400, "wait_ms", schedapi.CodeBadRequest},
		{"oversized body", "POST", "/v1/place", big, 413, "too large", schedapi.CodeTooLarge},
		{"duplicate running task", "POST", "/v1/place", `{"job":"j","task":"running","split":{"uri":"s3://bkt/u","offset":0,"length":1}}`, 409, "already queued or running", schedapi.CodeConflict},
		{"batch: empty", "POST", "/v1/place/batch", `{"job":"j","tasks":[]}`, 400, "empty batch", schedapi.CodeBadRequest},
		{"batch: too many tasks", "POST", "/v1/place/batch", manyTasks, 400, "exceeds the limit 100", schedapi.CodeBadRequest},
		{"batch: task twice", "POST", "/v1/place/batch", `{"job":"j","tasks":[{"task":"a","split":{"uri":"s3://bkt/u","offset":0,"length":1}},{"task":"a","split":{"uri":"s3://bkt/u","offset":0,"length":1}}]}`, 400, "listed twice", schedapi.CodeBadRequest},
		{"batch: negative offset", "POST", "/v1/place/batch", `{"job":"j","tasks":[{"task":"a","split":{"uri":"s3://bkt/u","offset":-5,"length":1}}]}`, 400, "tasks[0]", schedapi.CodeBadRequest},
		{"batch: unknown field", "POST", "/v1/place/batch", `{"job":"j","tasks":[{"task":"a","uri":"s3://bkt/u"}]}`, 400, `unknown field "uri"`, schedapi.CodeBadRequest},
		{"batch: oversized", "POST", "/v1/place/batch", `{"job":"j","tasks":[` + strings.Repeat(" ", 70<<10) + `]}`, 413, "too large", schedapi.CodeTooLarge},
		{"complete: unknown job", "POST", "/v1/complete", `{"job":"nope","task":"t","bytes":1}`, 400, "unknown job", schedapi.CodeNotFound},
		{"complete: unknown task", "POST", "/v1/complete", `{"job":"j","task":"nope","bytes":1}`, 400, "unknown task", schedapi.CodeNotFound},
		{"complete: negative bytes", "POST", "/v1/complete", `{"job":"j","task":"running","bytes":-1}`, 400, "negative byte count", schedapi.CodeBadRequest},
		{"complete: bytes below parts", "POST", "/v1/complete", `{"job":"j","task":"running","bytes":5,"local_hit_bytes":10}`, 400, "bytes 5 <", schedapi.CodeBadRequest},
		{"complete: unknown field", "POST", "/v1/complete", `{"job":"j","task":"running","hits":1}`, 400, `unknown field "hits"`, schedapi.CodeBadRequest},
		{"complete batch: empty", "POST", "/v1/complete/batch", `{"job":"j","tasks":[]}`, 400, "empty batch", schedapi.CodeBadRequest},
		{"counters: unknown job", "GET", "/v1/jobs/nope", ``, 400, "nope", schedapi.CodeNotFound},
		{"counters: unknown job, escaped name", "GET", "/v1/jobs/no%2Fsuch%20job", ``, 400, `"no/such job"`, schedapi.CodeNotFound},
		{"unknown endpoint", "GET", "/v1/nothing", ``, 404, "no such endpoint", schedapi.CodeNoEndpoint},
		{"counters: unknown job with a slash", "GET", "/v1/jobs/no/such", ``, 400, `"no/such"`, schedapi.CodeNotFound},
		{"counters: empty job", "GET", "/v1/jobs/", ``, 400, "empty job", schedapi.CodeBadRequest},
		{"wrong method", "GET", "/v1/place", ``, 405, "/v1/place takes POST", schedapi.CodeMethodNotAllowed},
		{"wrong method on a GET path", "POST", "/v1/jobs/j", `{}`, 405, "takes GET", schedapi.CodeMethodNotAllowed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.body != "" {
				body = []byte(tc.body)
			}
			err := c.Do(ctx, tc.method, tc.path, body, nil)
			var se *schedulertest.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want HTTP %d", err, tc.code)
			}
			if se.Code != tc.code {
				t.Errorf("got HTTP %d (%s), want %d", se.Code, se.Body.Error, tc.code)
			}
			if se.Body.Error == "" || !strings.Contains(se.Body.Error, tc.want) {
				t.Errorf("error %q does not mention %q", se.Body.Error, tc.want)
			}
			if se.Body.Code != tc.kind {
				t.Errorf("code %q, want %q", se.Body.Code, tc.kind)
			}
			if ct := se.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
		})
	}
	// In a batch, an unknown job or task fails only its own result, with
	// the status and code a single Complete would have got.
	cr, err := c.CompleteBatch(ctx, schedapi.CompleteBatchRequest{Job: "j", Tasks: []schedapi.CompleteTask{{Task: "nope", Bytes: 1}}})
	if err != nil || len(cr.Results) != 1 {
		t.Fatalf("complete batch of an unknown task: %+v, %v", cr, err)
	}
	if r := cr.Results[0]; r.Status != 400 || r.Code != schedapi.CodeNotFound || !strings.Contains(r.Error, "unknown task") {
		t.Errorf("complete batch of an unknown task: %+v; want 400, code not_found, \"unknown task\"", r)
	}
	cr, err = c.CompleteBatch(ctx, schedapi.CompleteBatchRequest{Job: "nope", Tasks: []schedapi.CompleteTask{{Task: "t", Bytes: 1}}})
	if err != nil || len(cr.Results) != 1 || cr.Results[0].Status != 400 || cr.Results[0].Code != schedapi.CodeNotFound {
		t.Errorf("complete batch of an unknown job: %+v, %v; want one result, 400, code not_found", cr, err)
	}
	// The running task is still there and completes.
	if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "j", Task: "running", Bytes: 10, LocalHitBytes: 10}); err != nil {
		t.Fatalf("complete after bad input: %v", err)
	}
}

// TestNoNode: no cache node at all, or no slot, gives 503 at once.
func TestNoNode(t *testing.T) {
	ctx := context.Background()
	t.Run("empty cluster", func(t *testing.T) {
		_, c := startWith(t, schedulertest.NewViews(t), nil)
		start := time.Now()
		_, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "t", Split: split("s3://bkt/k")})
		if statusOf(err) != 503 {
			t.Fatalf("got %v, want 503", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("503 took %v, want at once", d)
		}
		_, err = c.PlaceBatch(ctx, schedapi.PlaceBatchRequest{Job: "j", Tasks: []schedapi.BatchTask{{Task: "t", Split: split("s3://bkt/u")}}})
		if statusOf(err) != 503 {
			t.Fatalf("batch: got %v, want 503", err)
		}
	})
	t.Run("nodes without slots", func(t *testing.T) {
		_, c := startWith(t, schedulertest.NewViews(t, schedulertest.Node("n1", "r1", 0)), nil)
		_, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "t", Split: split("s3://bkt/k")})
		if statusOf(err) != 503 {
			t.Fatalf("got %v, want 503", err)
		}
	})
	t.Run("only draining nodes", func(t *testing.T) {
		_, c := startWith(t, schedulertest.NewViews(t, schedulertest.Draining(schedulertest.Node("n1", "r1", 4))), nil)
		_, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "t", Split: split("s3://bkt/k")})
		if statusOf(err) != 503 {
			t.Fatalf("got %v, want 503", err)
		}
	})
	t.Run("all slots busy until the queue wait ends", func(t *testing.T) {
		_, c := startWith(t, schedulertest.NewViews(t, schedulertest.Node("n1", "r1", 1)), func(cfg *scheduler.Config) {
			cfg.MaxQueueWait = 300 * time.Millisecond
		})
		if _, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "a", Split: split("s3://bkt/u"), WaitMS: -1}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "b", Split: split("s3://bkt/u"), WaitMS: -1})
		if statusOf(err) != 503 || !strings.Contains(err.Error(), "within 300ms") {
			t.Fatalf("got %v, want 503 after the queue wait", err)
		}
		if d := time.Since(start); d < 250*time.Millisecond || d > 3*time.Second {
			t.Errorf("503 after %v, want about 300ms", d)
		}
		// The cancelled task is not counted as queued or running.
		cnt, err := c.Counters(ctx, "j")
		if err != nil {
			t.Fatal(err)
		}
		if cnt.Queued != 0 || cnt.Running != 1 {
			t.Errorf("queued %d running %d, want 0 and 1", cnt.Queued, cnt.Running)
		}
	})
}

// TestBlockSizeMismatch: a scheduler configured with another block size
// than the cache nodes' refuses to place (wrong placement keys) and says
// how to fix it; without the flag it takes theirs.
func TestBlockSizeMismatch(t *testing.T) {
	n := schedulertest.Node("n1", "r1", 4)
	n.BlockSize = 64 << 20
	_, c := startWith(t, schedulertest.NewViews(t, n), func(cfg *scheduler.Config) { cfg.BlockSize = 128 << 20 })
	_, err := c.Place(context.Background(), schedapi.PlaceRequest{Job: "j", Task: "t", Split: split("s3://bkt/u")})
	if statusOf(err) != 503 || !strings.Contains(err.Error(), "--block-size=67108864") {
		t.Errorf("got %v, want 503 naming --block-size=67108864", err)
	}
	// It is not ready (a load balancer must not send it placements), and
	// its ring shows the block size it would place with, not 0.
	var ready struct {
		Ready  bool   `json:"ready"`
		Reason string `json:"reason"`
	}
	if err := c.Do(context.Background(), "GET", "/readyz", nil, &ready); statusOf(err) != 503 {
		t.Errorf("/readyz: %v (%+v), want 503", err, ready)
	}
	if r, err := c.Ring(context.Background()); err != nil || r.BlockSize != 128<<20 {
		t.Errorf("ring block size %d (%v), want the configured 128 MiB", r.BlockSize, err)
	}
	_, c = startWith(t, schedulertest.NewViews(t, n), nil)
	if err := c.Do(context.Background(), "GET", "/readyz", nil, &ready); err != nil || !ready.Ready {
		t.Errorf("/readyz without --block-size: %v %+v, want ready", err, ready)
	}
	if _, err := c.Place(context.Background(), schedapi.PlaceRequest{Job: "j", Task: "t", Split: split("s3://bkt/u")}); err != nil {
		t.Errorf("without --block-size: %v", err)
	}
	if r, _ := c.Ring(context.Background()); r.BlockSize != 64<<20 {
		t.Errorf("ring block size %d, want the nodes' 64 MiB", r.BlockSize)
	}
}

// TestAuth: with a token, POSTs need it; GETs do not.
func TestAuth(t *testing.T) {
	_, c := startWith(t, threeNodes(t), func(cfg *scheduler.Config) { cfg.AuthToken = "s3cret-token" })
	ctx := context.Background()
	req := schedapi.PlaceRequest{Job: "j", Task: "t", Split: split("s3://bkt/u")}
	for _, tok := range []string{"", "wrong", "s3cret-tokenX", "s3cret-toke"} {
		c.Token = tok
		if _, err := c.Place(ctx, req); statusOf(err) != 401 {
			t.Errorf("token %q: got %v, want 401", tok, err)
		}
	}
	c.Token = "s3cret-token"
	if _, err := c.Place(ctx, req); err != nil {
		t.Fatalf("right token: %v", err)
	}
	c.Token = ""
	if _, err := c.Counters(ctx, "j"); err != nil {
		t.Errorf("GET without token: %v", err)
	}
	if _, err := c.Ring(ctx); err != nil {
		t.Errorf("GET /v1/ring without token: %v", err)
	}
	// A lower-case scheme is accepted (RFC 7235: case-insensitive).
	err := c.Do(ctx, "POST", "/v1/complete", []byte(`{"job":"j","task":"t"}`), nil)
	if statusOf(err) != 401 {
		t.Errorf("complete without token: %v, want 401", err)
	}
	r, _ := http.NewRequest("POST", c.Base+"/v1/complete", strings.NewReader(`{"job":"j","task":"t"}`))
	r.Header.Set("Authorization", "bearer s3cret-token")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("lower-case bearer: HTTP %d, want 200", resp.StatusCode)
	}
}

// TestStatusEndpoints: /, /healthz, /readyz, /metrics answer.
func TestStatusEndpoints(t *testing.T) {
	_, c := startWith(t, threeNodes(t), nil)
	for _, p := range []string{"/", "/healthz", "/readyz", "/metrics", "/v1/ring", "/v1/counters", "/v1/jobs", "/v1/lost"} {
		resp, err := http.Get(c.Base + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: HTTP %d", p, resp.StatusCode)
		}
	}
}

// Keep the test binary's helpers referenced (os, filepath, fmt, membership
// are used by other test files of this package).
var _ = []any{os.Getpid, filepath.Join, fmt.Sprint, membership.StateAlive}

// TestRouting: a job name with "/" is served under /v1/jobs/ escaped or
// not, and a known path asked with the wrong method is a 405 (code
// method_not_allowed; it was a 404 no_endpoint, which says the path does
// not exist, with an Allow header that belongs to a 405) naming the
// methods it takes in the message and the Allow header RFC 9110 requires
// of a 405. An unknown path stays 404 no_endpoint.
func TestRouting(t *testing.T) {
	_, c := startWith(t, threeNodes(t), nil)
	ctx := context.Background()
	if _, err := c.Place(ctx, schedapi.PlaceRequest{Job: "q1/stage-2", Task: "t", Split: split("s3://bkt/k")}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/jobs/q1/stage-2", "/v1/jobs/q1%2Fstage-2"} {
		var jc schedapi.JobCounters
		if err := c.Do(ctx, "GET", path, nil, &jc); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		if jc.Job != "q1/stage-2" || jc.Running != 1 {
			t.Errorf("GET %s: job %q running %d, want q1/stage-2 running 1", path, jc.Job, jc.Running)
		}
	}
	for _, tc := range []struct {
		method, path, allow string
		status              int
		code                string
	}{
		{"GET", "/v1/place", "POST", 405, schedapi.CodeMethodNotAllowed},
		{"PUT", "/v1/complete/batch", "POST", 405, schedapi.CodeMethodNotAllowed},
		{"DELETE", "/v1/ring", "GET", 405, schedapi.CodeMethodNotAllowed},
		{"POST", "/metrics", "GET", 405, schedapi.CodeMethodNotAllowed},
		{"OPTIONS", "/v1/jobs/j", "GET", 405, schedapi.CodeMethodNotAllowed},
		{"GET", "/v1/nothing", "", 404, schedapi.CodeNoEndpoint},
		{"POST", "/v1/place/", "", 404, schedapi.CodeNoEndpoint},
	} {
		err := c.Do(ctx, tc.method, tc.path, nil, nil)
		var se *schedulertest.StatusError
		if !errors.As(err, &se) || se.Code != tc.status || se.Body.Code != tc.code {
			t.Fatalf("%s %s: %v, want %d %s", tc.method, tc.path, err, tc.status, tc.code)
		}
		if ct := se.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q, want application/json", tc.method, tc.path, ct)
		}
		if got := se.Header.Get("Allow"); got != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
		}
	}
}
