package node_test

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/locuscache/locus/internal/benchpair"
	"github.com/locuscache/locus/pkg/node"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin/origintest"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// benchSize is the range each benchmark iteration reads: 64 MiB, all of it
// cached on the node.
const benchSize = 64 << 20

// BenchmarkReadRange compares a gRPC ReadRange of cached data with a raw
// TCP loopback copy of the same bytes, in the same run (the goal is a ratio
// of at least 0.6). The node serves from its RAM cache; the TCP server
// writes from one in-memory buffer; both clients read into memory and drop
// the bytes.
//
//	go test -run '^$' -bench ReadRange -benchtime 20x ./pkg/node
//
// The paired sub-benchmark alternates both in each iteration and reports
// grpc/tcp, the ratio of their rates (the machine is shared: compare
// ratios, not absolute rates).
func BenchmarkReadRange(b *testing.B) {
	mem := origintest.NewMemStore()
	data := randBytes(10, benchSize)
	uri := "s3://bucket/bench.bin"
	mem.Put(uri, data)
	c := nodetest.Start(b, nodetest.Options{N: 1, Origin: mem, PageSize: 1 << 20, BlockSize: 128 << 20, MemoryBytes: 2 * benchSize})
	cl := c.Client(b, 0)
	ctx := context.Background()
	req := &cachev1.ReadRangeRequest{Uri: uri, Offset: 0, Length: benchSize}
	if s, err := nodetest.StreamRange(ctx, cl, req, func([]byte) error { return nil }); err != nil || s.Bytes != benchSize {
		b.Fatalf("warm-up: %v", err)
	}
	grpcRead := func(b *testing.B) {
		s, err := nodetest.StreamRange(ctx, cl, req, func([]byte) error { return nil })
		if err != nil || s.LocalHitBytes != benchSize {
			b.Fatalf("read: %v %+v", err, s)
		}
	}
	addr := tcpServer(b, data)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	buf := make([]byte, 1<<20)
	tcpRead := func(b *testing.B) {
		if _, err := conn.Write([]byte{1}); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < benchSize; {
			n, err := conn.Read(buf[:min(len(buf), benchSize-got)])
			if err != nil {
				b.Fatal(err)
			}
			got += n
		}
	}
	b.Run("grpc", func(b *testing.B) {
		b.SetBytes(benchSize)
		b.ReportAllocs()
		for b.Loop() {
			grpcRead(b)
		}
	})
	b.Run("tcp", func(b *testing.B) {
		b.SetBytes(benchSize)
		b.ReportAllocs()
		for b.Loop() {
			tcpRead(b)
		}
	})
	// paired alternates the two in every iteration, so load from other
	// processes hits both alike, and reports the ratio of their rates.
	b.Run("paired", func(b *testing.B) {
		benchpair.Rates(b, benchSize, "tcp", tcpRead, "grpc", grpcRead)
	})
}

// tcpServer serves data whole, once per byte received, on loopback.
func tcpServer(b *testing.B, data []byte) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				one := make([]byte, 1)
				for {
					if _, err := io.ReadFull(conn, one); err != nil {
						return
					}
					if _, err := conn.Write(data); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// BenchmarkReadRangeVerify measures what checking every disk page's
// checksum (--cache-verify=always) costs a gRPC ReadRange of cached data,
// against the default (first read after a restart), on two one-node
// clusters with disk caches and no RAM tier, in the same run: the paired
// sub-benchmark alternates them and reports always/first-read, the ratio
// of their rates.
//
//	go test -run '^$' -bench ReadRangeVerify -benchtime 20x ./pkg/node
func BenchmarkReadRangeVerify(b *testing.B) {
	mem := origintest.NewMemStore()
	uri := "s3://bucket/bench-verify.bin"
	mem.Put(uri, randBytes(12, benchSize))
	ctx := context.Background()
	req := &cachev1.ReadRangeRequest{Uri: uri, Offset: 0, Length: benchSize}
	reader := func(always bool) func(b *testing.B) {
		c := nodetest.Start(b, nodetest.Options{N: 1, Origin: mem, PageSize: 1 << 20, BlockSize: 128 << 20, CacheBytes: 2 * benchSize,
			Mutate: func(_ int, cfg *node.Config) { cfg.CacheVerifyAlways = always }})
		cl := c.Client(b, 0)
		read := func(b *testing.B) {
			s, err := nodetest.StreamRange(ctx, cl, req, func([]byte) error { return nil })
			if err != nil || s.LocalHitBytes != benchSize {
				b.Fatalf("read (verify always %v): %v %+v", always, err, s)
			}
		}
		if _, err := nodetest.StreamRange(ctx, cl, req, func([]byte) error { return nil }); err != nil {
			b.Fatalf("warm-up: %v", err)
		}
		return read
	}
	first, always := reader(false), reader(true)
	b.Run("paired", func(b *testing.B) {
		benchpair.Rates(b, benchSize, "first-read", first, "always", always)
	})
}
