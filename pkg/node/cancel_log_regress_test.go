package node

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/internal/logtest"
	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// TestClientGoneLogsNoWarning: a client that cancels a ReadRange while the
// node waits for gRPC to send a chunk it aliased from the cache (the
// stream's flow-control window is full) is an ordinary hang-up: gRPC
// releases the chunk when the stream ends, and nothing is logged at Warn.
// Was: every such hang-up logged "gRPC kept a chunk past the stream's end"
// at Warn, although gRPC had released the chunk at once (found by a
// review: a gateway client that gave up mid-object left one on its peer).
func TestClientGoneLogsNoWarning(t *testing.T) {
	rec := &logtest.Recorder{}
	c := newTCluster(t, tclusterOpts{n: 1, repl: 1, memBytes: 64 << 20, mutate: func(_ int, cfg *Config) {
		cfg.Logger = slog.New(rec)
	}})
	n := c.nodes[0]
	const size = 48 << 20 // more than the stream's flow-control window
	uri := "s3://bkt/cancel-log"
	c.mem.Put(uri, randBytes(79, size))
	mustRead(t, n, readpath.Request{URI: uri, Offset: 0, Length: size}) // warm: the stream runs from aliased pages
	client := dial(t, n.GRPCAddr())
	for range 5 {
		ctx, cancel := context.WithCancel(context.Background())
		stream, err := client.ReadRange(ctx, &cachev1.ReadRangeRequest{Uri: uri, Offset: 0, Length: size})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Recv(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // the node fills the window and waits
		cancel()
	}
	deadline := time.Now().Add(aliasGrace + 3*time.Second)
	for n.Inflight() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after the clients left: %d reads in flight", n.Inflight())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Under the race detector on a loaded machine gRPC now and then keeps
	// one chunk past aliasGrace (seen once in about ten runs): the warning
	// is then right. Before the fix every hang-up warned.
	var warned []string
	for _, m := range rec.AtLeast(slog.LevelWarn) {
		if strings.Contains(m, "chunk") {
			warned = append(warned, m)
		}
	}
	if len(warned) > 1 {
		t.Errorf("%d of 5 hang-ups logged at Warn (%q), want at most 1", len(warned), warned)
	}
}
