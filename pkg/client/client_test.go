package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

const testURI = "s3://bkt/data.bin"

func testData(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed+1))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

type env struct {
	store *origintest.MemStore
	node  *testNode
	data  []byte
	info  origin.Info
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{store: origintest.NewMemStore(), data: testData(10_000, 1)}
	e.info = e.store.Put(testURI, e.data)
	e.node = startTestNode(t, e.store)
	return e
}

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestReadRange(t *testing.T) {
	e := newEnv(t)
	c := newClient(t, Config{})
	tests := []struct {
		off, length int64
		want        []byte
	}{
		{0, 10_000, e.data},
		{0, 1, e.data[:1]},
		{1234, 5000, e.data[1234:6234]},
		{9000, 5000, e.data[9000:]}, // truncated at the end
		{10_000, 5, nil},            // at the end: nothing
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		sum, err := c.ReadRange(context.Background(), e.node.addr, testURI, tt.off, tt.length, &buf)
		if err != nil {
			t.Fatalf("ReadRange(%d, %d): %v", tt.off, tt.length, err)
		}
		if !bytes.Equal(buf.Bytes(), tt.want) {
			t.Fatalf("ReadRange(%d, %d): %d bytes, want %d", tt.off, tt.length, buf.Len(), len(tt.want))
		}
		if sum.Bytes != int64(len(tt.want)) || sum.LocalHitBytes != sum.Bytes || sum.NodeID != "test-node" || sum.Version != e.info.Version {
			t.Fatalf("summary %+v", sum)
		}
	}
	var buf bytes.Buffer
	sum, err := c.ReadSplit(context.Background(), e.node.addr, Split{URI: testURI, Offset: 10, Length: 20}, &buf)
	if err != nil || !bytes.Equal(buf.Bytes(), e.data[10:30]) || sum.Bytes != 20 {
		t.Fatalf("ReadSplit: %v, %d bytes", err, buf.Len())
	}
}

func TestReadRangeErrors(t *testing.T) {
	e := newEnv(t)
	counting := origintest.NewMemStore() // the fallback must not be asked
	c := newClient(t, Config{Origin: counting})
	tests := []struct {
		uri         string
		off, length int64
		want        error
	}{
		{"s3://bkt/missing", 0, 10, origin.ErrNotFound},
		{"", 0, 10, readpath.ErrInvalidRequest},
		{testURI, -1, 10, readpath.ErrInvalidRequest},
		{testURI, 0, 0, readpath.ErrInvalidRequest},
	}
	for _, tt := range tests {
		_, err := c.ReadRange(context.Background(), e.node.addr, tt.uri, tt.off, tt.length, io.Discard)
		if !errors.Is(err, tt.want) {
			t.Errorf("ReadRange(%q, %d, %d) error %v, want %v", tt.uri, tt.off, tt.length, err, tt.want)
		}
	}
	// Offset past the end: the node says OUT_OF_RANGE (a Stat-free client).
	c2 := newClient(t, Config{})
	if _, err := c2.ReadRange(context.Background(), e.node.addr, testURI, 10_001, 10, io.Discard); !errors.Is(err, cache.ErrOutOfRange) {
		t.Errorf("past the end: %v, want cache.ErrOutOfRange", err)
	}
	if st, rd, _, _ := counting.Counts(); st != 0 || rd != 0 {
		t.Errorf("the origin was asked (%d stats, %d reads) for errors that are about the object", st, rd)
	}
}

// TestFallback: every way a node can fail mid-stream ends with the exact
// bytes of the range, the rest read from the origin.
func TestFallback(t *testing.T) {
	faults := map[string]func(n *testNode){
		"unavailable": func(n *testNode) { n.failCode = codes.Unavailable },
		"internal":    func(n *testNode) { n.failCode = codes.Internal },
		"no summary":  func(n *testNode) { n.noSummary = true },
		"stall":       func(n *testNode) { n.stall = true },
		"bad offset":  func(n *testNode) { n.badOffset = true },
	}
	for name, fault := range faults {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.node.set(func(n *testNode) { n.failAfter = 3000; fault(n) })
			c := newClient(t, Config{Origin: e.store, IdleTimeout: 200 * time.Millisecond})
			var buf bytes.Buffer
			sum, err := c.ReadRange(context.Background(), e.node.addr, testURI, 500, 8000, &buf)
			if err != nil {
				t.Fatalf("ReadRange: %v", err)
			}
			if !bytes.Equal(buf.Bytes(), e.data[500:8500]) {
				t.Fatalf("got %d bytes; not the range's bytes", buf.Len())
			}
			if err := sum.Check(); err != nil {
				t.Fatal(err)
			}
			if sum.Bytes != 8000 || sum.OriginBytes != 8000 || sum.Misses[readpath.OwnerUnavailable].Bytes != 8000 || sum.NodeID != "" {
				t.Fatalf("summary %+v: want all 8000 bytes as origin/owner_unavailable (no node summary vouched for any)", sum)
			}
			st := c.Stats()
			if st.Fallbacks != 1 || st.NodeFailures != 1 || st.FallbackBytes != 5000 {
				t.Fatalf("stats %+v, want 1 fallback of 5000 bytes", st)
			}
		})
	}
}

