package client

// Regression and edge-case tests from an adversarial review of the client
// (2026-11-30). Uses the package's own testNode and MemStore environment
// (testnode_test.go, client_test.go).

import (
	"bytes"
	"context"
	"errors"
	"github.com/locuscache/locus/internal/testproc"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// shortNode is a testNode whose ReadRange sends the first `send` bytes of
// the range and then a summary that vouches for exactly those bytes but
// reports ObjectSize as objSize (0: a node that leaves the field unset).
type shortNode struct {
	*testNode
	send, objSize int64
}

func (n *shortNode) ReadRange(req *cachev1.ReadRangeRequest, stream grpc.ServerStreamingServer[cachev1.ReadRangeResponse]) error {
	info, err := n.store.Stat(stream.Context(), req.GetUri())
	if err != nil {
		return grpcErr(err)
	}
	k := min(n.send, req.GetLength())
	buf := make([]byte, k)
	m, _ := n.store.ReadAt(stream.Context(), info.URI, info.Version, buf, req.GetOffset())
	if err := stream.Send(&cachev1.ReadRangeResponse{Msg: &cachev1.ReadRangeResponse_Chunk{
		Chunk: &cachev1.Chunk{Offset: req.GetOffset(), Data: buf[:m]}}}); err != nil {
		return err
	}
	sum := readpath.Summary{Bytes: int64(m), LocalHitBytes: int64(m), Version: info.Version, ObjectSize: n.objSize, NodeID: n.id}
	return stream.Send(&cachev1.ReadRangeResponse{Msg: &cachev1.ReadRangeResponse_Summary{Summary: sum.ToProto()}})
}

func startShortNode(t *testing.T, e *env, send, objSize int64) string {
	t.Helper()
	sn := &shortNode{testNode: &testNode{store: e.store, chunk: 1000, id: "short-node"}, send: send, objSize: objSize}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	cachev1.RegisterCacheServiceServer(srv, sn)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return l.Addr().String()
}

// TestShortStreamZeroObjectSize is a regression test (it failed before its fix).
//
// What was wrong: a node streams 500 bytes of a 10,000-byte range of a
// 10,000-byte object and ends with a summary that counts those 500 bytes
// but says ObjectSize 0 (a field the node left unset, or a lie). The
// client returns success with 500 bytes: a silently truncated read, with
// the rest of the range skipped. The client even knows the object's size
// (it Stat-ed and pinned the read because an Origin is configured), and a
// summary whose object is smaller than the bytes the stream delivered
// contradicts itself.
//
// Expected: the stream counts as a protocol failure (ErrProtocol) and,
// with an Origin, the rest of the range comes from the origin, so the
// caller gets all 10,000 correct bytes (without an Origin: an error).
//
// Root cause (before the fix): pkg/client/cachenode.go:208 (streamRange) accepts an early
// end whenever `sum.ObjectSize > *pos` is false, which ObjectSize 0 (or
// any ObjectSize <= pos) satisfies; read (cachenode.go:85-93) never passes
// the size it learned from Stat to streamRange.
//
// Fix (applied): when the stream stops before the range's end, require
// sum.ObjectSize == *pos (the object ends exactly there), and when the
// read is pinned with a known size (size >= 0), require sum.ObjectSize ==
// size; anything else is ErrProtocol.
func TestShortStreamZeroObjectSize(t *testing.T) {
	e := newEnv(t)
	addr := startShortNode(t, e, 500, 0)
	c := newClient(t, Config{Origin: e.store})
	var buf bytes.Buffer
	sum, err := c.ReadRange(context.Background(), addr, testURI, 0, 10_000, &buf)
	if err == nil && buf.Len() != 10_000 {
		t.Fatalf("ReadRange returned success with %d of 10000 bytes (summary %+v): a truncated read the caller cannot tell from a whole one", buf.Len(), sum)
	}
	if err != nil {
		t.Fatalf("ReadRange: %v; want the rest from the origin", err)
	}
	if !bytes.Equal(buf.Bytes(), e.data) {
		t.Fatal("bytes differ from the object's")
	}
}

// TestShortStreamHonestObjectSize: the same short stream whose
// summary names the object's true size is caught (ErrProtocol) and the
// rest comes from the origin: the check works when the node fills the
// field, which is why only the unset/lying case above is a bug.
func TestShortStreamHonestObjectSize(t *testing.T) {
	e := newEnv(t)
	addr := startShortNode(t, e, 500, 10_000)
	c := newClient(t, Config{Origin: e.store})
	var buf bytes.Buffer
	if _, err := c.ReadRange(context.Background(), addr, testURI, 0, 10_000, &buf); err != nil {
		t.Fatalf("ReadRange: %v", err)
	}
	if !bytes.Equal(buf.Bytes(), e.data) {
		t.Fatalf("got %d bytes, not the object's", buf.Len())
	}
	if st := c.Stats(); st.Fallbacks != 1 || st.FallbackBytes != 9500 {
		t.Fatalf("stats %+v, want one fallback of 9500 bytes", st)
	}
}

// TestStatsCountOneFallbackPerCall is a regression test (it failed before its fix).
//
// What was wrong: one ReadRange against a node that is down, with an
// Origin configured, counts 2 NodeFailures and 2 Fallbacks in
// Client.Stats, though Stats documents Fallbacks as "the number of calls
// answered (in part) by the origin" (client.go:69-73) and the caller made
// one call. A dashboard of fallbacks per read therefore shows twice the
// true rate whenever a node is down.
//
// Root cause (before the fix): read (pkg/client/cachenode.go:85) calls the exported Stat
// to pin the version, and Stat counts its own node failure and fallback
// (cachenode.go:341, 345); read then counts the stream's failure and
// fallback again (cachenode.go:111, 115).
//
// Fix (applied): pin through an internal stat that does not touch the
// counters (or tells read the node already failed, so read skips the
// stream attempt and counts the call once).
func TestStatsCountOneFallbackPerCall(t *testing.T) {
	e := newEnv(t)
	c := newClient(t, Config{Origin: e.store})
	var buf bytes.Buffer
	if _, err := c.ReadRange(context.Background(), deadAddr(t), testURI, 100, 200, &buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), e.data[100:300]) {
		t.Fatal("wrong bytes")
	}
	st := c.Stats()
	if st.Reads != 1 || st.Fallbacks != 1 || st.NodeFailures != 1 || st.FallbackBytes != 200 {
		t.Fatalf("one ReadRange with the node down: stats %+v; want Reads 1, NodeFailures 1, Fallbacks 1, FallbackBytes 200", st)
	}
}

