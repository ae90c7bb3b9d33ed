package scheduler_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// A scheduler over a fixed two-node cluster (tests pass a fake membership;
// cmd/scheduler joins the gossip): place a task, complete it, read the
// counters. The HTTP and gRPC handlers call these same methods.
func Example() {
	s, err := scheduler.New(scheduler.Config{
		Membership: schedulertest.MustViews(schedulertest.Node("n1", "r1", 4), schedulertest.Node("n2", "r2", 4)),
		HTTPAddr:   "127.0.0.1:0",
		GRPCAddr:   "127.0.0.1:0",
		Logger:     slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		panic(err)
	}
	defer s.Shutdown(ctx)

	p, err := s.Place(ctx, schedapi.PlaceRequest{
		Job: "q1", Task: "map-0",
		Split: schedapi.Split{URI: "s3://lake/events/part-0.parquet", Offset: 0, Length: 64 << 20},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Locality, p.Node == p.Owner)
	c, err := s.Complete(ctx, schedapi.CompleteRequest{Job: "q1", Task: "map-0", LocalHitBytes: 48 << 20, MissBytes: 16 << 20})
	if err != nil {
		panic(err)
	}
	fmt.Println("completed", c.Locality)
	jc, _ := s.JobCounters(ctx, "q1")
	fmt.Printf("DATA_LOCAL_TASKS=%d hit ratio %.2f\n", jc.DataLocalTasks, jc.HitRatioByLocality.DataLocal)
	// Output:
	// DATA_LOCAL true
	// completed DATA_LOCAL
	// DATA_LOCAL_TASKS=1 hit ratio 0.75
}
