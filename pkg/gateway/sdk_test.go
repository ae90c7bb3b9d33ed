package gateway_test

// An adversarial review of the gateway against what aws-sdk-go-v2's S3
// client (v1.114, the defaults of SDK v1.33+) expects: each test drives a
// node's gateway in front of a real versitygw origin with the SDK (endpoint
// override, path-style addressing) and compares with the same call sent
// straight to versitygw (2026-11-30). TestListMaxKeysZeroNotTruncated is
// a regression test (it failed before its fix); the others pin checks no
// other test makes. Three differences it found were documented in the
// README instead (directory-marker keys, listings without them, no stored
// Content-Type or user metadata); the first is served when the gateway has
// Config.DirectoryMarkers and the last is fixed (TestSDKContentTypeLikeOrigin,
// TestSDKObjectHeadersLikeOrigin, TestSDKDirectoryMarkerLikeOrigin).
// Differences README.md lists as intended (416 for any
// range of an empty object, Content-Range: bytes */size on a 416,
// If-Modified-Since in the future) are not compared.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/locuscache/locus/pkg/node"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

// rawRecorder is an http.RoundTripper that keeps the status and headers of
// the last response, so a test sees what the server sent besides what the
// SDK parsed. Tests use it from one goroutine at a time.
type rawRecorder struct {
	mu   sync.Mutex
	last *http.Response
}

func (r *rawRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.last = &http.Response{StatusCode: res.StatusCode, Header: res.Header.Clone()}
		r.mu.Unlock()
	}
	return res, err
}

func (r *rawRecorder) take() *http.Response {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.last
	r.last = nil
	return l
}

// sdkEnv is a versitygw origin, a 2-node cluster in front of it (so some
// blocks are peer reads), and an SDK client for each: gw talks to node 0's
// gateway, direct to versitygw.
type sdkEnv struct {
	gw, direct    *s3.Client
	gwRec, dirRec *rawRecorder
	bucket        string
}

func newSDKClient(endpoint, ak, sk string, rt http.RoundTripper) *s3.Client {
	return s3.New(s3.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider(ak, sk, ""),
		BaseEndpoint:     aws.String(endpoint),
		UsePathStyle:     true,
		HTTPClient:       &http.Client{Transport: rt, Timeout: 30 * time.Second},
		RetryMaxAttempts: 1,
	})
}

// startSDKEnv starts the origin, writes puts into its bucket (Bucket is
// filled in), then starts the cluster.
func startSDKEnv(t *testing.T, puts ...s3.PutObjectInput) *sdkEnv {
	t.Helper()
	return startSDKEnvMutate(t, nil, puts...)
}

// startSDKEnvMutate is startSDKEnv with a nodetest.Options.Mutate.
func startSDKEnvMutate(t *testing.T, mutate func(int, *node.Config), puts ...s3.PutObjectInput) *sdkEnv {
	t.Helper()
	vgw := origintest.StartVersityGW(t)
	e := &sdkEnv{bucket: vgw.Bucket, gwRec: &rawRecorder{}, dirRec: &rawRecorder{}}
	e.direct = newSDKClient(vgw.Endpoint, vgw.AccessKey, vgw.SecretKey, e.dirRec)
	for _, in := range puts {
		in.Bucket = aws.String(e.bucket)
		if _, err := e.direct.PutObject(context.Background(), &in); err != nil {
			t.Fatalf("put %q: %v", aws.ToString(in.Key), err)
		}
	}
	c := nodetest.Start(t, nodetest.Options{N: 2, VersityGW: vgw, Mutate: mutate})
	e.gw = newSDKClient(c.HTTPURL(0), "dummy", "dummysecret", e.gwRec)
	return e
}

func putBytes(key string, b []byte) s3.PutObjectInput {
	return s3.PutObjectInput{Key: aws.String(key), Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b)))}
}

// answer is one client's view of one call.
type answer struct {
	raw  *http.Response
	body []byte
	err  error
}

