package origin_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/origin"
)

// BenchmarkFileReadAt compares FileStore.ReadAt (URI parse, confinement
// checks, open through os.Root, version check before and after) with a
// plain ReadAt on an already open *os.File, for page-sized reads.
func BenchmarkFileReadAt(b *testing.B) {
	root := b.TempDir()
	path := filepath.Join(root, "data.bin")
	if err := os.WriteFile(path, randomBytes(1, 8<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	s, err := origin.NewFileStore(origin.FileConfig{Root: root})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	info, _ := s.Stat(ctx, "file://"+path)
	for _, size := range []int{4 << 10, 1 << 20} {
		p := make([]byte, size)
		b.Run(fmt.Sprintf("baseline-os.File/%dKiB", size>>10), func(b *testing.B) {
			f, _ := os.Open(path)
			defer f.Close()
			b.ReportAllocs()
			b.SetBytes(int64(size))
			i := 0
			for b.Loop() {
				if _, err := f.ReadAt(p, int64(i%8)*int64(size)%(8<<20-int64(size))); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(fmt.Sprintf("FileStore/%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			i := 0
			for b.Loop() {
				if _, err := s.ReadAt(ctx, info.URI, info.Version, p, int64(i%8)*int64(size)%(8<<20-int64(size))); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkS3ReadAt compares S3Store.ReadAt (SigV4 signing, retry
// middleware, If-Match, Content-Range checks) with a plain net/http ranged
// GET against the same in-process server, for 1 MiB pages.
func BenchmarkS3ReadAt(b *testing.B) {
	const size = 1 << 20
	f := &fakeS3{data: randomBytes(2, 8<<20), etag: `"e"`}
	srv := httptest.NewServer(f)
	defer srv.Close()
	p := make([]byte, size)
	b.Run("baseline-net/http", func(b *testing.B) {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		b.ReportAllocs()
		b.SetBytes(size)
		for b.Loop() {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/bkt/key", nil)
			req.Header.Set("Range", "bytes=1048576-2097151")
			req.Header.Set("If-Match", `"e"`)
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(resp.Body, p); err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		}
	})
	b.Run("S3Store", func(b *testing.B) {
		s, err := origin.NewS3Store(context.Background(), origin.S3Config{
			Endpoint: srv.URL, PathStyle: true, Region: "us-east-1",
			AccessKeyID: "k", SecretAccessKey: "s", Timeout: 10 * time.Second,
		})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.SetBytes(size)
		for b.Loop() {
			if _, err := s.ReadAt(context.Background(), "s3://bkt/key", `"e"`, p, 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
}
