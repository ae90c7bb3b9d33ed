package scheduler_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
	schedulerv1 "github.com/locuscache/locus/proto/scheduler/v1"
)

// TestGRPC: the SchedulerService has the JSON API's semantics and codes.
func TestGRPC(t *testing.T) {
	s, hc := startWith(t, threeNodes(t), func(cfg *scheduler.Config) { cfg.AuthToken = "tok" })
	conn, err := grpc.NewClient(s.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := schedulerv1.NewSchedulerServiceClient(conn)
	ctx := context.Background()
	authed := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer tok")
	code := func(err error) codes.Code { return status.Code(err) }

	req := &schedulerv1.PlaceRequest{Job: "g", Task: "t1", Split: &schedulerv1.Split{Uri: "s3://bkt/k", Length: 100}}
	if _, err := c.Place(ctx, req); code(err) != codes.Unauthenticated {
		t.Errorf("no token: %v, want Unauthenticated", err)
	}
	p, err := c.Place(authed, req)
	if err != nil {
		t.Fatal(err)
	}
	if p.Node == "" || p.Locality != schedulerv1.Locality_LOCALITY_DATA_LOCAL || p.Address == "" || p.RingEpoch == 0 || p.Task != "t1" {
		t.Errorf("placement %+v", p)
	}
	if _, err := c.Place(authed, req); code(err) != codes.AlreadyExists {
		t.Errorf("duplicate: %v, want AlreadyExists", err)
	}
	bad := []*schedulerv1.PlaceRequest{
		{Job: "g", Task: "x", Split: &schedulerv1.Split{Uri: "s3://bkt/u", Offset: -1, Length: 1}},
		{Job: "g", Task: "x", Split: &schedulerv1.Split{Uri: "", Length: 1}},
		{Job: "g", Task: "x"},
		{Job: "", Task: "x", Split: &schedulerv1.Split{Uri: "s3://bkt/u", Length: 1}},
	}
	for _, b := range bad {
		if _, err := c.Place(authed, b); code(err) != codes.InvalidArgument {
			t.Errorf("%v: %v, want InvalidArgument", b, err)
		}
	}
	br, err := c.PlaceBatch(authed, &schedulerv1.PlaceBatchRequest{Job: "g", WaitMs: -1, Tasks: []*schedulerv1.BatchTask{
		{Task: "b1", Split: &schedulerv1.Split{Uri: "s3://bkt/1", Length: 10}},
		{Task: "b2", Split: &schedulerv1.Split{Uri: "s3://bkt/2", Length: 10}},
	}})
	if err != nil || len(br.Placements) != 2 || br.Placements[0].Task != "b1" || br.Placements[1].Node == "" {
		t.Fatalf("batch %v %v", br, err)
	}
	cr, err := c.Complete(authed, &schedulerv1.CompleteRequest{Job: "g", Task: "t1", LocalHitBytes: 60, MissBytes: 40})
	if err != nil || cr.Locality != schedulerv1.Locality_LOCALITY_DATA_LOCAL {
		t.Fatalf("complete %v %v", cr, err)
	}
	if _, err := c.Complete(authed, &schedulerv1.CompleteRequest{Job: "g", Task: "t1"}); code(err) != codes.NotFound {
		t.Errorf("complete twice: %v, want NotFound", err)
	}
	if _, err := c.Complete(authed, &schedulerv1.CompleteRequest{Job: "nope", Task: "t1"}); code(err) != codes.NotFound {
		t.Errorf("unknown job: %v, want NotFound", err)
	}
	jc, err := c.JobCounters(ctx, &schedulerv1.JobCountersRequest{Job: "g"})
	if err != nil {
		t.Fatal(err)
	}
	hj, err := hc.Counters(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if jc.DataLocalTasks != hj.DataLocalTasks || jc.RunningTasks != 2 || jc.HitRatio != 0.6 ||
		jc.ByLocality["DATA_LOCAL"].GetLocalHitBytes() != 60 || jc.ByLocality["DATA_LOCAL"].GetHitRatio() != hj.HitRatioByLocality.DataLocal {
		t.Errorf("gRPC counters %+v disagree with JSON %+v", jc, hj)
	}
	// The gRPC messages carry what the JSON answers do (DESIGN).
	if jc.CompletedTasks != 1 || jc.CompletedTasks != hj.Completed || jc.QueuedTasks != hj.Queued || jc.DataLocalRatio != hj.DataLocalRatio ||
		jc.DataLocalRatio == 0 || jc.Bytes != 100 || jc.LocalHitBytes != 60 || jc.PeerHitBytes != 0 || jc.MissBytes != 40 {
		t.Errorf("gRPC counters %+v: completed, queued, data-local ratio or bytes differ from JSON %+v", jc, hj)
	}
	if p.WaitedMs < 0 || p.WaitedMs > 60_000 {
		t.Errorf("placement waited_ms %d", p.WaitedMs)
	}
	if _, err := c.JobCounters(ctx, &schedulerv1.JobCountersRequest{Job: "nope"}); code(err) != codes.NotFound {
		t.Errorf("unknown job counters: %v", err)
	}
	rr, err := c.Ring(ctx, &schedulerv1.RingRequest{})
	if err != nil || len(rr.Members) != 3 || rr.Replication != 2 || rr.Epoch == 0 {
		t.Fatalf("ring %v %v", rr, err)
	}
	used := int32(0)
	for _, m := range rr.Members {
		used += m.SlotsInUse
	}
	if used != 2 {
		t.Errorf("slots in use %d, want 2", used)
	}
	hr, err := hc.Ring(ctx)
	if err != nil {
		t.Fatal(err)
	}
	share := 0.0
	for _, m := range rr.Members {
		share += m.Share
	}
	if rr.LocalityWaitMs != hr.LocalityMS || rr.LocalityWaitMs == 0 || rr.Generation != hr.Generation || rr.Scheduler != hr.Scheduler ||
		rr.Scheduler == "" || !rr.Leader || !rr.Standalone || share < 0.99 || share > 1.01 {
		t.Errorf("gRPC ring %+v (shares sum %v) differs from JSON %+v", rr, share, hr)
	}
	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || h.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health %v %v", h, err)
	}
}

// TestGRPCHealthFollowsReadiness: the gRPC health service says what
// /readyz says: a leader whose block size differs from the cache nodes'
// (every placement answers 503) is NOT_SERVING, and SERVING again once the
// nodes' block size matches. Was: SERVING from the moment it led, so a
// gRPC client or probe with health checking sent it calls that all failed
// UNAVAILABLE while /readyz said 503.
func TestGRPCHealthFollowsReadiness(t *testing.T) {
	n := schedulertest.Node("n1", "r1", 4)
	n.BlockSize = 64 << 20
	views := schedulertest.NewViews(t, n)
	s, hc := startWith(t, views, func(cfg *scheduler.Config) { cfg.BlockSize = 128 << 20 })
	conn, err := grpc.NewClient(s.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	ctx := context.Background()
	check := func(want healthpb.HealthCheckResponse_ServingStatus, why string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			got := healthpb.HealthCheckResponse_UNKNOWN
			h, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: schedulerv1.SchedulerService_ServiceDesc.ServiceName})
			if err == nil {
				got = h.Status
			}
			var ready struct {
				Ready bool `json:"ready"`
			}
			_ = hc.Do(ctx, "GET", "/readyz", nil, &ready)
			if got == want {
				if ready.Ready != (want == healthpb.HealthCheckResponse_SERVING) {
					t.Errorf("%s: gRPC health %v but /readyz ready=%v", why, got, ready.Ready)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: gRPC health %v (%v), want %v (/readyz ready=%v)", why, got, err, want, ready.Ready)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	check(healthpb.HealthCheckResponse_NOT_SERVING, "nodes at 64 MiB, --block-size 128 MiB")
	n.BlockSize = 128 << 20
	if err := views.Set(n); err != nil {
		t.Fatal(err)
	}
	check(healthpb.HealthCheckResponse_SERVING, "the nodes' block size now matches")
}

// TestGRPCCallerGoneCounted: a gRPC call whose caller gave up (its
// deadline passed, or it cancelled) while it waited for a slot counts in
// locus_scheduler_requests_total as code 499, as an HTTP call whose client
// went away does, not as an internal error. Was: code 500, so an alert on
// the scheduler's 5xx rate fired for every executor that timed out.
func TestGRPCCallerGoneCounted(t *testing.T) {
	s, hc := startWith(t, threeNodes(t), nil)
	placeAllNow(t, hc, "full", 6) // every slot
	conn, err := grpc.NewClient(s.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := schedulerv1.NewSchedulerServiceClient(conn)
	req := func(task string) *schedulerv1.PlaceRequest {
		return &schedulerv1.PlaceRequest{Job: "g", Task: task, Split: &schedulerv1.Split{Uri: "s3://bkt/k", Length: 100}, WaitMs: -1}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err = c.Place(ctx, req("deadline"))
	cancel()
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("place past its deadline: %v, want DeadlineExceeded", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	if _, err = c.Place(ctx, req("cancelled")); status.Code(err) != codes.Canceled {
		t.Fatalf("cancelled place: %v, want Canceled", err)
	}
	// The server sees the cancellation a moment after the client does.
	deadline := time.Now().Add(5 * time.Second)
	for {
		m := scrape(t, hc)
		got499, got500 := m[`locus_scheduler_requests_total{call="place",code="499"}`], m[`locus_scheduler_requests_total{call="place",code="500"}`]
		if got499 == 2 && got500 == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("locus_scheduler_requests_total{call=\"place\"}: code 499 %v, code 500 %v; want 2 and 0", got499, got500)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