func (a answer) code() string {
	var ae smithy.APIError
	if errors.As(a.err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func (a answer) status() int {
	if a.raw == nil {
		return 0
	}
	return a.raw.StatusCode
}

// both runs op against the gateway, then versitygw.
func (e *sdkEnv) both(op func(c *s3.Client) ([]byte, error)) (gw, direct answer) {
	gw.body, gw.err = op(e.gw)
	gw.raw = e.gwRec.take()
	direct.body, direct.err = op(e.direct)
	direct.raw = e.dirRec.take()
	return gw, direct
}

func getOp(in s3.GetObjectInput) func(c *s3.Client) ([]byte, error) {
	return func(c *s3.Client) ([]byte, error) {
		in := in
		out, err := c.GetObject(context.Background(), &in)
		if err != nil {
			return nil, err
		}
		defer out.Body.Close()
		return io.ReadAll(out.Body)
	}
}

func headOp(in s3.HeadObjectInput) func(c *s3.Client) ([]byte, error) {
	return func(c *s3.Client) ([]byte, error) {
		in := in
		_, err := c.HeadObject(context.Background(), &in)
		return nil, err
	}
}

// compareHeaders are the response headers an S3 client reads.
var compareHeaders = []string{"Content-Length", "Content-Range", "ETag", "Last-Modified",
	"Content-Type", "Accept-Ranges", "Content-Encoding", "Content-Disposition", "Cache-Control",
	"Content-Language", "Expires", "x-amz-checksum-crc32", "x-amz-checksum-crc32c",
	"x-amz-checksum-crc64nvme", "x-amz-checksum-sha1", "x-amz-checksum-sha256", "x-amz-checksum-type"}

// diff lists every difference between the gateway's and versitygw's answer
// an S3 client can see: status, headers, body bytes, SDK error code. Error
// documents are compared by code (their length and Content-Type are the
// XML's), and skip names headers not to compare.
func diff(g, d answer, skip ...string) []string {
	var out []string
	if g.status() != d.status() {
		out = append(out, fmt.Sprintf("status: gateway %d, versitygw %d", g.status(), d.status()))
	}
	if g.raw != nil && d.raw != nil {
		for _, h := range compareHeaders {
			if slices.Contains(skip, h) || (d.err != nil && g.err != nil && (h == "Content-Length" || h == "Content-Type")) {
				continue
			}
			if gv, dv := g.raw.Header.Values(h), d.raw.Header.Values(h); !slices.Equal(gv, dv) {
				out = append(out, fmt.Sprintf("%s: gateway %q, versitygw %q", h, gv, dv))
			}
		}
	}
	if !bytes.Equal(g.body, d.body) {
		out = append(out, fmt.Sprintf("body: gateway %d bytes, versitygw %d bytes (or different bytes)", len(g.body), len(d.body)))
	}
	if (g.err == nil) != (d.err == nil) || g.code() != d.code() {
		out = append(out, fmt.Sprintf("error: gateway %v | versitygw %v", g.err, d.err))
	}
	return out
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// TestSDKGetHeadLikeOrigin: GetObject (whole and ranged) and HeadObject
// of keys with spaces, unicode, '+', '=', '&', '%', of an empty object, of a
// missing key and a missing bucket, and a range 5 GiB into a small object,
// answer field for field as versitygw does, and the SDK parses every answer.
func TestSDKGetHeadLikeOrigin(t *testing.T) {
	keys := map[string][]byte{
		"small.bin":              randBytes(1000, 1),
		"with space/a b.bin":     randBytes(300, 2),
		"uni/日本語-é.bin":          randBytes(301, 3),
		"sym/a+b=c&d%e%2F.bin":   randBytes(302, 4),
		"sym/x=1&y=2?z#frag.bin": randBytes(303, 5),
		"empty.bin":              {},
	}
	var puts []s3.PutObjectInput
	for k, b := range keys {
		puts = append(puts, putBytes(k, b))
	}
	e := startSDKEnv(t, puts...)
	b := aws.String(e.bucket)
	check := func(what string, op func(c *s3.Client) ([]byte, error), skip ...string) answer {
		t.Helper()
		g, d := e.both(op)
		if ds := diff(g, d, skip...); len(ds) > 0 {
			t.Errorf("%s differs from versitygw:\n  %s", what, strings.Join(ds, "\n  "))
		}
		return g
	}
	for k, data := range keys {
		for _, rng := range []string{"", "bytes=0-9", "bytes=7-", "bytes=-5", "bytes=100-10000000", "bytes=5368709120-5368709199"} {
			if len(data) == 0 && rng != "" {
				continue // README: any range of an empty object is 416 (versitygw: 200 for bytes=-n)
			}
			var skip []string
			if strings.HasPrefix(rng, "bytes=5368709120") {
				skip = []string{"Content-Range"} // a 416 carries bytes */size (README); versitygw's none
			}
			g := check(fmt.Sprintf("GetObject %q Range %q", k, rng), getOp(s3.GetObjectInput{Bucket: b, Key: aws.String(k), Range: nilIfEmpty(rng)}), skip...)
			if strings.HasPrefix(rng, "bytes=5368709120") && (g.status() != 416 || g.code() != "InvalidRange" || g.raw.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", len(data))) {
				t.Errorf("GetObject %q 5 GiB into the object: status %d code %q, want 416 InvalidRange", k, g.status(), g.code())
			}
		}
		check(fmt.Sprintf("HeadObject %q", k), headOp(s3.HeadObjectInput{Bucket: b, Key: aws.String(k)}))
		if len(data) > 0 { // README: a range of an empty object is a 416 with bytes */0
			check(fmt.Sprintf("HeadObject %q Range", k), headOp(s3.HeadObjectInput{Bucket: b, Key: aws.String(k), Range: aws.String("bytes=0-1")}))
		}
	}
	for what, tc := range map[string]struct {
		bucket, key, code string
	}{
		"missing key":    {e.bucket, "no/such key+%", "NoSuchKey"},
		"missing bucket": {"no-such-bucket", "k", "NoSuchBucket"},
	} {
		g := check("GetObject "+what, getOp(s3.GetObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String(tc.key)}))
		var nsk interface{ ErrorCode() string }
		if g.status() != 404 || !errors.As(g.err, &nsk) || nsk.ErrorCode() != tc.code {
			t.Errorf("GetObject %s: status %d err %v, want 404 %s", what, g.status(), g.err, tc.code)
		}
		g = check("HeadObject "+what, headOp(s3.HeadObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String(tc.key)}))
		if g.status() != 404 || g.code() != "NotFound" {
			t.Errorf("HeadObject %s: status %d err %v, want 404 NotFound", what, g.status(), g.err)
		}
	}
}

// TestSDKConditionals: the SDK's If-Match, If-None-Match,
// If-Modified-Since and If-Unmodified-Since on GetObject and HeadObject give
// the statuses S3 documents (200, 304 NotModified, 412 PreconditionFailed)
// and the whole object when they pass. Where versitygw compares dates with
// its sub-second mtime (an If-Modified-Since or If-Unmodified-Since equal
// to the Last-Modified it sent), it answers otherwise; the gateway compares
// at HTTP-date granularity as RFC 9110 and S3 do, so those cases are
// checked against the expected status only, as is an If-Match list
// (RFC 9110 allows one; versitygw compares the whole header).
func TestSDKConditionals(t *testing.T) {
	data := randBytes(2000, 7)
	e := startSDKEnv(t, putBytes("obj", data))
	head, err := e.direct.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(e.bucket), Key: aws.String("obj")})
	if err != nil {
		t.Fatal(err)
	}
	etag, mod := aws.ToString(head.ETag), aws.ToTime(head.LastModified)
	for _, tc := range []struct {
		name      string
		in        s3.GetObjectInput
		status    int
		versityOK bool // versitygw gives the same answer
	}{
		{"If-Match equal", s3.GetObjectInput{IfMatch: aws.String(etag)}, 200, true},
		{"If-Match unquoted", s3.GetObjectInput{IfMatch: aws.String(strings.Trim(etag, `"`))}, 200, true},
		{"If-Match *", s3.GetObjectInput{IfMatch: aws.String("*")}, 200, true},
		{"If-Match list", s3.GetObjectInput{IfMatch: aws.String(`"nope", ` + etag)}, 200, false}, // RFC 9110 list; versitygw: 412
		{"If-Match other", s3.GetObjectInput{IfMatch: aws.String(`"nope"`)}, 412, true},
		{"If-None-Match equal", s3.GetObjectInput{IfNoneMatch: aws.String(etag)}, 304, true},
		{"If-None-Match *", s3.GetObjectInput{IfNoneMatch: aws.String("*")}, 304, true},
		{"If-None-Match other", s3.GetObjectInput{IfNoneMatch: aws.String(`"nope"`)}, 200, true},
		{"If-Modified-Since earlier", s3.GetObjectInput{IfModifiedSince: aws.Time(mod.Add(-time.Hour))}, 200, true},
		{"If-Modified-Since equal", s3.GetObjectInput{IfModifiedSince: aws.Time(mod)}, 304, false},
		{"If-Unmodified-Since earlier", s3.GetObjectInput{IfUnmodifiedSince: aws.Time(mod.Add(-time.Hour))}, 412, true},
		{"If-Unmodified-Since equal", s3.GetObjectInput{IfUnmodifiedSince: aws.Time(mod)}, 200, false},
		{"If-Unmodified-Since later", s3.GetObjectInput{IfUnmodifiedSince: aws.Time(mod.Add(time.Hour))}, 200, true},
		// S3's documented pairs: If-Match true wins over If-Unmodified-Since
		// false; If-None-Match false (a match) wins over If-Modified-Since true.
		{"If-Match equal + If-Unmodified-Since earlier", s3.GetObjectInput{IfMatch: aws.String(etag), IfUnmodifiedSince: aws.Time(mod.Add(-time.Hour))}, 200, true},
		{"If-None-Match equal + If-Modified-Since earlier", s3.GetObjectInput{IfNoneMatch: aws.String(etag), IfModifiedSince: aws.Time(mod.Add(-time.Hour))}, 304, true},
		{"If-Match other + If-None-Match equal", s3.GetObjectInput{IfMatch: aws.String(`"x"`), IfNoneMatch: aws.String(etag)}, 412, true},
		{"If-Match equal + Range", s3.GetObjectInput{IfMatch: aws.String(etag), Range: aws.String("bytes=10-19")}, 206, true},
		{"If-None-Match equal + Range", s3.GetObjectInput{IfNoneMatch: aws.String(etag), Range: aws.String("bytes=10-19")}, 304, true},
	} {
		in := tc.in
		in.Bucket, in.Key = aws.String(e.bucket), aws.String("obj")
		hin := s3.HeadObjectInput{Bucket: in.Bucket, Key: in.Key, IfMatch: in.IfMatch, IfNoneMatch: in.IfNoneMatch,
			IfModifiedSince: in.IfModifiedSince, IfUnmodifiedSince: in.IfUnmodifiedSince, Range: in.Range}
		for _, op := range []struct {
			name string
			fn   func(c *s3.Client) ([]byte, error)
		}{{"GetObject", getOp(in)}, {"HeadObject", headOp(hin)}} {
			g, d := e.both(op.fn)
			want := map[int]string{304: "NotModified", 412: "PreconditionFailed"}[tc.status]
			if g.status() != tc.status || (want != "" && g.code() != want) || (want == "" && g.err != nil) {
				t.Errorf("%s %s: status %d err %v, want %d %s", op.name, tc.name, g.status(), g.err, tc.status, want)
				continue
			}
			if op.name == "GetObject" && tc.status == 200 && !bytes.Equal(g.body, data) {
				t.Errorf("GetObject %s: %d bytes, want the object", tc.name, len(g.body))
			}
			// A 304 from the gateway carries ETag and Last-Modified
			// (RFC 9110 15.4.5); versitygw's has none.
			if tc.versityOK && g.status() != 304 {
				if ds := diff(g, d); len(ds) > 0 {
					t.Errorf("%s %s differs from versitygw:\n  %s", op.name, tc.name, strings.Join(ds, "\n  "))
				}
			}
		}
	}
}

