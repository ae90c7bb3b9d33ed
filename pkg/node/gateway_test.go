package node_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

// TestGatewayMounted: the S3 gateway answers on the node's HTTP listener
// (GET with Range, HEAD) through the cluster cache, next to /metrics.
func TestGatewayMounted(t *testing.T) {
	mem := origintest.NewMemStore()
	data := randBytes(11, 3<<20)
	info := mem.Put("s3://lake/tables/a.bin", data)
	c := nodetest.Start(t, nodetest.Options{N: 2, Origin: mem})
	hc := c.HTTPClient()
	for i := range c.Nodes {
		req, _ := http.NewRequest("GET", c.HTTPURL(i)+"/lake/tables/a.bin", nil)
		req.Header.Set("Range", "bytes=1000-2099999")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, data[1000:2100000]) {
			t.Fatalf("node %d: GET with Range: %d, %d bytes", i, resp.StatusCode, len(body))
		}
		resp, err = hc.Head(c.HTTPURL(i) + "/lake/tables/a.bin")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.ContentLength != int64(len(data)) || resp.Header.Get("ETag") == "" {
			t.Fatalf("node %d: HEAD %d, length %d, etag %q (version %s)", i, resp.StatusCode, resp.ContentLength, resp.Header.Get("ETag"), info.Version)
		}
		resp, err = hc.Get(c.HTTPURL(i) + "/lake/tables/missing")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Fatalf("missing key: %d", resp.StatusCode)
		}
	}
	// Keys that a path-cleaning router would redirect reach the gateway as sent.
	mem.Put("s3://lake/x//y/./z", []byte("odd key"))
	resp, err := hc.Get(c.HTTPURL(0) + "/lake/x//y/./z")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "odd key" {
		t.Fatalf("GET of a key with // and /./: %d %q", resp.StatusCode, body)
	}
	resp, err = hc.Get(c.HTTPURL(0) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte(`locus_reads_total{code="OK",kind="client"}`)) {
		t.Fatal("gateway reads not counted as client reads")
	}
}

// TestGatewayIfMatchAfterRewrite: a client that learned an object's new
// ETag from another node (or the origin) and sends it in If-Match gets the
// new bytes, not 412, and in If-None-Match gets 304, not the old bytes,
// from a node whose stat cache still holds the old version (StatTTL is
// long here so the stale entry cannot expire).
func TestGatewayIfMatchAfterRewrite(t *testing.T) {
	mem := origintest.NewMemStore()
	mem.Put("s3://lake/t/obj", []byte("version one"))
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: mem, StatTTL: time.Hour})
	hc := c.HTTPClient()
	get := func(header, etag string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", c.HTTPURL(0)+"/lake/t/obj", nil)
		if etag != "" {
			req.Header.Set(header, etag)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	quoted := func(v string) string { return `"` + strings.Trim(v, `"`) + `"` }
	if code, body := get("", ""); code != 200 || body != "version one" {
		t.Fatalf("first GET: %d %q", code, body)
	}
	cur := mem.Put("s3://lake/t/obj", []byte("version two"))
	if code, body := get("If-Match", quoted(cur.Version)); code != 200 || body != "version two" {
		t.Fatalf("GET with If-Match of the new ETag: %d %q, want 200 \"version two\"", code, body)
	}
	if code, _ := get("If-Match", `"not-an-etag"`); code != http.StatusPreconditionFailed {
		t.Fatalf("GET with a wrong If-Match: %d, want 412", code)
	}
	cur = mem.Put("s3://lake/t/obj", []byte("version three"))
	if code, body := get("If-None-Match", quoted(cur.Version)); code != http.StatusNotModified {
		t.Fatalf("GET with If-None-Match of the new ETag: %d %q, want 304", code, body)
	}
}
