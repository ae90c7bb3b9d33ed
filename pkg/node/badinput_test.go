package node_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/node"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// TestVersityNotFound: unknown buckets and keys are NOT_FOUND for reads
// and stats; file:// traversal is refused.
func TestVersityNotFound(t *testing.T) {
	gw := origintest.StartVersityGW(t)
	gw.Put(t, "present", []byte("here"))
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("file"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := nodetest.Start(t, nodetest.Options{N: 1, VersityGW: gw, FileRoot: root})
	cl := c.Client(t, 0)
	ctx := context.Background()
	for _, tc := range []struct {
		uri  string
		code []codes.Code
	}{
		{gw.URI("absent"), []codes.Code{codes.NotFound}},
		{"s3://no-such-bucket-here/key", []codes.Code{codes.NotFound}},
		{"file://" + root + "/absent", []codes.Code{codes.NotFound}},
		{"file://" + root + "/../../etc/passwd", []codes.Code{codes.PermissionDenied, codes.InvalidArgument}},
		{"file://" + root + "/%2E%2E/%2E%2E/etc/passwd", []codes.Code{codes.PermissionDenied, codes.InvalidArgument}},
		{"file:///etc/passwd", []codes.Code{codes.PermissionDenied}},
	} {
		_, _, err := nodetest.ReadRange(ctx, cl, &cachev1.ReadRangeRequest{Uri: tc.uri, Offset: 0, Length: 10})
		_, serr := cl.Stat(ctx, &cachev1.StatRequest{Uri: tc.uri})
		for _, e := range []error{err, serr} {
			ok := false
			for _, c := range tc.code {
				ok = ok || status.Code(e) == c
			}
			if !ok {
				t.Errorf("%s: %v, want %v", tc.uri, e, tc.code)
			}
		}
	}
	got, _ := rangeRead(t, cl, "file://"+root+"/f.txt", 0, 100)
	if string(got) != "file" {
		t.Fatalf("file read: %q", got)
	}
}

// TestHugeRangeBoundedMemory streams a large sparse file through a node
// whose cache is far smaller, sampling the heap: memory stays bounded by
// the cache's read window and gRPC's flow control, not the range.
func TestHugeRangeBoundedMemory(t *testing.T) {
	size := int64(1 << 30)
	if raceEnabled || testing.Short() {
		size = 128 << 20
	}
	root := t.TempDir()
	path := filepath.Join(root, "sparse.bin")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	files, err := origin.NewFileStore(origin.FileConfig{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: files, PageSize: 1 << 20, BlockSize: 128 << 20, MemoryBytes: 32 << 20})
	cl := c.Client(t, 0)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	peak, livePeak := base, base
	var chunks, seen, next int64
	var nonzero bool
	s, err := nodetest.StreamRange(context.Background(), cl, &cachev1.ReadRangeRequest{Uri: "file://" + path, Offset: 0, Length: size},
		func(p []byte) error {
			chunks++
			seen += int64(len(p))
			if p[0] != 0 || p[len(p)-1] != 0 {
				nonzero = true
			}
			if seen >= next {
				next += 16 << 20
				// Heap in use (garbage included), then what is live.
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
				runtime.GC()
				runtime.ReadMemStats(&ms)
				livePeak = max(livePeak, ms.HeapInuse)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if s.Bytes != size || nonzero {
		t.Fatalf("read %d bytes of %d (nonzero data: %v)", s.Bytes, size, nonzero)
	}
	growth, live := int64(peak)-int64(base), int64(livePeak)-int64(base)
	t.Logf("streamed %d MiB in %d pieces; heap in use grew by at most %d MiB (%d MiB live after GC)",
		size>>20, chunks, growth>>20, live>>20)
	// The bound: the RAM cache filling (32 MiB), its fetch window (4 x 8
	// MiB), gRPC's flow-control windows (16 MiB per side) and chunk
	// buffers; nothing that scales with the range.
	if live > 96<<20 {
		t.Fatalf("live heap grew by %d MiB while streaming %d MiB: not bounded", live>>20, size>>20)
	}
}

// slowStore delays reads (honouring the context) and can fail them after
// delivering part of the bytes.
type slowStore struct {
	origin.Store
	delay    atomic.Int64 // nanoseconds
	failHalf atomic.Bool
}

func (s *slowStore) ReadAt(ctx context.Context, uri, version string, p []byte, off int64) (int, error) {
	if d := time.Duration(s.delay.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if s.failHalf.Load() && len(p) > 1 {
		n, _ := s.Store.ReadAt(ctx, uri, version, p[:len(p)/2], off)
		return n, fmt.Errorf("%w: connection reset mid-body", origin.ErrUnavailable)
	}
	return s.Store.ReadAt(ctx, uri, version, p, off)
}

// TestSlowAndFailingOrigin: a slow origin gives the caller's deadline
// error, a failing one UNAVAILABLE, and neither leaves anything cached:
// the next read misses every page (cold) and returns the right bytes.
func TestSlowAndFailingOrigin(t *testing.T) {
	mem := origintest.NewMemStore()
	const size = 2 << 20
	data := randBytes(9, size)
	uri := "s3://bucket/slow.bin"
	mem.Put(uri, data)
	slow := &slowStore{Store: mem}
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: slow})
	n := c.Nodes[0]
	cl := c.Client(t, 0)

	slow.delay.Store(int64(5 * time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, _, err := nodetest.ReadRange(ctx, cl, &cachev1.ReadRangeRequest{Uri: uri, Offset: 0, Length: size})
	cancel()
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("slow origin: %v, want DEADLINE_EXCEEDED", err)
	}
	slow.delay.Store(0)
	slow.failHalf.Store(true)
	_, _, err = nodetest.ReadRange(context.Background(), cl, &cachev1.ReadRangeRequest{Uri: uri, Offset: 0, Length: size})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("failing origin: %v, want UNAVAILABLE", err)
	}
	if p := n.CacheStats().ResidentPages; p != 0 {
		t.Fatalf("%d pages cached from failed reads", p)
	}
	slow.failHalf.Store(false)
	got, s := rangeRead(t, cl, uri, 0, size)
	if string(got) != string(data) {
		t.Fatal("bytes differ")
	}
	if s.LocalHitBytes != 0 || s.Misses[readpath.Cold].Bytes != size {
		t.Fatalf("read after the failures: %+v, want all cold misses", s)
	}
}

// TestS3OriginTimeout: an S3 endpoint that accepts connections and never
// answers gives DEADLINE_EXCEEDED with the origin's timeout in the message,
// within the configured bound.
func TestS3OriginTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			defer conn.Close() // hold it open, say nothing
		}
	}()
	s3s, err := origin.NewS3Store(context.Background(), origin.S3Config{
		Endpoint: "http://" + l.Addr().String(), Region: "us-east-1", PathStyle: true,
		AccessKeyID: "k", SecretAccessKey: "s", MaxAttempts: 2, BaseBackoff: time.Millisecond,
		Timeout: 800 * time.Millisecond, ResponseHeaderTimeout: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: s3s})
	start := time.Now()
	_, _, err = nodetest.ReadRange(context.Background(), c.Client(t, 0), &cachev1.ReadRangeRequest{Uri: "s3://bucket/k", Offset: 0, Length: 10})
	took := time.Since(start)
	if status.Code(err) != codes.DeadlineExceeded || took > 5*time.Second {
		t.Fatalf("hanging S3: %v after %v, want DEADLINE_EXCEEDED within the origin timeout", err, took)
	}
	var n *node.Node = c.Nodes[0]
	_, serr := n.Stat(context.Background(), "s3://bucket/k")
	if !errors.Is(serr, origin.ErrTimeout) {
		t.Fatalf("Stat: %v, want origin.ErrTimeout", serr)
	}
	t.Logf("hanging S3 endpoint: %v after %v", err, took.Round(time.Millisecond))
}