// TestSDKChecksumValidation: with the SDK's default response checksum
// validation (v1.33+) and ChecksumMode ENABLED, GetObject through the
// gateway succeeds, whole and ranged, for an object the origin stores a
// CRC32 for. The gateway sends no x-amz-checksum-* header (the origin
// interface carries none), so the SDK has nothing to validate and nothing
// can mismatch; versitygw sends the stored checksum, which the SDK
// validates on the direct read.
func TestSDKChecksumValidation(t *testing.T) {
	data := randBytes(3<<20+5, 8)
	in := putBytes("crc.bin", data)
	in.ChecksumAlgorithm = "CRC32"
	e := startSDKEnv(t, in)
	for _, rng := range []string{"", "bytes=1048000-2100000"} {
		g, d := e.both(getOp(s3.GetObjectInput{Bucket: aws.String(e.bucket), Key: aws.String("crc.bin"), ChecksumMode: "ENABLED", Range: nilIfEmpty(rng)}))
		if g.err != nil || d.err != nil {
			t.Fatalf("GetObject Range %q with ChecksumMode ENABLED: gateway %v, versitygw %v", rng, g.err, d.err)
		}
		if !bytes.Equal(g.body, d.body) {
			t.Fatalf("GetObject Range %q: gateway and versitygw bytes differ", rng)
		}
		for h := range g.raw.Header {
			if strings.HasPrefix(strings.ToLower(h), "x-amz-checksum-") {
				t.Errorf("gateway sent %s: %q", h, g.raw.Header.Get(h))
			}
		}
		if rng == "" && d.raw.Header.Get("x-amz-checksum-crc32") == "" {
			t.Errorf("versitygw sent no CRC32 for the whole object: the test does not exercise validation")
		}
	}
}

