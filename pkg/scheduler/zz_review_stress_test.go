package scheduler_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// TestReviewSlotAccountingStress: concurrent places, batches, completes
// (some twice), cancelled requests, drains, deaths and restarts; at the
// end every slot is free and the counters add up.
func TestReviewSlotAccountingStress(t *testing.T) {
	n1, n2, n3 := schedulertest.Node("n1", "r1", 2), schedulertest.Node("n2", "r1", 2), schedulertest.Node("n3", "r2", 2)
	views := schedulertest.NewViews(t, n1, n2, n3)
	s := schedulertest.Start(t, scheduler.Config{Membership: views, MaxQueueWait: 200 * time.Millisecond})
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // membership churn
		defer wg.Done()
		rng := rand.New(rand.NewPCG(9, 9))
		boot := uint64(1)
		for i := 0; ; i++ {
			select {
			case <-stop:
				_ = views.Set(n1, n2, n3)
				return
			case <-time.After(15 * time.Millisecond):
			}
			a, b, c := n1, n2, n3
			switch rng.IntN(5) {
			case 0:
				b = schedulertest.Draining(b)
				_ = views.Set(a, b, c)
			case 1:
				_ = views.Set(a, b)
			case 2:
				boot++
				c.Boot = boot
				_ = views.Set(a, b, c)
			default:
				_ = views.Set(a, b, c)
			}
		}
	}()
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			var held []string
			for i := 0; i < 120; i++ {
				job := fmt.Sprint("j", w%2)
				switch op := rng.IntN(10); {
				case op < 4:
					task := fmt.Sprintf("w%d-%d", w, i)
					cctx, cancel := context.WithTimeout(ctx, time.Duration(rng.IntN(60))*time.Millisecond)
					p, err := s.Place(cctx, schedapi.PlaceRequest{Job: job, Task: task, Split: split(fmt.Sprint("s3://b/o", rng.IntN(50))), WaitMS: int64(rng.IntN(30)) - 5})
					cancel()
					if err == nil {
						held = append(held, task)
						_ = p
					}
				case op < 6:
					var ts []schedapi.BatchTask
					for k := 0; k < 1+rng.IntN(5); k++ {
						ts = append(ts, schedapi.BatchTask{Task: fmt.Sprintf("w%d-%d-%d", w, i, k), Split: split(fmt.Sprint("s3://b/o", rng.IntN(50)))})
					}
					cctx, cancel := context.WithTimeout(ctx, time.Duration(rng.IntN(100))*time.Millisecond)
					r, err := s.PlaceBatch(cctx, schedapi.PlaceBatchRequest{Job: job, Tasks: ts, WaitMS: int64(rng.IntN(20)) - 5})
					cancel()
					if err == nil {
						for _, p := range r.Placements {
							if p.Placed() {
								held = append(held, p.Task)
							}
						}
					}
				default:
					if len(held) == 0 {
						continue
					}
					k := rng.IntN(len(held))
					task := held[k]
					held = append(held[:k], held[k+1:]...)
					_, _ = s.Complete(ctx, schedapi.CompleteRequest{Job: job, Task: task, LocalHitBytes: 10, MissBytes: 5})
					if rng.IntN(4) == 0 {
						_, _ = s.Complete(ctx, schedapi.CompleteRequest{Job: job, Task: task, LocalHitBytes: 10})
					}
				}
			}
			for _, task := range held {
				_, _ = s.Complete(ctx, schedapi.CompleteRequest{Job: fmt.Sprint("j", w%2), Task: task, Bytes: 1})
			}
		}(w)
	}
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()
	time.Sleep(200 * time.Millisecond)
	for _, m := range s.Ring().Members {
		if m.SlotsInUse != 0 || m.Waiting != 0 {
			t.Errorf("member %+v: slots still in use or waiters after every task completed", m)
		}
	}
	c, err := s.JobCounters(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	placed := c.DataLocalTasks + c.RackLocalTasks + c.OtherLocalTasks
	if c.Running != 0 || c.Queued != 0 || placed != c.Completed+c.Lost {
		t.Errorf("counters do not add up: placed %d completed %d lost %d running %d queued %d", placed, c.Completed, c.Lost, c.Running, c.Queued)
	}
	if c.Bytes != c.LocalHitBytes+c.PeerHitBytes+c.MissBytes {
		t.Errorf("bytes %d != local %d + peer %d + miss %d", c.Bytes, c.LocalHitBytes, c.PeerHitBytes, c.MissBytes)
	}
	t.Logf("placed %d completed %d lost %d", placed, c.Completed, c.Lost)
}
