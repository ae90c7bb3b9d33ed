package scheduler

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/placement"
	"github.com/locuscache/locus/pkg/schedapi"
	schedulerv1 "github.com/locuscache/locus/proto/scheduler/v1"
)

// grpcService is the SchedulerService: the same calls as the JSON API.
//
// PlaceBatch answers one Placement per task in request order; a task that
// was deferred (see Scheduler.PlaceBatch) has only its task id and error
// set (node empty), as in the JSON API: resubmit it later.
type grpcService struct {
	schedulerv1.UnimplementedSchedulerServiceServer
	s *Scheduler
}

// mutatingMethods need the bearer token (Config.AuthToken).
var mutatingMethods = map[string]string{
	schedulerv1.SchedulerService_Place_FullMethodName:         "place",
	schedulerv1.SchedulerService_PlaceBatch_FullMethodName:    "place_batch",
	schedulerv1.SchedulerService_Complete_FullMethodName:      "complete",
	schedulerv1.SchedulerService_CompleteBatch_FullMethodName: "complete_batch",
}

// grpcInterceptor checks the bearer token of mutating calls, times every
// call, and maps errors onto gRPC statuses.
func (s *Scheduler) grpcInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	call, mutating := mutatingMethods[info.FullMethod]
	if !mutating {
		call = strings.ToLower(info.FullMethod[strings.LastIndexByte(info.FullMethod, '/')+1:])
		if call == "jobcounters" {
			call = "counters"
		}
	}
	start := time.Now()
	var err error
	if mutating && s.cfg.AuthToken != "" {
		md, _ := metadata.FromIncomingContext(ctx)
		auth := ""
		if v := md.Get("authorization"); len(v) > 0 {
			auth = v[0]
		}
		err = s.checkToken(auth)
	}
	var resp any
	if err == nil {
		resp, err = h(ctx, req)
	}
	code := StatusOf(err)
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		code = 499 // the caller gave up, counted as writeError counts an HTTP client that went away
	}
	s.metrics.requests.WithLabelValues(call).Observe(time.Since(start).Seconds())
	s.metrics.answers.WithLabelValues(call, strconv.Itoa(code)).Inc()
	if err != nil {
		return nil, s.grpcError(ctx, info.FullMethod, err)
	}
	return resp, nil
}

// grpcError maps a service error onto a gRPC status. A follower's answer
// carries the leader's gRPC address in the x-locus-leader trailer.
func (s *Scheduler) grpcError(ctx context.Context, method string, err error) error {
	if _, ok := status.FromError(err); ok && !isOurs(err) {
		return err
	}
	var c codes.Code
	switch CodeOf(err) {
	case schedapi.CodeBadRequest:
		c = codes.InvalidArgument
	case schedapi.CodeTooLarge:
		c = codes.ResourceExhausted
	case schedapi.CodeUnauthorized:
		c = codes.Unauthenticated
	case schedapi.CodeNotFound:
		c = codes.NotFound // HTTP says 400 (bad input); gRPC has a code of its own
	case schedapi.CodeConflict:
		c = codes.AlreadyExists
		if method == schedulerv1.SchedulerService_Complete_FullMethodName {
			c = codes.FailedPrecondition
		}
	case schedapi.CodeNoNode, schedapi.CodeNotLeader, schedapi.CodeUnavailable:
		c = codes.Unavailable
	default:
		c = codes.Internal
	}
	switch {
	case errors.Is(err, context.Canceled):
		c = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		c = codes.DeadlineExceeded
	}
	var nl *NotLeaderError
	if errors.As(err, &nl) {
		c = codes.FailedPrecondition
		if nl.LeaderGRPC != "" {
			_ = grpc.SetTrailer(ctx, metadata.Pairs("x-locus-leader", nl.LeaderGRPC, "x-locus-leader-http", nl.Leader))
		}
	}
	return status.Error(c, err.Error())
}