// downloadLikeManager downloads an object the way
// github.com/aws/aws-sdk-go-v2/feature/s3/manager's Downloader (v1.23.24,
// download.go) does with its defaults: a first GET of bytes=0-(part-1)
// learns the size from Content-Range (Content-Length when the answer is
// 200); `concurrency` workers then GET the other parts with Range and
// If-Match (the first part's ETag), each checking that the Content-Range it
// got is the range it asked for; a 416 on the first part means an empty
// object. (The module is not in go.mod; the real Downloader and the newer
// transfermanager, both modes, were run against this setup by hand and
// matched the object too.)
func downloadLikeManager(ctx context.Context, c *s3.Client, bucket, key string, part int64, concurrency int) ([]byte, int, error) {
	get := func(rng, ifMatch string) (*s3.GetObjectOutput, []byte, error) {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Range: aws.String(rng), IfMatch: nilIfEmpty(ifMatch)})
		if err != nil {
			return nil, nil, err
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		return out, b, err
	}
	checkRange := func(out *s3.GetObjectOutput, start, end int64) error {
		if out.ContentRange == nil {
			return nil
		}
		var s, e, total int64
		if _, err := fmt.Sscanf(*out.ContentRange, "bytes %d-%d/%d", &s, &e, &total); err != nil {
			return fmt.Errorf("unparsable Content-Range %q: %v", *out.ContentRange, err)
		}
		if s != start || (e != end && e != total-1) {
			return fmt.Errorf("invalid content range: expect %d-%d, got %q", start, end, *out.ContentRange)
		}
		return nil
	}
	first, b, err := get(fmt.Sprintf("bytes=0-%d", part-1), "")
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusRequestedRangeNotSatisfiable {
		return nil, 1, nil // the Downloader's empty object
	}
	if err != nil {
		return nil, 1, err
	}
	if err := checkRange(first, 0, part-1); err != nil {
		return nil, 1, err
	}
	total := aws.ToInt64(first.ContentLength)
	if first.ContentRange != nil {
		i := strings.LastIndexByte(*first.ContentRange, '/')
		if _, err := fmt.Sscan((*first.ContentRange)[i+1:], &total); err != nil {
			return nil, 1, fmt.Errorf("Content-Range %q: %v", *first.ContentRange, err)
		}
	}
	buf := make([]byte, total)
	copy(buf, b)
	etag := aws.ToString(first.ETag)
	var (
		mu       sync.Mutex
		firstErr error
		requests = 1
		wg       sync.WaitGroup
	)
	starts := make(chan int64)
	for range concurrency {
		wg.Go(func() {
			for start := range starts {
				end := min(start+part, total) - 1
				out, b, err := get(fmt.Sprintf("bytes=%d-%d", start, start+part-1), etag)
				if err == nil {
					err = checkRange(out, start, end)
				}
				if err == nil && int64(len(b)) != end-start+1 {
					err = fmt.Errorf("part at %d: %d bytes, want %d", start, len(b), end-start+1)
				}
				mu.Lock()
				requests++
				if err != nil && firstErr == nil {
					firstErr = err
				} else if err == nil {
					copy(buf[start:], b)
				}
				mu.Unlock()
			}
		})
	}
	for start := part; start < total; start += part {
		starts <- start
	}
	close(starts)
	wg.Wait()
	return buf, requests, firstErr
}