// TestBlackholeNode: a node that accepts TCP and never speaks
// HTTP/2. With an Origin the read falls back within about DialTimeout and
// returns the right bytes; without one, the caller's deadline is honoured.
func TestBlackholeNode(t *testing.T) {
	e := newEnv(t)
	addr := testproc.Blackhole(t)

	c := newClient(t, Config{Origin: e.store, DialTimeout: 300 * time.Millisecond})
	start := time.Now()
	var buf bytes.Buffer
	if _, err := c.ReadRange(context.Background(), addr, testURI, 10, 5000, &buf); err != nil {
		t.Fatalf("ReadRange through a black hole with an Origin: %v", err)
	}
	if !bytes.Equal(buf.Bytes(), e.data[10:5010]) {
		t.Fatal("wrong bytes from the fallback")
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("took %v with DialTimeout 300ms", el)
	}

	c2 := newClient(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err := c2.ReadRange(ctx, addr, testURI, 0, 10, &bytes.Buffer{})
	if err == nil {
		t.Fatal("ReadRange through a black hole without an Origin succeeded")
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("returned after %v; the caller's deadline was 400ms (%v)", el, err)
	}
}

// TestReaderAtNeverMixesVersions: a ReaderAt is pinned at Open; the
// object is rewritten and the node then goes down. The fallback asks the
// origin for the pinned version and fails (ErrVersionChanged) rather than
// returning new bytes, while bytes read before the rewrite were the old
// version's.
func TestReaderAtNeverMixesVersions(t *testing.T) {
	e := newEnv(t)
	c := newClient(t, Config{Origin: e.store})
	r, err := c.Open(context.Background(), e.node.addr, testURI)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 1000)
	if n, err := r.ReadAt(p, 0); err != nil || n != 1000 || !bytes.Equal(p, e.data[:1000]) {
		t.Fatalf("first ReadAt: %d, %v", n, err)
	}
	e.store.Put(testURI, testData(10_000, 99))
	e.node.srv.Stop() // the node goes down: the next read falls back
	n, err := r.ReadAt(p, 5000)
	if !errors.Is(err, origin.ErrVersionChanged) {
		t.Fatalf("ReadAt after a rewrite with the node down: %d bytes, %v; want origin.ErrVersionChanged", n, err)
	}
	if n != 0 {
		t.Fatalf("ReadAt wrote %d bytes of the new version", n)
	}
}

// TestSchedulerNeverAnswers: a scheduler that accepts the request
// and never answers. Every call honours the caller's context (and, with
// a caller without a deadline, SchedulerConfig.Timeout).
func TestSchedulerNeverAnswers(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	sc, err := NewScheduler(SchedulerConfig{URL: srv.URL, Timeout: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	calls := map[string]func(ctx context.Context) error{
		"Place": func(ctx context.Context) error {
			_, err := sc.Place(ctx, "j", "t", Split{URI: "s3://b/k", Length: 10}, NoWait)
			return err
		},
		"PlaceBatch": func(ctx context.Context) error {
			_, err := sc.PlaceBatch(ctx, "j", []BatchTask{{Task: "t", Split: Split{URI: "s3://b/k", Length: 10}}}, NoWait)
			return err
		},
		"Complete": func(ctx context.Context) error { _, err := sc.Complete(ctx, "j", "t", CompleteInfo{}); return err },
		"Ring":     func(ctx context.Context) error { _, err := sc.Ring(ctx); return err },
	}
	for name, call := range calls {
		// The caller's deadline, shorter than Timeout.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		err := call(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
			t.Errorf("%s with a 100ms deadline: %v after %v", name, err, time.Since(start))
		}
		// No caller deadline: Timeout bounds it.
		start = time.Now()
		err = call(context.Background())
		if err == nil || time.Since(start) > 3*time.Second {
			t.Errorf("%s with Timeout 400ms: %v after %v", name, err, time.Since(start))
		}
	}
}
