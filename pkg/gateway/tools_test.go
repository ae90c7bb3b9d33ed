package gateway_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/locuscache/locus/pkg/gateway/gatewaytest"
	"github.com/locuscache/locus/pkg/origin"
)

func randBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed*31+7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// toolObjects are the objects the client tests read: a small one, one big
// enough for the AWS CLI's multipart (ranged, parallel) download (its
// threshold is 8 MiB), and one whose key needs escaping.
var toolObjects = map[string]int{
	"small.bin":             1000,
	"dir/big.bin":           20<<20 + 12345,
	"odd key/a+b=c&d%e.bin": 5000,
}

// originBytes reads an object straight from the origin: the reference the
// tools' output is compared with.
func originBytes(t *testing.T, s origin.Store, uri string) []byte {
	t.Helper()
	ctx := context.Background()
	info, err := s.Stat(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(io.NewSectionReader(origin.NewReaderAt(ctx, s, info), 0, info.Size))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// countingHandler counts the requests that reach the gateway, so a test
// knows the tool talked to it and not to somewhere else.
type countingHandler struct {
	h http.Handler
	n atomic.Int64
}

func (c *countingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.n.Add(1)
	c.h.ServeHTTP(w, r)
}

// checkClients runs every tool through the gateway at endpoint and compares
// what each returns with want (bytes read from the origin directly).
func checkClients(t *testing.T, endpoint, bucket string, want map[string][]byte, requests *atomic.Int64) {
	t.Helper()
	check := func(t *testing.T, what string, res gatewaytest.Result, exp []byte) {
		t.Helper()
		if res.Err != nil {
			t.Fatalf("%s: %v\nstderr:\n%s", what, res.Err, res.Stderr)
		}
		if !bytes.Equal(res.Stdout, exp) {
			t.Fatalf("%s: got %d bytes, want %d bytes identical to the origin's", what, len(res.Stdout), len(exp))
		}
	}
	big := want["dir/big.bin"]
	t.Run("aws", func(t *testing.T) {
		aws := gatewaytest.NewAWS(t, endpoint)
		before := requests.Load()
		for key, exp := range want {
			check(t, "aws s3 cp "+key, aws.Cp(bucket, key), exp)
		}
		for _, tc := range []struct {
			rng string
			exp []byte
		}{
			{"bytes=100-199", big[100:200]},
			{"bytes=-10", big[len(big)-10:]},
			{"bytes=1000-", big[1000:]},
			{"bytes=0-99999999999", big},
		} {
			check(t, "aws s3api get-object --range "+tc.rng, aws.GetObject(bucket, "dir/big.bin", tc.rng), tc.exp)
		}
		if requests.Load() == before {
			t.Fatal("the AWS CLI never reached the gateway")
		}
		// Bad input.
		res := aws.GetObject(bucket, "no/such/key", "")
		if res.Err == nil || !strings.Contains(res.Stderr, "NoSuchKey") {
			t.Errorf("get-object of a missing key: err %v, stderr %q; want a NoSuchKey error", res.Err, res.Stderr)
		}
		res = aws.GetObject(bucket, "small.bin", "bytes=5000-")
		if res.Err == nil || !strings.Contains(res.Stderr, "InvalidRange") {
			t.Errorf("get-object past the end: err %v, stderr %q; want InvalidRange", res.Err, res.Stderr)
		}
		res = aws.Cp("no-such-bucket", "k")
		if res.Err == nil || !strings.Contains(res.Stderr, "404") {
			t.Errorf("cp from a missing bucket: err %v, stderr %q; want a 404", res.Err, res.Stderr)
		}
		body := filepath.Join(t.TempDir(), "body")
		if err := os.WriteFile(body, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		res = aws.Run("s3api", "put-object", "--bucket", bucket, "--key", "new", "--body", body)
		if res.Err == nil || !strings.Contains(res.Stderr, "MethodNotAllowed") {
			t.Errorf("put-object: err %v, stderr %q; want MethodNotAllowed", res.Err, res.Stderr)
		}
	})
	t.Run("s3cmd", func(t *testing.T) {
		s3 := gatewaytest.NewS3cmd(t, endpoint)
		before := requests.Load()
		for key, exp := range want {
			check(t, "s3cmd get "+key, s3.Get(bucket, key), exp)
		}
		if requests.Load() == before {
			t.Fatal("s3cmd never reached the gateway")
		}
		if res := s3.Get(bucket, "no/such/key"); res.Err == nil {
			t.Errorf("s3cmd get of a missing key succeeded")
		}
	})
	t.Run("rclone", func(t *testing.T) {
		rc := gatewaytest.NewRclone(t, endpoint)
		before := requests.Load()
		for key, exp := range want {
			check(t, "rclone cat "+key, rc.Cat(bucket, key, 0, -1), exp)
		}
		check(t, "rclone cat --offset 1000 --count 5000", rc.Cat(bucket, "dir/big.bin", 1000, 5000), big[1000:6000])
		check(t, "rclone cat --offset near the end", rc.Cat(bucket, "dir/big.bin", int64(len(big)-7), 100), big[len(big)-7:])
		if requests.Load() == before {
			t.Fatal("rclone never reached the gateway")
		}
	})
}