// TestSDKDownloaderRanges: the s3 manager Downloader's concurrent
// ranged GETs (5 MiB parts, 5 workers, If-Match on every part) of a 13 MiB
// object spread over both nodes return the object, as they do from
// versitygw; an empty object downloads as empty (its first ranged GET is the
// 416 the Downloader expects).
func TestSDKDownloaderRanges(t *testing.T) {
	big := randBytes(13<<20+4321, 9)
	e := startSDKEnv(t, putBytes("big.bin", big), putBytes("empty.bin", nil), putBytes("tiny.bin", big[:10]))
	ctx := context.Background()
	for key, want := range map[string][]byte{"big.bin": big, "empty.bin": {}, "tiny.bin": big[:10]} {
		for name, c := range map[string]*s3.Client{"gateway": e.gw, "versitygw": e.direct} {
			got, n, err := downloadLikeManager(ctx, c, e.bucket, key, 5<<20, 5)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: Downloader-style download of %s: %d bytes in %d requests, err %v; want the %d-byte object", name, key, len(got), n, err, len(want))
			}
			if wantN := max(1, (len(want)+5<<20-1)/(5<<20)); n != wantN {
				t.Errorf("%s: %s took %d ranged GETs, want %d (one per 5 MiB part)", name, key, n, wantN)
			}
		}
	}
}

