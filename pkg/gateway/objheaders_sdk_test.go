package gateway_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSDKObjectHeadersLikeOrigin: an object stored with one of the
// standard headers S3 keeps (Content-Encoding, Content-Disposition,
// Cache-Control, Content-Language, Expires) is served with it by a node's
// gateway in front of versitygw, on GetObject, ranged GetObject and
// HeadObject, as versitygw serves it; an object stored without any is
// served without them. A 304 carries the object's Cache-Control and
// Expires (RFC 9110 15.4.5) and no Content-Encoding; a 412 carries none.
// Was: none was ever sent, so a gzip-encoded object reached the client as
// compressed bytes with nothing saying so.
func TestSDKObjectHeadersLikeOrigin(t *testing.T) {
	expires := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	objects := []struct {
		key, header, value string
		set                func(*s3.PutObjectInput)
	}{
		{"enc/data.json.gz", "Content-Encoding", "gzip", func(in *s3.PutObjectInput) { in.ContentEncoding = aws.String("gzip") }},
		{"disp/report.csv", "Content-Disposition", `attachment; filename="report 1.csv"`,
			func(in *s3.PutObjectInput) { in.ContentDisposition = aws.String(`attachment; filename="report 1.csv"`) }},
		{"cache/app.js", "Cache-Control", "public, max-age=3600", func(in *s3.PutObjectInput) { in.CacheControl = aws.String("public, max-age=3600") }},
		{"lang/readme.txt", "Content-Language", "de-DE", func(in *s3.PutObjectInput) { in.ContentLanguage = aws.String("de-DE") }},
		{"exp/banner.png", "Expires", expires.Format(http.TimeFormat), func(in *s3.PutObjectInput) { in.Expires = aws.Time(expires) }},
		{"plain/none.bin", "", "", func(*s3.PutObjectInput) {}},
	}
	headers := []string{"Content-Encoding", "Content-Disposition", "Cache-Control", "Content-Language", "Expires"}
	var puts []s3.PutObjectInput
	for i, o := range objects {
		in := putBytes(o.key, gzipped(t, randBytes(3000, uint64(i+40))))
		o.set(&in)
		puts = append(puts, in)
	}
	e := startSDKEnv(t, puts...)
	b := aws.String(e.bucket)
	for _, o := range objects {
		k := aws.String(o.key)
		head, err := e.direct.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: b, Key: k})
		if err != nil {
			t.Fatal(err)
		}
		etag := aws.ToString(head.ETag)
		for _, rq := range []struct {
			what   string
			op     func(c *s3.Client) ([]byte, error)
			status int
		}{
			{"GetObject", getOp(s3.GetObjectInput{Bucket: b, Key: k}), 200},
			{"GetObject Range", getOp(s3.GetObjectInput{Bucket: b, Key: k, Range: aws.String("bytes=5-99")}), 206},
			{"HeadObject", headOp(s3.HeadObjectInput{Bucket: b, Key: k}), 200},
			{"HeadObject Range", headOp(s3.HeadObjectInput{Bucket: b, Key: k, Range: aws.String("bytes=5-99")}), 206},
			{"GetObject If-None-Match", getOp(s3.GetObjectInput{Bucket: b, Key: k, IfNoneMatch: aws.String(etag)}), 304},
			{"HeadObject If-None-Match", headOp(s3.HeadObjectInput{Bucket: b, Key: k, IfNoneMatch: aws.String(etag)}), 304},
			{"GetObject If-Match other", getOp(s3.GetObjectInput{Bucket: b, Key: k, IfMatch: aws.String(`"nope"`)}), 412},
		} {
			g, d := e.both(rq.op)
			if g.status() != rq.status {
				t.Errorf("%s %q: status %d (%v), want %d", rq.what, o.key, g.status(), g.err, rq.status)
				continue
			}
			if rq.status != 304 { // versitygw's 304 carries no ETag either (TestSDKConditionals)
				if ds := diff(g, d); len(ds) > 0 {
					t.Errorf("%s %q differs from versitygw:\n  %s", rq.what, o.key, strings.Join(ds, "\n  "))
				}
			}
			for _, h := range headers {
				want := ""
				if h == o.header && (rq.status < 300 || rq.status == 304 && (h == "Cache-Control" || h == "Expires")) {
					want = o.value
				}
				if got := g.raw.Header.Values(h); want == "" && len(got) != 0 || want != "" && (len(got) != 1 || got[0] != want) {
					t.Errorf("%s %q: %s %q, want %q", rq.what, o.key, h, got, want)
				}
			}
		}
	}
}

// TestSDKDirectoryMarkerLikeOrigin: a "directory marker" (an empty object
// whose key ends in "/", as the S3 console's "Create folder" writes) is
// served by a node's gateway (nodetest wires Config.DirectoryMarkers as the
// cachenode daemon does), on GetObject
// and HeadObject, as versitygw serves it (200, its ETag, its Content-Type);
// a prefix that is no object (only keys under it) is 404 NoSuchKey
// (HeadObject: NotFound) on both. Was: 404 for the marker too, since the
// node and the S3 origin both refused the key before asking the store.
func TestSDKDirectoryMarkerLikeOrigin(t *testing.T) {
	e := startSDKEnv(t,
		putBytes("dir/", nil), putBytes("dir/a.bin", randBytes(100, 1)),
		putBytes("implicit/a.bin", randBytes(100, 2)))
	b := aws.String(e.bucket)
	for _, tc := range []struct {
		key    string
		status int
		code   string // GetObject's error code; HeadObject's is NotFound
	}{
		{"dir/", 200, ""},
		{"implicit/", 404, "NoSuchKey"},
		{"nothing/", 404, "NoSuchKey"},
		{"dir/a.bin", 200, ""},
	} {
		k := aws.String(tc.key)
		for what, op := range map[string]func(c *s3.Client) ([]byte, error){
			"GetObject":  getOp(s3.GetObjectInput{Bucket: b, Key: k}),
			"HeadObject": headOp(s3.HeadObjectInput{Bucket: b, Key: k}),
		} {
			g, d := e.both(op)
			if ds := diff(g, d); len(ds) > 0 {
				t.Errorf("%s %q differs from versitygw:\n  %s", what, tc.key, strings.Join(ds, "\n  "))
			}
			code := tc.code
			if what == "HeadObject" && tc.status == 404 {
				code = "NotFound"
			}
			if g.status() != tc.status || g.code() != code {
				t.Errorf("%s %q: status %d code %q (%v), want %d %q", what, tc.key, g.status(), g.code(), g.err, tc.status, code)
			}
		}
	}
}