func TestNodeDown(t *testing.T) {
	e := newEnv(t)
	addr := deadAddr(t)
	c := newClient(t, Config{Origin: e.store})
	var buf bytes.Buffer
	sum, err := c.ReadRange(context.Background(), addr, testURI, 100, 200, &buf)
	if err != nil || !bytes.Equal(buf.Bytes(), e.data[100:300]) {
		t.Fatalf("read with the node down: %v, %d bytes", err, buf.Len())
	}
	if sum.OriginBytes != 200 || sum.Misses[readpath.OwnerUnavailable].Bytes != 200 || sum.Version != e.info.Version {
		t.Fatalf("summary %+v", sum)
	}
	st, err := c.Stat(context.Background(), addr, testURI)
	if err != nil || !st.FromOrigin || st.Size != 10_000 || st.Version != e.info.Version {
		t.Fatalf("Stat with the node down: %+v, %v", st, err)
	}

	// Without an origin: ErrNodeUnavailable.
	c2 := newClient(t, Config{})
	if _, err := c2.ReadRange(context.Background(), addr, testURI, 0, 10, io.Discard); !errors.Is(err, ErrNodeUnavailable) {
		t.Fatalf("no origin, node down: %v, want ErrNodeUnavailable", err)
	}
	if _, err := c2.Stat(context.Background(), addr, testURI); !errors.Is(err, ErrNodeUnavailable) {
		t.Fatalf("no origin, node down, Stat: %v, want ErrNodeUnavailable", err)
	}
	e.node.set(func(n *testNode) { n.failAfter = 10; n.failCode = codes.Unavailable })
	var b2 bytes.Buffer
	if _, err := c2.ReadRange(context.Background(), e.node.addr, testURI, 0, 100, &b2); !errors.Is(err, ErrNodeUnavailable) {
		t.Fatalf("no origin, node fails mid-stream: %v, want ErrNodeUnavailable", err)
	}
	if !bytes.Equal(b2.Bytes(), e.data[:b2.Len()]) {
		t.Fatalf("the partial output is not a prefix of the range")
	}
}

// TestFallbackPinsVersion: the object is overwritten while the node
// streams it, and then the node fails. The fallback must not append bytes
// of the new version: the read fails instead, with a correct prefix.
func TestFallbackPinsVersion(t *testing.T) {
	e := newEnv(t)
	e.node.set(func(n *testNode) {
		n.failAfter = 4000
		n.failCode = codes.Unavailable
		n.onFail = func() { e.store.Put(testURI, testData(10_000, 2)) }
	})
	c := newClient(t, Config{Origin: e.store})
	var buf bytes.Buffer
	_, err := c.ReadRange(context.Background(), e.node.addr, testURI, 0, 10_000, &buf)
	if !errors.Is(err, origin.ErrVersionChanged) {
		t.Fatalf("error %v, want origin.ErrVersionChanged", err)
	}
	if buf.Len() != 4000 || !bytes.Equal(buf.Bytes(), e.data[:4000]) {
		t.Fatalf("wrote %d bytes; want exactly the 4000 old-version bytes the node sent", buf.Len())
	}
}