// TestSDKListObjectsV2Paging: ListObjectsV2 through the SDK paginator
// with prefixes, a delimiter, start-after and max-keys 1..1000 yields, page
// after page, the same keys (size, ETag, LastModified, StorageClass) and
// common prefixes as versitygw, and encoding-type=url encodes keys as S3
// does ('+' for a space, %XX for '+' and non-ASCII), decoding to versitygw's
// keys. Page boundaries are not compared: versitygw ends some listings with
// an extra empty page (IsTruncated true on a page that held the last key),
// where the gateway says IsTruncated false at once.
func TestSDKListObjectsV2Paging(t *testing.T) {
	var puts []s3.PutObjectInput
	for _, k := range []string{"l/a", "l/b/1", "l/b/2", "l/c d/x", "l/d+e", "l/é", "l/g", "l/b0", "top", "l/z/y/x", "l/%41"} {
		puts = append(puts, putBytes(k, []byte(k)))
	}
	for i := range 12 {
		puts = append(puts, putBytes(fmt.Sprintf("l/n/%03d", i), []byte{byte(i)}))
	}
	e := startSDKEnv(t, puts...)
	ctx := context.Background()
	b := aws.String(e.bucket)
	// flatten lists every page; decode undoes encoding-type=url (the
	// gateway encodes as S3 does; versitygw ignores the parameter).
	flatten := func(c *s3.Client, in s3.ListObjectsV2Input, decode bool) ([]string, error) {
		var out []string
		p := s3.NewListObjectsV2Paginator(c, &in)
		for pages := 0; p.HasMorePages(); pages++ {
			if pages > 100 {
				return out, errors.New("more than 100 pages")
			}
			res, err := p.NextPage(ctx)
			if err != nil {
				return out, err
			}
			if aws.ToInt32(res.KeyCount) != int32(len(res.Contents)+len(res.CommonPrefixes)) {
				return out, fmt.Errorf("KeyCount %d for %d keys and %d prefixes", aws.ToInt32(res.KeyCount), len(res.Contents), len(res.CommonPrefixes))
			}
			if in.MaxKeys != nil && aws.ToInt32(res.MaxKeys) != *in.MaxKeys {
				return out, fmt.Errorf("MaxKeys %d, asked %d", aws.ToInt32(res.MaxKeys), *in.MaxKeys)
			}
			for _, o := range res.Contents {
				key := aws.ToString(o.Key)
				if decode {
					var err error
					if key, err = url.QueryUnescape(key); err != nil {
						return out, err
					}
				}
				out = append(out, fmt.Sprintf("key %s size %d etag %s mod %s class %s", key, aws.ToInt64(o.Size),
					aws.ToString(o.ETag), aws.ToTime(o.LastModified).UTC().Format(time.RFC3339), o.StorageClass))
			}
			for _, cp := range res.CommonPrefixes {
				pfx := aws.ToString(cp.Prefix)
				if decode {
					pfx, _ = url.QueryUnescape(pfx)
				}
				out = append(out, "prefix "+pfx)
			}
		}
		return out, nil
	}
	for _, prefix := range []string{"", "l/", "l/b", "l/n/", "nope/"} {
		for _, delim := range []string{"", "/"} {
			for _, mk := range []int32{1, 2, 3, 5, 1000} {
				for _, sa := range []string{"", "l/b/1"} {
					in := s3.ListObjectsV2Input{Bucket: b, Prefix: nilIfEmpty(prefix), Delimiter: nilIfEmpty(delim), StartAfter: nilIfEmpty(sa), MaxKeys: aws.Int32(mk)}
					if mk == 3 {
						in.EncodingType = "url"
					}
					g, gerr := flatten(e.gw, in, in.EncodingType == "url")
					d, derr := flatten(e.direct, in, false)
					if gerr != nil || derr != nil || !slices.Equal(g, d) {
						t.Errorf("ListObjectsV2 prefix %q delimiter %q max-keys %d start-after %q encoding %q:\n gateway   %q (%v)\n versitygw %q (%v)",
							prefix, delim, mk, sa, in.EncodingType, g, gerr, d, derr)
					}
				}
			}
		}
	}
	// The raw url encoding: what S3 sends for "l/c d/x", "l/d+e", "l/é".
	res, err := e.gw.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b, Prefix: aws.String("l/"), EncodingType: "url"})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range res.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	for _, want := range []string{"l/c+d/x", "l/d%2Be", "l/%C3%A9", "l/%2541"} {
		if !slices.Contains(keys, want) {
			t.Errorf("url-encoded listing %q lacks %q", keys, want)
		}
	}
}

