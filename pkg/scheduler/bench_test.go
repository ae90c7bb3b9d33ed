package scheduler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/placement"
	"github.com/locuscache/locus/pkg/ring"
	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// The throughput benchmarks place a batch of tasks and complete them all,
// over and over, and report placements per second. From the rawest to the
// full path, in one run so the ratios hold on a noisy machine:
//
//	BenchmarkThroughput/placer        placement.Placer alone (ring lookups included)
//	BenchmarkThroughput/service       Scheduler.PlaceBatch + CompleteBatch, no HTTP
//	BenchmarkThroughput/http          POST /v1/place/batch + /v1/complete/batch over loopback, JSON both
//	                                  ways; the client uses schedapi's batch codec (AppendPlaceBatchRequest,
//	                                  DecodePlaceBatchResponse, ...)
//	BenchmarkThroughput/http-stdjson  the same with an encoding/json client
//	BenchmarkThroughput/http-server   the same with pre-encoded requests and unread answers: the server's cost
//	BenchmarkThroughput/http-single   POST /v1/place + /v1/complete, one task per call, 8 clients
//
// Client and server share the machine's cores, so the http figures
// include the client's JSON work.
//
// Run: go test ./pkg/scheduler -run '^$' -bench Throughput -benchtime 5s

const benchBatch = 1000

func benchViews(b *testing.B) *schedulertest.Views {
	// Three nodes in two racks with slots for a whole batch each.
	return schedulertest.NewViews(b,
		schedulertest.Node("n1", "r1", benchBatch), schedulertest.Node("n2", "r1", benchBatch), schedulertest.Node("n3", "r2", benchBatch))
}

func benchTasks() []schedapi.BatchTask {
	tasks := make([]schedapi.BatchTask, benchBatch)
	for i := range tasks {
		// 200 files of 8 splits of 64 MiB: realistic URIs and offsets.
		tasks[i] = schedapi.BatchTask{Task: fmt.Sprintf("stage-1/task-%05d", i), Split: schedapi.Split{
			URI: fmt.Sprintf("s3://warehouse/db/events/date=2026-01-%02d/part-%05d.parquet", i%28+1, i/8), Offset: int64(i%8) * 64 << 20, Length: 64 << 20,
		}}
	}
	return tasks
}

func completions(tasks []schedapi.BatchTask) []schedapi.CompleteTask {
	out := make([]schedapi.CompleteTask, len(tasks))
	for i, t := range tasks {
		out[i] = schedapi.CompleteTask{Task: t.Task, Bytes: 64 << 20, LocalHitBytes: 60 << 20, PeerHitBytes: 3 << 20, MissBytes: 1 << 20, DurationMS: 900}
	}
	return out
}

func reportRate(b *testing.B, start time.Time, placements int) {
	b.ReportMetric(float64(placements)/time.Since(start).Seconds(), "placements/s")
}