// TestReadPinnedByCaller: Read with ExpectedVersion fails on a changed
// object, at the node (FAILED_PRECONDITION) without asking the origin.
func TestReadPinnedByCaller(t *testing.T) {
	e := newEnv(t)
	c := newClient(t, Config{Origin: e.store})
	_, err := c.Read(context.Background(), e.node.addr, readpath.Request{URI: testURI, Offset: 0, Length: 10, ExpectedVersion: "old"}, io.Discard)
	if !errors.Is(err, origin.ErrVersionChanged) || !errors.Is(err, cache.ErrVersionChanged) {
		t.Fatalf("error %v, want ErrVersionChanged", err)
	}
	if c.Stats().Fallbacks != 0 {
		t.Fatalf("a version change fell back to the origin")
	}
	// And with the node down, the fallback checks the version itself.
	_, err = c.Read(context.Background(), deadAddr(t), readpath.Request{URI: testURI, Offset: 0, Length: 10, ExpectedVersion: "old"}, io.Discard)
	if !errors.Is(err, origin.ErrVersionChanged) {
		t.Fatalf("fallback error %v, want ErrVersionChanged", err)
	}
	var buf bytes.Buffer
	_, err = c.Read(context.Background(), deadAddr(t), readpath.Request{URI: testURI, Offset: 5, Length: 10, ExpectedVersion: e.info.Version}, &buf)
	if err != nil || !bytes.Equal(buf.Bytes(), e.data[5:15]) {
		t.Fatalf("pinned fallback: %v", err)
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > 2500 {
		return 0, errors.New("disk full")
	}
	w.n += len(p)
	return len(p), nil
}

func TestWriterErrorIsNotANodeFailure(t *testing.T) {
	e := newEnv(t)
	c := newClient(t, Config{Origin: e.store})
	_, err := c.ReadRange(context.Background(), e.node.addr, testURI, 0, 10_000, &failWriter{})
	if err == nil || c.Stats().Fallbacks != 0 || c.Stats().NodeFailures != 0 {
		t.Fatalf("err %v stats %+v: want the writer's error and no fallback", err, c.Stats())
	}
}

func TestCallerCancel(t *testing.T) {
	e := newEnv(t)
	e.node.set(func(n *testNode) { n.failAfter = 1000; n.stall = true })
	c := newClient(t, Config{Origin: e.store})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.ReadRange(ctx, e.node.addr, testURI, 0, 10_000, io.Discard)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the caller's deadline", err)
	}
	if c.Stats().Fallbacks != 0 {
		t.Fatalf("fell back after the caller gave up")
	}
}

func TestStat(t *testing.T) {
	e := newEnv(t)
	e.node.set(func(n *testNode) {
		n.rowGroups = []*cachev1.RowGroup{{Index: 0, Offset: 4, Length: 100, NumRows: 10,
			Columns: []*cachev1.ColumnChunk{{Path: "a.b", Offset: 4, Length: 100}}}}
	})
	c := newClient(t, Config{})
	st, err := c.Stat(context.Background(), e.node.addr, testURI)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size != 10_000 || st.Version != e.info.Version || !st.ModTime.Equal(e.info.ModTime) || st.FromOrigin {
		t.Fatalf("Stat %+v, want %+v", st, e.info)
	}
	if !st.Parquet || len(st.RowGroups) != 1 || st.RowGroups[0].Columns[0].Path != "a.b" || st.RowGroups[0].Length != 100 {
		t.Fatalf("row groups %+v", st.RowGroups)
	}
	if _, err := c.Stat(context.Background(), e.node.addr, "s3://bkt/missing"); !errors.Is(err, origin.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	e.node.set(func(n *testNode) { n.statCode = codes.Unavailable })
	c2 := newClient(t, Config{Origin: e.store})
	st, err = c2.Stat(context.Background(), e.node.addr, testURI)
	if err != nil || !st.FromOrigin || st.Version != e.info.Version {
		t.Fatalf("Stat fallback: %+v %v", st, err)
	}
}

func TestReaderAt(t *testing.T) {
	e := newEnv(t)
	c := newClient(t, Config{Origin: e.store, ConnsPerNode: 3})
	r, err := c.Open(context.Background(), e.node.addr, testURI)
	if err != nil {
		t.Fatal(err)
	}
	if r.Size() != 10_000 {
		t.Fatalf("Size %d", r.Size())
	}
	// Random ReadAt calls, concurrently, against the byte slice.
	var wg sync.WaitGroup
	var total sync.Map
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			var n int64
			for range 50 {
				off := rng.Int64N(10_500)
				p := make([]byte, rng.IntN(3000))
				k, err := r.ReadAt(p, off)
				want := e.data[min(off, 10_000):min(off+int64(len(p)), 10_000)]
				if !bytes.Equal(p[:k], want) {
					t.Errorf("ReadAt(%d, %d): %d bytes, not the object's", len(p), off, k)
					return
				}
				short := k < len(p)
				if short != (err == io.EOF) && !(len(p) == 0 && err == nil) {
					t.Errorf("ReadAt(%d, %d) = %d, %v: io.ReaderAt's EOF rule broken", len(p), off, k, err)
					return
				}
				n += int64(k)
			}
			total.Store(g, n)
		}()
	}
	wg.Wait()
	var want int64
	total.Range(func(_, v any) bool { want += v.(int64); return true })
	sum := r.Summary()
	if sum.Bytes != want || sum.LocalHitBytes != want || sum.NodeID != "test-node" || sum.Version != e.info.Version {
		t.Fatalf("summary %+v, want %d local bytes", sum, want)
	}
	// Seek and Read.
	if pos, err := r.Seek(-10, io.SeekEnd); err != nil || pos != 9990 {
		t.Fatalf("Seek: %d %v", pos, err)
	}
	rest, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(rest, e.data[9990:]) {
		t.Fatalf("Read after Seek: %d bytes, %v", len(rest), err)
	}
	// The object changes: the pinned reader refuses to mix.
	e.store.Put(testURI, testData(10_000, 3))
	if _, err := r.ReadAt(make([]byte, 10), 0); !errors.Is(err, origin.ErrVersionChanged) {
		t.Fatalf("ReadAt after overwrite: %v, want ErrVersionChanged", err)
	}
}