// TestListMaxKeysZeroNotTruncated: ListObjectsV2 (and v1) with max-keys=0
// answers IsTruncated=true with no NextContinuationToken (no NextMarker).
//
// What was wrong: S3's contract is that a truncated listing carries the
// token to continue with. A client that pages "while IsTruncated, send
// NextContinuationToken" (the common hand-written loop; boto's and the
// SDK's paginators guard against it only by stopping on a missing token)
// sends the same request again and gets the same page forever.
// What S3 and versitygw do: an empty page with IsTruncated=false, KeyCount 0
// and no token (versitygw fixed exactly this in its issue #248).
// Root cause (before the fix): pkg/gateway/list.go:258, `truncated := len(entries) > maxKeys`
// is true for max-keys 0 whenever the prefix holds any key, and the token
// (list.go:303, :309) is the encoding of the last entry, "" on an empty page,
// which omitempty drops.
// Fix (applied): `truncated := maxKeys > 0 && len(entries) > maxKeys` and always
// `entries = entries[:min(len(entries), maxKeys)]` (the selection keeps
// maxKeys+1 entries), or answer max-keys 0 with an empty page without
// listing the origin at all.
func TestListMaxKeysZeroNotTruncated(t *testing.T) {
	e := startSDKEnv(t, putBytes("a", []byte("a")), putBytes("b", []byte("b")))
	ctx := context.Background()
	b := aws.String(e.bucket)
	for name, c := range map[string]*s3.Client{"gateway": e.gw, "versitygw": e.direct} {
		v2, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b, MaxKeys: aws.Int32(0)})
		if err != nil {
			t.Fatalf("%s: ListObjectsV2 max-keys 0: %v", name, err)
		}
		if aws.ToBool(v2.IsTruncated) || len(v2.Contents) != 0 || aws.ToInt32(v2.KeyCount) != 0 {
			t.Errorf("%s: ListObjectsV2 max-keys 0: IsTruncated %v, NextContinuationToken %v, %d keys; want an empty page with IsTruncated false, as S3 answers",
				name, aws.ToBool(v2.IsTruncated), v2.NextContinuationToken, len(v2.Contents))
		}
		v1, err := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: b, MaxKeys: aws.Int32(0)})
		if err != nil {
			t.Fatalf("%s: ListObjects max-keys 0: %v", name, err)
		}
		if aws.ToBool(v1.IsTruncated) || len(v1.Contents) != 0 {
			t.Errorf("%s: ListObjects (v1) max-keys 0: IsTruncated %v, NextMarker %v, %d keys; want IsTruncated false",
				name, aws.ToBool(v1.IsTruncated), v1.NextMarker, len(v1.Contents))
		}
	}
}

