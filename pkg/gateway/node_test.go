package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/locuscache/locus/pkg/node"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

// requestCounter counts the gateway requests a node served, through the
// node config's Gateway hook.
func countGateway(counter *atomic.Int64) func(i int, cfg *node.Config) {
	return func(i int, cfg *node.Config) {
		inner := cfg.Gateway
		cfg.Gateway = func(n *node.Node) (http.Handler, error) {
			h, err := inner(n)
			if err != nil {
				return nil, err
			}
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				counter.Add(1)
				h.ServeHTTP(w, r)
			}), nil
		}
	}
}

// TestClientsThroughNodes is the acceptance test for real S3 clients: the
// AWS CLI, s3cmd and rclone read objects of a real S3 server (versitygw)
// through the gateway of a node in a 3-node cluster (so some blocks are
// peer reads), and each returns bytes identical to reading the origin
// directly.
func TestClientsThroughNodes(t *testing.T) {
	gw := origintest.StartVersityGW(t)
	for key, n := range toolObjects {
		gw.Put(t, key, randBytes(n, uint64(n)))
	}
	var requests atomic.Int64
	c := nodetest.Start(t, nodetest.Options{N: 3, VersityGW: gw, MemoryBytes: 128 << 20, Mutate: countGateway(&requests)})
	want := make(map[string][]byte)
	for key := range toolObjects {
		want[key] = originBytes(t, gw.Store(t), gw.URI(key))
	}
	checkClients(t, c.HTTPURL(1), gw.Bucket, want, &requests)
}

// TestGatewayOnNode checks the gateway as a node serves it: range reads
// byte-identical to the origin, an overwrite served whole and new, and the
// bad-input answers.
func TestGatewayOnNode(t *testing.T) {
	gw := origintest.StartVersityGW(t)
	data := randBytes(3<<20+17, 5)
	gw.Put(t, "obj", data)
	c := nodetest.Start(t, nodetest.Options{N: 2, VersityGW: gw})
	hc := c.HTTPClient()
	get := func(path string, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest("GET", c.HTTPURL(0)+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		// Do not follow redirects: a redirect would be a bug here.
		res, err := (&http.Client{Transport: hc.Transport, Timeout: hc.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, body
	}
	base := "/" + gw.Bucket
	for _, tc := range []struct {
		rng        string
		start, end int
	}{
		{"", 0, len(data)},
		{"bytes=0-0", 0, 1},
		{"bytes=1048570-2097160", 1048570, 2097161}, // across block boundaries
		{"bytes=-100", len(data) - 100, len(data)},
		{fmt.Sprintf("bytes=%d-", len(data)-5), len(data) - 5, len(data)},
	} {
		for pass := range 2 { // the second pass is served from the cache
			var hdr []string
			if tc.rng != "" {
				hdr = []string{"Range", tc.rng}
			}
			res, body := get(base+"/obj", hdr...)
			if !bytes.Equal(body, data[tc.start:tc.end]) {
				t.Fatalf("pass %d GET %q: status %d, %d bytes, want %d identical to the origin", pass, tc.rng, res.StatusCode, len(body), tc.end-tc.start)
			}
		}
	}
	if st := c.Nodes[0].CacheStats(); st.HitBytes == 0 && c.Nodes[1].CacheStats().HitBytes == 0 {
		t.Errorf("no cache hits after reading every range twice: %+v", st)
	}

	// An overwrite: the next read returns the new bytes (after the stat TTL).
	newData := randBytes(1<<20, 6)
	etag := gw.Put(t, "obj", newData)
	deadline := 0
	for {
		res, body := get(base + "/obj")
		if res.Header.Get("ETag") == etag {
			if !bytes.Equal(body, newData) {
				t.Fatalf("ETag %s with bytes that are not that version's", etag)
			}
			break
		}
		if !bytes.Equal(body, data) {
			t.Fatalf("old ETag with bytes that are not the old version's (a mix?)")
		}
		if deadline++; deadline > 50 {
			t.Fatal("the overwrite never showed")
		}
	}

	for path, want := range map[string]string{
		base + "/no-such-key": "NoSuchKey",
		"/no-such-bucket/key": "NoSuchBucket",
	} {
		res, body := get(path)
		if res.StatusCode != 404 || !strings.Contains(string(body), "<Code>"+want+"</Code>") {
			t.Errorf("GET %s: %d %s, want 404 %s", path, res.StatusCode, body, want)
		}
	}
	if res, body := get(base+"/obj", "Range", "bytes=99999999-"); res.StatusCode != 416 || !strings.Contains(string(body), "InvalidRange") {
		t.Errorf("range past the end: %d %s", res.StatusCode, body)
	}
	if res, _ := get(base+"/obj", "Range", "bytes=5-1"); res.StatusCode != 400 {
		t.Errorf("malformed range: %d, want 400", res.StatusCode)
	}
}

// TestNodeKeepsKeyPaths: S3 keys may hold "//", "." and ".." segments; the
// node's HTTP listener must hand such paths to the gateway unchanged.
// (http.ServeMux redirects them to a cleaned path, which names another
// key; route /metrics, /healthz and /readyz by exact match instead.)
func TestNodeKeepsKeyPaths(t *testing.T) {
	gw := origintest.StartVersityGW(t)
	c := nodetest.Start(t, nodetest.Options{N: 1, VersityGW: gw})
	noRedirect := &http.Client{Transport: c.HTTPClient().Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, key := range []string{"a//b", "a/../c", "./d", "e/./f"} {
		gw.Put(t, key, []byte("key "+key))
		res, err := noRedirect.Get(c.HTTPURL(0) + "/" + gw.Bucket + "/" + key)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || string(body) != "key "+key {
			t.Errorf("GET key %q: status %d (Location %q), body %q; want 200 and the object", key, res.StatusCode, res.Header.Get("Location"), body)
		}
	}
}
