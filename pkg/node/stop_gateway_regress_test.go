package node_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/locuscache/locus/pkg/gateway"
	"github.com/locuscache/locus/pkg/node"
	"github.com/locuscache/locus/pkg/origin/origintest"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// TestStoppingNodeRefusesGatewayRequests: once a stopping node refuses
// reads (after its drain), the S3 gateway takes no more requests, as gRPC
// does (its listener closes): a client sees a refused connection, which S3
// clients retry elsewhere, while a gRPC stream still in flight finishes.
// Was: the HTTP listener stayed open until every gRPC stream had ended,
// and each GET in between was answered 500 InternalError "node: stopped"
// (found by a review: a slow gRPC reader past --drain-timeout kept a
// stopping node answering 500 to every gateway client).
func TestStoppingNodeRefusesGatewayRequests(t *testing.T) {
	mem := origintest.NewMemStore()
	mem.Put("s3://bucket/big", randBytes(31, 4<<20))
	mem.Put("s3://bucket/small", []byte("0123456789"))
	cfg := baseConfig(t, mem)
	cfg.DrainTimeout = 200 * time.Millisecond
	cfg.Gateway = func(n *node.Node) (http.Handler, error) { return gateway.New(gateway.Config{Backend: n}) }
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	url := "http://" + n.HTTPAddr() + "/bucket/small"
	if s := httpStatus(t, url); s != 200 {
		t.Fatalf("GET before Stop: %d", s)
	}
	// A gRPC reader that takes one chunk and then reads no more: its
	// stream outlives the drain.
	cc, err := grpc.NewClient("passthrough:///"+n.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := cachev1.NewCacheServiceClient(cc).ReadRange(sctx, &cachev1.ReadRangeRequest{Uri: "s3://bucket/big", Length: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() {
		ctx, c := context.WithTimeout(context.Background(), 20*time.Second)
		defer c()
		stopped <- n.Stop(ctx)
	}()
	<-n.Done() // reads are refused from here on
	time.Sleep(100 * time.Millisecond)
	for range 3 {
		resp, err := http.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("GET while the node stops: %d %s; want a refused connection (or 503)", resp.StatusCode, body)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel() // the gRPC reader gives up: Stop can finish
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
}
