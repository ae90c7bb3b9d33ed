package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/locuscache/locus/pkg/gateway"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

var benchSizes = []struct {
	name string
	size int
}{
	{"64KiB", 64 << 10},
	{"8MiB", 8 << 20},
}

// gwCases are the GETs of BenchmarkGatewayVsVersityGW: whole objects, and
// a ranged GET as Parquet readers issue them (a column chunk).
var gwCases = []struct {
	name      string
	size      int    // object size
	rng       string // Range header, "" = whole object
	off, want int    // expected body: [off, off+want)
}{
	{"64KiB", 64 << 10, "", 0, 64 << 10},
	{"8MiB", 8 << 20, "", 0, 8 << 20},
	{"8MiB/range=4MiB", 8 << 20, fmt.Sprintf("bytes=%d-%d", 1<<20+123, 1<<20+123+4<<20-1), 1<<20 + 123, 4 << 20},
}

// BenchmarkGatewayVsVersityGW is the acceptance benchmark: a GET of
// a cached object through a cache node's S3 gateway against the same GET
// from the origin S3 server (versitygw, posix backend) directly, in the
// same run, with the same SDK client configuration (aws-sdk-go-v2, path
// style, no checksum validation), one request at a time: each server alone,
// then both interleaved (x_faster = the gateway's throughput over
// versitygw's on alternating requests). Goal: the gateway >= 2x the origin. The node runs with the
// production page size (1 MiB) and RAM only.
//
// Note what the baseline is: versitygw on loopback, its files in the OS
// page cache, answers whole-object GETs with sendfile (zero-copy), while
// the node copies from its cache through the socket; ranged GETs are
// copied by both.
//
//	go test ./pkg/gateway -run '^$' -bench GatewayVsVersityGW -benchtime 2s -count 5
func BenchmarkGatewayVsVersityGW(b *testing.B) {
	gw := origintest.StartVersityGW(b)
	objects := map[int]string{}
	for _, tc := range gwCases {
		if _, ok := objects[tc.size]; !ok {
			objects[tc.size] = fmt.Sprintf("bench/%d", tc.size)
			gw.Put(b, objects[tc.size], randBytes(tc.size, uint64(tc.size)))
		}
	}
	c := nodetest.Start(b, nodetest.Options{N: 1, VersityGW: gw, MemoryBytes: 256 << 20, PageSize: 1 << 20, BlockSize: 128 << 20, StatTTL: time.Hour})
	// One SDK configuration for both servers, with a client that reads
	// large bodies in large reads (as an engine's reader does), so the
	// figures compare the servers rather than the client's 8 KiB reads.
	sdk := func(endpoint string) *s3.Client {
		cfg := gw.Config()
		cfg.Endpoint = endpoint
		cfg.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.ReadBufferSize = 256 << 10
			t.MaxIdleConnsPerHost = 16
			t.DisableCompression = true
		})
		st, err := origin.NewS3Store(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		return st.Client()
	}
	direct, via := sdk(gw.Endpoint), sdk(c.HTTPURL(0))

	get := func(cl *s3.Client, key, rng string, w io.Writer, buf []byte) (int64, error) {
		in := &s3.GetObjectInput{Bucket: aws.String(gw.Bucket), Key: aws.String(key)}
		if rng != "" {
			in.Range = aws.String(rng)
		}
		out, err := cl.GetObject(context.Background(), in)
		if err != nil {
			return 0, err
		}
		defer out.Body.Close()
		return io.CopyBuffer(w, out.Body, buf)
	}
	for _, tc := range gwCases {
		key := objects[tc.size]
		// Warm the cache, and check that both serve the same, right bytes.
		var a, o bytes.Buffer
		if _, err := get(via, key, tc.rng, &a, make([]byte, 32<<10)); err != nil {
			b.Fatal(err)
		}
		if _, err := get(direct, key, tc.rng, &o, make([]byte, 32<<10)); err != nil {
			b.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), o.Bytes()) || a.Len() != tc.want {
			b.Fatalf("%s: gateway (%d bytes) and origin (%d bytes) differ", tc.name, a.Len(), o.Len())
		}
		for _, target := range []struct {
			name string
			cl   *s3.Client
		}{{"gateway", via}, {"versitygw", direct}} {
			b.Run(fmt.Sprintf("size=%s/%s", tc.name, target.name), func(b *testing.B) {
				buf := make([]byte, 256<<10)
				b.SetBytes(int64(tc.want))
				b.ReportAllocs()
				for b.Loop() {
					if n, err := get(target.cl, key, tc.rng, discard{}, buf); err != nil || n != int64(tc.want) {
						b.Fatalf("GET: %d bytes, %v", n, err)
					}
				}
			})
		}
		// The same GETs interleaved, one from each server per iteration,
		// timed separately: on a shared, noisy machine the ratio of
		// interleaved requests is the figure to trust.
		b.Run(fmt.Sprintf("size=%s/interleaved", tc.name), func(b *testing.B) {
			buf := make([]byte, 256<<10)
			var tGW, tOrigin time.Duration
			b.SetBytes(2 * int64(tc.want))
			b.ReportAllocs()
			for b.Loop() {
				for _, p := range []struct {
					cl *s3.Client
					d  *time.Duration
				}{{via, &tGW}, {direct, &tOrigin}} {
					start := time.Now()
					if n, err := get(p.cl, key, tc.rng, discard{}, buf); err != nil || n != int64(tc.want) {
						b.Fatalf("GET: %d bytes, %v", n, err)
					}
					*p.d += time.Since(start)
				}
			}
			mb := float64(b.N) * float64(tc.want) / 1e6
			b.ReportMetric(mb/tGW.Seconds(), "gateway_MB/s")
			b.ReportMetric(mb/tOrigin.Seconds(), "versitygw_MB/s")
			b.ReportMetric(tOrigin.Seconds()/tGW.Seconds(), "x_faster")
		})
	}
}

