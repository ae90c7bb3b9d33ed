package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/membership/membershiptest"
	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// waitRing waits until the scheduler sees n placeable cache nodes.
func waitRing(t *testing.T, c *schedulertest.Client, n int, timeout time.Duration) schedapi.RingStatus {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r, err := c.Ring(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		alive := 0
		for _, m := range r.Members {
			if m.Role == "cache" && m.State == "alive" {
				alive++
			}
		}
		if alive == n {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("scheduler sees %d alive cache nodes after %v, want %d: %+v", alive, timeout, n, r.Members)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestGossipNodeCrash runs the scheduler as a gossip observer next to
// three in-process cache-node members: it sees them, places on them, and
// when one crashes (Shutdown: no goodbye) its running tasks are reported
// lost and new tasks avoid it within 5 s.
func TestGossipNodeCrash(t *testing.T) {
	metas := []membership.NodeMeta{membershiptest.CacheNode("n1"), membershiptest.CacheNode("n2"), membershiptest.CacheNode("n3")}
	metas[2].Rack = "r2"
	ms := membershiptest.Start(t, metas...)
	s := schedulertest.Start(t, scheduler.Config{Join: []string{ms[0].GossipAddr()}, MaxQueueWait: time.Second})
	c := schedulertest.NewClient(s.HTTPAddr())
	r := waitRing(t, c, 3, 5*time.Second)
	if r.Epoch == 0 || r.BlockSize != membership.DefaultBlockSize {
		t.Errorf("ring epoch %x block size %d", r.Epoch, r.BlockSize)
	}
	ctx := context.Background()
	placed := placeAllNow(t, c, "j", 12) // 3 nodes x 4 slots
	onN2 := 0
	for _, p := range placed {
		if p.Node == "n2" {
			onN2++
		}
	}
	if onN2 != 4 {
		t.Fatalf("%d tasks on n2, want 4 (all slots used)", onN2)
	}
	killed := time.Now()
	if err := ms[1].Shutdown(); err != nil {
		t.Fatal(err)
	}
	// Lost within 5 s.
	var lostAfter time.Duration
	for {
		cnt, err := c.Counters(ctx, "j")
		if err != nil {
			t.Fatal(err)
		}
		if cnt.Lost == 4 {
			lostAfter = time.Since(killed)
			break
		}
		if time.Since(killed) > 5*time.Second {
			t.Fatalf("lost = %d 5 s after the crash, want 4", cnt.Lost)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// New tasks go to the freed slots of the survivors only: complete n1's
	// and n3's tasks, then place 8 more.
	var done []schedapi.CompleteTask
	for _, p := range placed {
		if p.Node != "n2" {
			done = append(done, schedapi.CompleteTask{Task: p.Task, LocalHitBytes: 1})
		}
	}
	if _, err := c.CompleteBatch(ctx, schedapi.CompleteBatchRequest{Job: "j", Tasks: done}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		p, err := c.Place(ctx, schedapi.PlaceRequest{Job: "k", Task: fmt.Sprint(i), Split: split(fmt.Sprint("s3://bkt/p", i)), WaitMS: -1})
		if err != nil {
			t.Fatalf("place %d after the crash: %v", i, err)
		}
		if p.Node == "n2" {
			t.Errorf("task %d placed on the crashed n2", i)
		}
	}
	t.Logf("n2 crashed: its 4 running tasks reported lost after %v", lostAfter)
}
