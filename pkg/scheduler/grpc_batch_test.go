package scheduler_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
	schedulerv1 "github.com/locuscache/locus/proto/scheduler/v1"
)

// TestGRPCBatchCalls: a deferred PlaceBatch task carries the JSON API's
// error over gRPC, and CompleteBatch answers per task as POST
// /v1/complete/batch does (status and code), behind the bearer token.
func TestGRPCBatchCalls(t *testing.T) {
	s, hc := startWith(t, threeNodes(t), func(cfg *scheduler.Config) { cfg.AuthToken = "tok" })
	conn, err := grpc.NewClient(s.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := schedulerv1.NewSchedulerServiceClient(conn)
	ctx := context.Background()
	authed := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer tok")

	// 3 nodes with 2 slots each: a batch of 8 places 6 and defers 2.
	req := &schedulerv1.PlaceBatchRequest{Job: "gb", WaitMs: -1}
	for i := range 8 {
		req.Tasks = append(req.Tasks, &schedulerv1.BatchTask{Task: fmt.Sprintf("t%d", i), Split: &schedulerv1.Split{Uri: fmt.Sprintf("s3://bkt/%d", i), Length: 10}})
	}
	br, err := c.PlaceBatch(authed, req)
	if err != nil || len(br.Placements) != 8 {
		t.Fatalf("PlaceBatch: %v, %v", br, err)
	}
	var placed, deferred []string
	for i, p := range br.Placements {
		if p.Task != req.Tasks[i].Task {
			t.Errorf("placements[%d].task = %q, want %q (request order)", i, p.Task, req.Tasks[i].Task)
		}
		switch {
		case p.Node != "" && p.Error == "":
			placed = append(placed, p.Task)
		case p.Node == "" && strings.HasPrefix(p.Error, "deferred"):
			deferred = append(deferred, p.Task)
		default:
			t.Errorf("placements[%d] = %v: want a node or a \"deferred\" error, not both or neither", i, p)
		}
	}
	if len(placed) != 6 || len(deferred) != 2 {
		t.Fatalf("placed %v, deferred %v; want 6 and 2", placed, deferred)
	}

	cb := &schedulerv1.CompleteBatchRequest{Job: "gb", Tasks: []*schedulerv1.CompleteTask{
		{Task: placed[0], LocalHitBytes: 7, MissBytes: 3},
		{Task: placed[1], Bytes: 10, PeerHitBytes: 10, DurationMs: 5},
		{Task: deferred[0]},
		{Task: "never-placed"},
	}}
	if _, err := c.CompleteBatch(ctx, cb); status.Code(err) != codes.Unauthenticated {
		t.Errorf("CompleteBatch without the token: %v, want Unauthenticated", err)
	}
	cr, err := c.CompleteBatch(authed, cb)
	if err != nil || len(cr.Results) != 4 {
		t.Fatalf("CompleteBatch: %v, %v", cr, err)
	}
	for i, want := range []struct {
		status int32
		code   string
	}{{http.StatusOK, ""}, {http.StatusOK, ""}, {http.StatusBadRequest, schedapi.CodeNotFound}, {http.StatusBadRequest, schedapi.CodeNotFound}} {
		r := cr.Results[i]
		if r.Task != cb.Tasks[i].Task || r.Status != want.status || r.Code != want.code {
			t.Errorf("results[%d] = %v, want task %q status %d code %q", i, r, cb.Tasks[i].Task, want.status, want.code)
		}
		if ok := r.Status == http.StatusOK; ok != (r.Error == "") || ok != (r.Locality != schedulerv1.Locality_LOCALITY_UNSPECIFIED) {
			t.Errorf("results[%d] = %v: a locality exactly when there is no error", i, r)
		}
	}
	j, err := hc.Counters(ctx, "gb")
	if err != nil {
		t.Fatal(err)
	}
	if j.Completed != 2 || j.Bytes != 20 || j.LocalHitBytes != 7 || j.PeerHitBytes != 10 || j.MissBytes != 3 || j.Running != 4 {
		t.Errorf("counters after CompleteBatch: %+v; want 2 completed, 20 bytes (7 local, 10 peer, 3 miss), 4 running", j)
	}
	for _, bad := range []*schedulerv1.CompleteBatchRequest{
		{Job: "gb"},
		{Job: "", Tasks: []*schedulerv1.CompleteTask{{Task: placed[2]}}},
		{Job: "gb", Tasks: []*schedulerv1.CompleteTask{{Task: placed[2], MissBytes: -1}}},
	} {
		if _, err := c.CompleteBatch(authed, bad); status.Code(err) != codes.InvalidArgument {
			t.Errorf("CompleteBatch(%v): %v, want InvalidArgument", bad, err)
		}
	}
}

// TestCompleteBatchDuplicate: a task listed twice in one CompleteBatch is
// completed once; its repeat gets not_found saying it was listed twice
// (not "unknown task", as for a task never placed), the same over JSON and
// gRPC, which share the implementation.
func TestCompleteBatchDuplicate(t *testing.T) {
	s, hc := startWith(t, threeNodes(t), nil)
	conn, err := grpc.NewClient(s.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	gc := schedulerv1.NewSchedulerServiceClient(conn)
	ctx := context.Background()
	for _, api := range []string{"json", "grpc"} {
		job := "dup-" + api
		if _, err := hc.Place(ctx, schedapi.PlaceRequest{Job: job, Task: "t", Split: split("s3://bkt/dup"), WaitMS: -1}); err != nil {
			t.Fatal(err)
		}
		var got []schedapi.CompleteResult
		if api == "json" {
			r, err := hc.CompleteBatch(ctx, schedapi.CompleteBatchRequest{Job: job, Tasks: []schedapi.CompleteTask{{Task: "t", LocalHitBytes: 1}, {Task: "t", LocalHitBytes: 1}, {Task: "nope"}}})
			if err != nil {
				t.Fatal(err)
			}
			got = r.Results
		} else {
			r, err := gc.CompleteBatch(ctx, &schedulerv1.CompleteBatchRequest{Job: job, Tasks: []*schedulerv1.CompleteTask{{Task: "t", LocalHitBytes: 1}, {Task: "t", LocalHitBytes: 1}, {Task: "nope"}}})
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range r.Results {
				got = append(got, schedapi.CompleteResult{Task: x.Task, Error: x.Error, Code: x.Code, Status: int(x.Status)})
			}
		}
		if len(got) != 3 {
			t.Fatalf("%s: %d results, want 3", api, len(got))
		}
		if got[0].Status != http.StatusOK {
			t.Errorf("%s: results[0] = %+v, want 200", api, got[0])
		}
		if got[1].Code != schedapi.CodeNotFound || !strings.Contains(got[1].Error, "listed twice in the batch: tasks[0] completed it") {
			t.Errorf("%s: results[1] = %+v, want not_found saying tasks[0] completed it", api, got[1])
		}
		if got[2].Code != schedapi.CodeNotFound || strings.Contains(got[2].Error, "listed twice") {
			t.Errorf("%s: results[2] = %+v, want not_found for an unknown task", api, got[2])
		}
		cnt, err := hc.Counters(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		if cnt.Completed != 1 || cnt.LocalHitBytes != 1 {
			t.Errorf("%s: completed %d with %d local bytes, want 1 and 1", api, cnt.Completed, cnt.LocalHitBytes)
		}
	}
}