// TestSDKContentTypeLikeOrigin: an object stored with a Content-Type and
// user metadata (x-amz-meta-*, such as rclone's mtime) is served with them
// (GetObject, ranged, HeadObject), as versitygw serves it, also right
// after a listing of its prefix through the gateway filled the node's stat
// cache (a listing carries neither). Was: application/octet-stream and no
// metadata for every object.
func TestSDKContentTypeLikeOrigin(t *testing.T) {
	meta := map[string]string{"mtime": "1690000000.123456789", "owner": "etl-job"}
	typed := map[string]string{
		"typed/part-0.parquet": "application/vnd.apache.parquet",
		"typed/index.html":     "text/html; charset=utf-8",
	}
	var puts []s3.PutObjectInput
	for k, ct := range typed {
		in := putBytes(k, randBytes(2000, uint64(len(k))))
		in.ContentType = aws.String(ct)
		in.Metadata = meta
		puts = append(puts, in)
	}
	e := startSDKEnv(t, puts...)
	b := aws.String(e.bucket)
	if _, err := e.gw.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: b, Prefix: aws.String("typed/")}); err != nil {
		t.Fatal(err)
	}
	for k, ct := range typed {
		for what, op := range map[string]func(c *s3.Client) ([]byte, error){
			"GetObject":       getOp(s3.GetObjectInput{Bucket: b, Key: aws.String(k)}),
			"GetObject Range": getOp(s3.GetObjectInput{Bucket: b, Key: aws.String(k), Range: aws.String("bytes=5-99")}),
			"HeadObject":      headOp(s3.HeadObjectInput{Bucket: b, Key: aws.String(k)}),
		} {
			g, d := e.both(op)
			if ds := diff(g, d); len(ds) > 0 {
				t.Errorf("%s %q differs from versitygw:\n  %s", what, k, strings.Join(ds, "\n  "))
			}
			if got := g.raw.Header.Get("Content-Type"); got != ct {
				t.Errorf("%s %q: Content-Type %q, want %q", what, k, got, ct)
			}
			for name, v := range meta {
				h := "X-Amz-Meta-" + name
				if got, origin := g.raw.Header.Get(h), d.raw.Header.Get(h); got != v || origin != v {
					t.Errorf("%s %q: %s %q (versitygw %q), want %q", what, k, h, got, origin, v)
				}
			}
		}
	}
}