func TestClosed(t *testing.T) {
	e := newEnv(t)
	c, err := New(Config{Origin: e.store})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := c.ReadRange(context.Background(), e.node.addr, testURI, 0, 1, io.Discard); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, cfg := range []Config{{DialTimeout: -1}, {ConnsPerNode: -1}, {IdleTimeout: -time.Second}} {
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v): %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

// TestFallbackProperty: random ranges and random failure points; the output
// is always exactly the range and the summary always adds up.
func TestFallbackProperty(t *testing.T) {
	e := newEnv(t)
	c := newClient(t, Config{Origin: e.store, IdleTimeout: 200 * time.Millisecond, FallbackChunkSize: 777})
	rng := rand.New(rand.NewPCG(5, 5))
	codesList := []codes.Code{codes.Unavailable, codes.Internal, codes.Unknown, codes.ResourceExhausted}
	for i := range 60 {
		off := rng.Int64N(10_000)
		length := 1 + rng.Int64N(12_000)
		e.node.set(func(n *testNode) {
			n.failAfter = rng.Int64N(length + 1)
			n.failCode = codesList[rng.IntN(len(codesList))]
			n.noSummary = rng.IntN(4) == 0
		})
		var buf bytes.Buffer
		sum, err := c.ReadRange(context.Background(), e.node.addr, testURI, off, length, &buf)
		want := e.data[off:min(off+length, 10_000)]
		if err != nil || !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("case %d (off %d len %d): err %v, %d bytes, want %d", i, off, length, err, buf.Len(), len(want))
		}
		if err := sum.Check(); err != nil || sum.Bytes != int64(len(want)) {
			t.Fatalf("case %d: summary %+v: %v", i, sum, err)
		}
	}
}

// TestWrongVersionSummary: a node that reports another version than the
// read was pinned to has sent untrustworthy bytes: the read fails, with no
// fallback that would pretend otherwise.
func TestWrongVersionSummary(t *testing.T) {
	e := newEnv(t)
	e.node.set(func(n *testNode) { n.sumVersion = "someother" })
	c := newClient(t, Config{Origin: e.store})
	_, err := c.ReadRange(context.Background(), e.node.addr, testURI, 0, 100, io.Discard)
	if !errors.Is(err, ErrProtocol) || !errors.Is(err, origin.ErrVersionChanged) {
		t.Fatalf("error %v, want ErrProtocol and ErrVersionChanged", err)
	}
	if c.Stats().Fallbacks != 0 {
		t.Fatalf("fell back after a wrong-version stream")
	}
	if _, err := c.ReadRange(context.Background(), "", testURI, 0, 1, io.Discard); !errors.Is(err, readpath.ErrInvalidRequest) {
		t.Fatalf("empty node address: %v", err)
	}
}
