package scheduler_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// TestShutdownWithIdleConnections: open client connections that carry no
// call do not hold Shutdown: neither a TCP connection that never sent a
// request (net/http's Shutdown alone waits 5 s for those), nor a
// keep-alive connection after its call, nor an idle gRPC connection. A
// call in flight is still answered before the listeners close.
func TestShutdownWithIdleConnections(t *testing.T) {
	views := threeNodes(t)
	s, err := scheduler.New(scheduler.Config{
		NodeID: "shutdown-test", Membership: views, HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0",
		Logger: schedulertest.Logger("shutdown-test"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}

	// A connection that never sends a request.
	raw, err := net.Dial("tcp", s.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// A keep-alive connection, idle after one call.
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://" + s.HTTPAddr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// An idle gRPC connection, after one call.
	cc, err := grpc.NewClient("passthrough:///"+s.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if _, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	// A call in flight: a place that waits for a slot (every slot taken).
	c := schedulertest.NewClient(s.HTTPAddr())
	for i := range 6 {
		if _, err := c.Place(context.Background(), schedapi.PlaceRequest{Job: "j", Task: "busy-" + string(rune('a'+i)), Split: split("s3://bkt/k"), WaitMS: -1}); err != nil {
			t.Fatal(err)
		}
	}
	waiting := make(chan error, 1)
	go func() {
		_, err := c.Place(context.Background(), schedapi.PlaceRequest{Job: "j", Task: "waits", Split: split("s3://bkt/k"), WaitMS: -1})
		waiting <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		cnt, err := c.Counters(context.Background(), "j")
		if err == nil && cnt.Queued == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the waiting place never queued: %+v %v", cnt, err)
		}
		time.Sleep(10 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	took := time.Since(began)
	t.Logf("Shutdown took %v with idle HTTP, keep-alive and gRPC connections open", took.Round(time.Millisecond))
	if took > time.Second {
		t.Errorf("Shutdown took %v with idle connections open, want well under 5 s (under 1 s)", took)
	}
	select {
	case err := <-waiting:
		if statusOf(err) != http.StatusServiceUnavailable {
			t.Errorf("the place in flight got %v, want its 503 answer (shutting down)", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the place in flight was never answered")
	}
}