// BenchmarkHandler measures the gateway's own cost: GETs of an in-memory
// object through the handler (over StoreBackend and a MemStore) against
// net/http's ServeContent of the same bytes, both over loopback HTTP.
//
//	go test ./pkg/gateway -run '^$' -bench Handler
func BenchmarkHandler(b *testing.B) {
	for _, s := range benchSizes {
		data := randBytes(s.size, 1)
		m := origintest.NewMemStore()
		m.Put("s3://bkt/obj", data)
		g, err := gateway.New(gateway.Config{Backend: gateway.StoreBackend{Store: m}})
		if err != nil {
			b.Fatal(err)
		}
		serveContent := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("ETag", `"m1"`)
			http.ServeContent(w, r, "", time.Unix(1, 0), bytes.NewReader(data))
		})
		for _, h := range []struct {
			name string
			h    http.Handler
		}{{"gateway", g}, {"ServeContent", serveContent}} {
			b.Run(fmt.Sprintf("size=%s/%s", s.name, h.name), func(b *testing.B) {
				srv := httptest.NewServer(h.h)
				defer srv.Close()
				hc := srv.Client()
				buf := make([]byte, 256<<10)
				b.SetBytes(int64(s.size))
				b.ReportAllocs()
				for b.Loop() {
					res, err := hc.Get(srv.URL + "/bkt/obj")
					if err != nil {
						b.Fatal(err)
					}
					n, _ := io.CopyBuffer(discard{}, res.Body, buf)
					res.Body.Close()
					if n != int64(s.size) {
						b.Fatalf("%d bytes", n)
					}
				}
			})
		}
	}
}

// discard is io.Discard without ReadFrom, so io.CopyBuffer reads with the
// benchmark's large buffer (io.Discard.ReadFrom reads 8 KiB at a time).
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