func BenchmarkThroughput(b *testing.B) {
	tasks := benchTasks()
	done := completions(tasks)
	ctx := context.Background()

	b.Run("placer", func(b *testing.B) {
		p, _ := placement.New(placement.Config{})
		v := benchViews(b).View()
		nodes := []placement.Node{}
		for _, m := range v.Members {
			nodes = append(nodes, placement.Node{ID: m.ID, Rack: m.Rack, Slots: m.Slots})
		}
		p.SetNodes(nodes, time.Now())
		pt := make([]placement.Task, len(tasks))
		var buf []ring.Node
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			for i, t := range tasks {
				key, _ := ring.PlacementKey(t.Split.URI, t.Split.Offset, t.Split.Length, membership.DefaultBlockSize)
				buf = v.Ring.AppendOwners(buf[:0], key, 1)
				pt[i] = placement.Task{Job: "bench", ID: t.Task, Prefer: []string{buf[0].ID}, Wait: 3 * time.Second}
			}
			as, err := p.PlaceBatch(pt, time.Now())
			if err != nil || len(as) != len(pt) {
				b.Fatalf("%d placed, %v", len(as), err)
			}
			for _, t := range done {
				if _, err := p.Complete("bench", t.Task, placement.Outcome{Bytes: t.Bytes, LocalHit: t.LocalHitBytes, PeerHit: t.PeerHitBytes, Miss: t.MissBytes}); err != nil {
					b.Fatal(err)
				}
			}
			p.Advance(time.Now())
		}
		reportRate(b, start, b.N*benchBatch)
	})

	b.Run("service", func(b *testing.B) {
		s := schedulertest.Start(b, scheduler.Config{Membership: benchViews(b)})
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			resp, err := s.PlaceBatch(ctx, schedapi.PlaceBatchRequest{Job: "bench", Tasks: tasks})
			if err != nil || !resp.Placements[len(tasks)-1].Placed() {
				b.Fatal(err)
			}
			if _, err := s.CompleteBatch(ctx, schedapi.CompleteBatchRequest{Job: "bench", Tasks: done}); err != nil {
				b.Fatal(err)
			}
		}
		reportRate(b, start, b.N*benchBatch)
	})

	b.Run("http", func(b *testing.B) {
		s := schedulertest.Start(b, scheduler.Config{Membership: benchViews(b)})
		c := schedulertest.NewClient(s.HTTPAddr())
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			resp, err := c.PlaceBatch(ctx, schedapi.PlaceBatchRequest{Job: "bench", Tasks: tasks})
			if err != nil || len(resp.Placements) != len(tasks) || !resp.Placements[len(tasks)-1].Placed() {
				b.Fatal(err)
			}
			cr, err := c.CompleteBatch(ctx, schedapi.CompleteBatchRequest{Job: "bench", Tasks: done})
			if err != nil || cr.Results[0].Status != 200 {
				b.Fatal(err)
			}
		}
		reportRate(b, start, b.N*benchBatch)
	})

	b.Run("http-stdjson", func(b *testing.B) {
		s := schedulertest.Start(b, scheduler.Config{Membership: benchViews(b)})
		c := schedulertest.NewClient(s.HTTPAddr())
		c.StdJSON = true
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			resp, err := c.PlaceBatch(ctx, schedapi.PlaceBatchRequest{Job: "bench", Tasks: tasks})
			if err != nil || len(resp.Placements) != len(tasks) || !resp.Placements[len(tasks)-1].Placed() {
				b.Fatal(err)
			}
			cr, err := c.CompleteBatch(ctx, schedapi.CompleteBatchRequest{Job: "bench", Tasks: done})
			if err != nil || cr.Results[0].Status != 200 {
				b.Fatal(err)
			}
		}
		reportRate(b, start, b.N*benchBatch)
	})

	b.Run("http-server", func(b *testing.B) {
		s := schedulertest.Start(b, scheduler.Config{Membership: benchViews(b)})
		base := "http://" + s.HTTPAddr()
		placeBody, _ := json.Marshal(schedapi.PlaceBatchRequest{Job: "bench", Tasks: tasks})
		doneBody, _ := json.Marshal(schedapi.CompleteBatchRequest{Job: "bench", Tasks: done})
		hc := schedulertest.NewClient(s.HTTPAddr()).HTTP
		post := func(path string, body []byte) {
			resp, err := hc.Post(base+path, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("%s: HTTP %d", path, resp.StatusCode)
			}
		}
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			post("/v1/place/batch", placeBody)
			post("/v1/complete/batch", doneBody)
		}
		reportRate(b, start, b.N*benchBatch)
	})

	b.Run("http-single", func(b *testing.B) {
		s := schedulertest.Start(b, scheduler.Config{Membership: benchViews(b)})
		c := schedulertest.NewClient(s.HTTPAddr())
		const clients = 8
		b.ReportAllocs()
		start := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		next := 0
		for w := 0; w < clients; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					mu.Lock()
					i := next
					next++
					mu.Unlock()
					if i >= b.N {
						return
					}
					t := tasks[i%len(tasks)]
					id := fmt.Sprintf("%s/%d", t.Task, i)
					if _, err := c.Place(ctx, schedapi.PlaceRequest{Job: "single", Task: id, Split: t.Split}); err != nil {
						b.Error(err)
						return
					}
					if _, err := c.Complete(ctx, schedapi.CompleteRequest{Job: "single", Task: id, Bytes: 1}); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		reportRate(b, start, b.N)
	})
}