// isOurs reports whether err is one of this package's (or placement's)
// errors rather than a status from gRPC itself.
func isOurs(err error) bool {
	return CodeOf(err) != schedapi.CodeInternal || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func splitFrom(sp *schedulerv1.Split) schedapi.Split {
	if sp == nil {
		return schedapi.Split{}
	}
	return schedapi.Split{URI: sp.GetUri(), Offset: sp.GetOffset(), Length: sp.GetLength()}
}

func localityPB(s string) schedulerv1.Locality {
	switch s {
	case "DATA_LOCAL":
		return schedulerv1.Locality_LOCALITY_DATA_LOCAL
	case "RACK_LOCAL":
		return schedulerv1.Locality_LOCALITY_RACK_LOCAL
	case "OTHER_LOCAL":
		return schedulerv1.Locality_LOCALITY_OTHER_LOCAL
	}
	return schedulerv1.Locality_LOCALITY_UNSPECIFIED
}

func placementPB(p *schedapi.Placement) *schedulerv1.Placement {
	return &schedulerv1.Placement{
		Task: p.Task, Node: p.Node, Address: p.Address, HttpAddress: p.HTTPAddress, Rack: p.Rack,
		Locality: localityPB(p.Locality), Owner: p.Owner, RingEpoch: p.RingEpoch, Error: p.Error,
		WaitedMs: p.WaitedMS,
	}
}

func (g *grpcService) Place(ctx context.Context, r *schedulerv1.PlaceRequest) (*schedulerv1.Placement, error) {
	p, err := g.s.Place(ctx, schedapi.PlaceRequest{Job: r.GetJob(), Task: r.GetTask(), Split: splitFrom(r.GetSplit()), WaitMS: r.GetWaitMs()})
	if err != nil {
		return nil, err
	}
	return placementPB(&p), nil
}

func (g *grpcService) PlaceBatch(ctx context.Context, r *schedulerv1.PlaceBatchRequest) (*schedulerv1.PlaceBatchResponse, error) {
	req := schedapi.PlaceBatchRequest{Job: r.GetJob(), WaitMS: r.GetWaitMs(), Tasks: make([]schedapi.BatchTask, len(r.GetTasks()))}
	for i, t := range r.GetTasks() {
		req.Tasks[i] = schedapi.BatchTask{Task: t.GetTask(), Split: splitFrom(t.GetSplit())}
	}
	resp, err := g.s.PlaceBatch(ctx, req)
	if err != nil {
		return nil, err
	}
	out := &schedulerv1.PlaceBatchResponse{Placements: make([]*schedulerv1.Placement, len(resp.Placements))}
	for i := range resp.Placements {
		out.Placements[i] = placementPB(&resp.Placements[i])
	}
	return out, nil
}

func (g *grpcService) Complete(ctx context.Context, r *schedulerv1.CompleteRequest) (*schedulerv1.CompleteResponse, error) {
	resp, err := g.s.Complete(ctx, schedapi.CompleteRequest{
		Job: r.GetJob(), Task: r.GetTask(), Bytes: r.GetBytes(), LocalHitBytes: r.GetLocalHitBytes(),
		PeerHitBytes: r.GetPeerHitBytes(), MissBytes: r.GetMissBytes(), DurationMS: r.GetDurationMs(),
	})
	if err != nil {
		return nil, err
	}
	return &schedulerv1.CompleteResponse{Locality: localityPB(resp.Locality)}, nil
}

func (g *grpcService) CompleteBatch(ctx context.Context, r *schedulerv1.CompleteBatchRequest) (*schedulerv1.CompleteBatchResponse, error) {
	req := schedapi.CompleteBatchRequest{Job: r.GetJob(), Tasks: make([]schedapi.CompleteTask, len(r.GetTasks()))}
	for i, t := range r.GetTasks() {
		req.Tasks[i] = schedapi.CompleteTask{
			Task: t.GetTask(), Bytes: t.GetBytes(), LocalHitBytes: t.GetLocalHitBytes(),
			PeerHitBytes: t.GetPeerHitBytes(), MissBytes: t.GetMissBytes(), DurationMS: t.GetDurationMs(),
		}
	}
	resp, err := g.s.CompleteBatch(ctx, req)
	if err != nil {
		return nil, err
	}
	out := &schedulerv1.CompleteBatchResponse{Results: make([]*schedulerv1.CompleteResult, len(resp.Results))}
	for i, x := range resp.Results {
		out.Results[i] = &schedulerv1.CompleteResult{Task: x.Task, Locality: localityPB(x.Locality), Error: x.Error,
			Status: int32(x.Status), Code: x.Code}
	}
	return out, nil
}

func (g *grpcService) JobCounters(ctx context.Context, r *schedulerv1.JobCountersRequest) (*schedulerv1.JobCountersResponse, error) {
	c, err := g.s.JobCounters(ctx, r.GetJob())
	if err != nil {
		return nil, err
	}
	out := &schedulerv1.JobCountersResponse{
		Job: c.Job, DataLocalTasks: c.DataLocalTasks, RackLocalTasks: c.RackLocalTasks, OtherLocalTasks: c.OtherLocalTasks,
		RunningTasks: c.Running, LostTasks: c.Lost, HitRatio: c.HitRatio,
		ByLocality:     make(map[string]*schedulerv1.LocalityOutcome, placement.NumLocalities),
		CompletedTasks: c.Completed, QueuedTasks: c.Queued, DataLocalRatio: c.DataLocalRatio,
		Bytes: c.Bytes, LocalHitBytes: c.LocalHitBytes, PeerHitBytes: c.PeerHitBytes, MissBytes: c.MissBytes,
	}
	for name, l := range map[string]schedapi.LocalityStats{"DATA_LOCAL": c.ByLocality.DataLocal, "RACK_LOCAL": c.ByLocality.RackLocal, "OTHER_LOCAL": c.ByLocality.OtherLocal} {
		out.ByLocality[name] = &schedulerv1.LocalityOutcome{
			Tasks: l.Placed, Bytes: l.Bytes, LocalHitBytes: l.LocalHitBytes, PeerHitBytes: l.PeerHitBytes,
			MissBytes: l.MissBytes, HitRatio: l.HitRatio,
		}
	}
	return out, nil
}

func (g *grpcService) Ring(ctx context.Context, _ *schedulerv1.RingRequest) (*schedulerv1.RingResponse, error) {
	r := g.s.Ring()
	out := &schedulerv1.RingResponse{Epoch: r.Epoch, BlockSize: r.BlockSize, Replication: int32(r.Replication),
		Generation: r.Generation, LocalityWaitMs: r.LocalityMS, Scheduler: r.Scheduler, Leader: r.Leader,
		LeaderHttp: r.LeaderHTTP, Standalone: r.Standalone}
	for _, m := range r.Members {
		if m.Role == "observer" {
			continue // the proto's members are cache nodes
		}
		out.Members = append(out.Members, &schedulerv1.Member{
			Node: m.Node, Rack: m.Rack, State: m.State, Address: m.Address, HttpAddress: m.HTTPAddress,
			Slots: int32(m.Slots), SlotsInUse: int32(m.SlotsInUse), CapacityBytes: m.CapacityBytes,
			Waiting: int32(m.Waiting), Share: m.Share,
		})
	}
	return out, nil
}
