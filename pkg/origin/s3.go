package origin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// S3Config configures an S3Store. The zero value (after validation) talks
// to AWS S3 with the standard credential chain.
type S3Config struct {
	// Endpoint overrides the endpoint URL, e.g. "http://127.0.0.1:9000" for
	// an S3-compatible store. Empty: AWS's own endpoint resolution (also
	// honours AWS_ENDPOINT_URL). Flag --origin-s3-endpoint.
	Endpoint string
	// Region signs requests. Empty: from the standard chain (AWS_REGION,
	// ~/.aws/config), else "us-east-1", which S3-compatible stores accept.
	// Flag --origin-s3-region.
	Region string
	// PathStyle addresses buckets as http://host/bucket/key instead of
	// http://bucket.host/key; most S3-compatible stores need it.
	// Flag --origin-s3-path-style.
	PathStyle bool

	// AccessKeyID, SecretAccessKey and SessionToken, when AccessKeyID is
	// set, replace the standard credential chain (environment, shared
	// files, SSO, web identity, container and EC2 roles). For tests and
	// stores with static keys; production uses the chain.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string

	// MaxAttempts bounds the HTTP attempts per request (first try
	// included). Retried: 5xx, 429 and S3's throttling codes (SlowDown),
	// connection errors and per-attempt timeouts, with exponential backoff
	// and full jitter. Not retried: 4xx such as 404, 403, 412. The SDK's
	// client-side retry quota also applies: when most requests fail, the
	// store fails fast instead of multiplying load. Default 5.
	MaxAttempts int
	// BaseBackoff is the first retry's mean delay for server errors; each
	// retry doubles it, up to MaxBackoff. Throttling errors always start
	// at 1s (SDK rule). Default 100ms.
	BaseBackoff time.Duration
	// MaxBackoff caps one delay between attempts. Default 5s.
	MaxBackoff time.Duration
	// Timeout bounds one Store call (one Stat, one ReadAt, one page of a
	// List), all attempts, backoff and body transfer included. Errors wrap
	// ErrTimeout and context.DeadlineExceeded. Default 30s.
	Timeout time.Duration
	// ResponseHeaderTimeout bounds the wait for response headers of one
	// attempt, and a GET body's wait for its next bytes (a connection
	// that stalls mid-body); an attempt past it is retried (a body is
	// resumed), within MaxAttempts and Timeout. Default 10s.
	ResponseHeaderTimeout time.Duration
	// MaxIdleConnsPerHost is the number of kept-alive connections to the
	// endpoint: set it to at least the number of concurrent range GETs so
	// each one does not pay a new TCP (and TLS) handshake. Default 256.
	MaxIdleConnsPerHost int

	// HTTPClient, if set, replaces the tuned HTTP client built from the
	// fields above (MaxIdleConnsPerHost and ResponseHeaderTimeout's bound
	// on headers are then ignored; its bound on a stalled body is not). With AWS_CA_BUNDLE set, the SDK can only install the bundle
	// into an *awshttp.BuildableClient and refuses other clients.
	HTTPClient aws.HTTPClient
	// Observe, if set, is called after every HTTP attempt (retries
	// included), e.g. to count locus_origin_requests_total{status}. It runs
	// on the request's goroutine and must not block.
	Observe func(Attempt)
	// Logger receives the AWS SDK's own log lines (a credential provider
	// falling back to IMDSv1, say), as warnings with component=aws-sdk,
	// so they keep the daemon's log format. Default: slog.Default().
	Logger *slog.Logger
}

// Attempt describes one HTTP attempt made by an S3Store.
type Attempt struct {
	Method   string        // GET, HEAD
	Status   int           // HTTP status; 0 when no response arrived
	Err      error         // transport error, or nil
	Duration time.Duration // until response headers (or the error)
}

// Defaults for S3Config.
const (
	DefaultS3MaxAttempts           = 5
	DefaultS3BaseBackoff           = 100 * time.Millisecond
	DefaultS3MaxBackoff            = 5 * time.Second
	DefaultS3Timeout               = 30 * time.Second
	DefaultS3ResponseHeaderTimeout = 10 * time.Second
	DefaultS3MaxIdleConnsPerHost   = 256
)

func (c *S3Config) validate() error {
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultS3MaxAttempts
	}
	if c.BaseBackoff == 0 {
		c.BaseBackoff = DefaultS3BaseBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultS3MaxBackoff
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultS3Timeout
	}
	if c.ResponseHeaderTimeout == 0 {
		c.ResponseHeaderTimeout = DefaultS3ResponseHeaderTimeout
	}
	if c.MaxIdleConnsPerHost == 0 {
		c.MaxIdleConnsPerHost = DefaultS3MaxIdleConnsPerHost
	}
	switch {
	case c.MaxAttempts < 1:
		return fmt.Errorf("origin: S3Config.MaxAttempts = %d; want >= 1", c.MaxAttempts)
	case c.BaseBackoff < 0 || c.MaxBackoff < 0 || c.Timeout < 0 || c.ResponseHeaderTimeout < 0:
		return errors.New("origin: S3Config durations must not be negative")
	case c.MaxBackoff < c.BaseBackoff:
		return fmt.Errorf("origin: S3Config.MaxBackoff (%s) is below BaseBackoff (%s)", c.MaxBackoff, c.BaseBackoff)
	case c.MaxIdleConnsPerHost < 0:
		return errors.New("origin: S3Config.MaxIdleConnsPerHost must not be negative")
	case c.AccessKeyID != "" && c.SecretAccessKey == "":
		return errors.New("origin: S3Config.AccessKeyID is set without SecretAccessKey")
	case c.AccessKeyID == "" && (c.SecretAccessKey != "" || c.SessionToken != ""):
		return errors.New("origin: S3Config.SecretAccessKey/SessionToken are set without AccessKeyID")
	}
	if c.Endpoint != "" && !strings.HasPrefix(c.Endpoint, "http://") && !strings.HasPrefix(c.Endpoint, "https://") {
		return fmt.Errorf("origin: S3Config.Endpoint %q must start with http:// or https://", c.Endpoint)
	}
	return nil
}

// S3Store serves s3:// URIs with aws-sdk-go-v2.
//
// Versions are ETags. ReadAt sends If-Match with the ETag and also checks
// the ETag of the response, so bytes of a rewritten object are never
// returned under the old version (even from a store that ignores If-Match);
// a response without an ETag is refused with ErrNoVersion.
//
// Flexible checksums: recent SDKs compute request checksums and validate
// response checksums by default, sending headers that some S3-compatible
// stores reject, and a ranged GET has no whole-object checksum to validate
// anyway. The store sets both to "when required".
type S3Store struct {
	cfg    S3Config
	client *s3.Client
}

// NewS3Store builds a client. It loads the standard AWS configuration
// (environment, shared files) but makes no request.
func NewS3Store(ctx context.Context, cfg S3Config) (*S3Store, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	httpClient := cfg.HTTPClient
	if httpClient == nil {
		httpClient = awshttp.NewBuildableClient().
			WithDialerOptions(func(d *net.Dialer) { d.Timeout = 5 * time.Second }).
			WithTransportOptions(func(t *http.Transport) {
				t.MaxIdleConns = 4 * cfg.MaxIdleConnsPerHost
				t.MaxIdleConnsPerHost = cfg.MaxIdleConnsPerHost
				t.IdleConnTimeout = 90 * time.Second
				t.ResponseHeaderTimeout = cfg.ResponseHeaderTimeout
				t.DisableCompression = true // a Range applies to stored bytes
			})
	}
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(httpClient),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.MaxAttempts
				o.MaxBackoff = cfg.MaxBackoff
				o.BaseDelay = cfg.BaseBackoff
			})
		}),
		config.WithLogger(sdkLogger(cfg.Logger)),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("origin: cannot load AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		if cfg.Observe != nil {
			// Wrapped here, not before loading: the loader configures
			// the transport (custom CA bundles) through BuildableClient.
			o.HTTPClient = observingClient{inner: o.HTTPClient, observe: cfg.Observe}
		}
	})
	return &S3Store{cfg: cfg, client: client}, nil
}

// Client returns the underlying SDK client (for tests and tools).
func (s *S3Store) Client() *s3.Client { return s.client }

type observingClient struct {
	inner   aws.HTTPClient
	observe func(Attempt)
}

func (c observingClient) Do(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := c.inner.Do(r)
	a := Attempt{Method: r.Method, Err: err, Duration: time.Since(start)}
	if resp != nil {
		a.Status = resp.StatusCode
	}
	c.observe(a)
	return resp, err
}

func (s *S3Store) object(uri string) (URI, error) {
	u, err := ParseURI(uri)
	if err != nil {
		return URI{}, err
	}
	if u.Scheme != SchemeS3 {
		return URI{}, fmt.Errorf("%w: the S3 store cannot serve %q", ErrUnsupportedScheme, uri)
	}
	// A key ending in "/" is an object to S3 (a "directory marker", as
	// the S3 console's "Create folder" writes), so it is asked for like
	// any other: the store answers 404 for a prefix that is not one.
	if u.Key == "" {
		return URI{}, fmt.Errorf("%w: %q names no object (empty key)", ErrInvalidURI, uri)
	}
	return u, nil
}

// withTimeout derives the context bounding one Store call.
func (s *S3Store) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.Timeout)
}

// NormalizeETag returns the ETag in quoted form, as HeadObject and
// GetObject return it and If-Match expects it.
func NormalizeETag(etag string) string {
	if etag == "" || strings.HasPrefix(etag, `"`) || strings.HasPrefix(etag, `W/"`) {
		return etag
	}
	return `"` + etag + `"`
}

// ifMatchable reports whether version can go in If-Match: a weak ETag
// (W/"...", from some S3-compatible stores and proxies) never matches
// there (RFC 9110 compares If-Match strongly), so a read of it is checked
// by the response's ETag alone, as for a store that ignores If-Match.
func ifMatchable(version string) bool {
	return version != "" && !strings.HasPrefix(version, "W/")
}

// Stat implements Store with HeadObject.
func (s *S3Store) Stat(ctx context.Context, uri string) (Info, error) {
	u, err := s.object(uri)
	if err != nil {
		return Info{}, err
	}
	opCtx, cancel := s.withTimeout(ctx)
	defer cancel()
	return s.head(opCtx, ctx, u, "")
}

func (s *S3Store) head(opCtx, parent context.Context, u URI, ifMatch string) (Info, error) {
	in := &s3.HeadObjectInput{Bucket: aws.String(u.Bucket), Key: aws.String(u.Key)}
	if ifMatchable(ifMatch) {
		in.IfMatch = aws.String(ifMatch)
	}
	out, err := s.client.HeadObject(opCtx, in)
	if err != nil {
		return Info{}, s.mapErr(parent, "HEAD", u.String(), err)
	}
	info := Info{URI: u.String(), Size: aws.ToInt64(out.ContentLength), Version: NormalizeETag(aws.ToString(out.ETag)),
		ContentType:        aws.ToString(out.ContentType),
		ContentEncoding:    aws.ToString(out.ContentEncoding),
		ContentDisposition: aws.ToString(out.ContentDisposition),
		CacheControl:       aws.ToString(out.CacheControl),
		ContentLanguage:    aws.ToString(out.ContentLanguage),
		Expires:            aws.ToString(out.ExpiresString),
	}
	if len(out.Metadata) > 0 {
		info.Metadata = out.Metadata
	}
	if out.LastModified != nil {
		info.ModTime = *out.LastModified
	}
	if info.Version == "" {
		return Info{}, fmt.Errorf("%w: HEAD %s", ErrNoVersion, u)
	}
	if out.ContentLength == nil || *out.ContentLength < 0 {
		// HTTP lets a HEAD answer leave it out; reading it as 0 would
		// serve the object empty under its real version.
		return Info{}, fmt.Errorf("origin: s3 HEAD %s: the store sent no Content-Length, so the object's size is unknown", u)
	}
	return info, nil
}

// ReadAt implements Store with a ranged GetObject carrying If-Match.
// A response body that breaks off early, or sends nothing for
// ResponseHeaderTimeout, is resumed (same If-Match) for the missing bytes,
// within MaxAttempts and Timeout; a body shorter than its Content-Range
// promised is never returned as data.
func (s *S3Store) ReadAt(ctx context.Context, uri, version string, p []byte, off int64) (int, error) {
	u, err := s.object(uri)
	if err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, fmt.Errorf("%w: offset %d of %s", ErrRange, off, uri)
	}
	if len(p) == 0 {
		return 0, nil
	}
	version = NormalizeETag(version)
	opCtx, cancel := s.withTimeout(ctx)
	defer cancel()
	n := 0
	for attempt := 1; ; attempt++ {
		m, etag, err := s.getRange(opCtx, ctx, u, version, p[n:], off+int64(n))
		n += m
		if version == "" {
			// An unpinned read is pinned to the version of its first
			// bytes: a resumed piece must not be of another version.
			version = etag
		}
		var be *bodyError
		if err == nil || err == io.EOF {
			return n, err
		}
		if err == errPartialRange {
			attempt-- // progress, not a failure: ask for the rest
			continue
		}
		if !errors.As(err, &be) {
			if errors.Is(err, ErrVersionChanged) {
				return 0, err
			}
			return n, err
		}
		if attempt >= s.cfg.MaxAttempts {
			if errors.Is(be.err, errBodyStalled) {
				// A hanging store, as when every attempt waits past
				// ResponseHeaderTimeout for headers.
				return n, fmt.Errorf("%w: GET %s: response body broke off or stalled %d times, last: %w", ErrTimeout, uri, attempt, errors.Join(context.DeadlineExceeded, be.err))
			}
			return n, fmt.Errorf("%w: GET %s: response body broke off %d times, last: %w", ErrUnavailable, uri, attempt, be.err)
		}
		if err := sleepCtx(opCtx, s.backoff(attempt)); err != nil {
			return n, s.mapErr(ctx, "GET", uri, err)
		}
	}
}

func (s *S3Store) backoff(attempt int) time.Duration {
	d := s.cfg.BaseBackoff << min(attempt-1, 20)
	if d > s.cfg.MaxBackoff || d <= 0 {
		d = s.cfg.MaxBackoff
	}
	return time.Duration(rand.Int64N(int64(d) + 1)) // full jitter
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errBodyStalled: no byte of a response body arrived for
// ResponseHeaderTimeout; the request was abandoned (and is resumed).
var errBodyStalled = errors.New("origin: the response body stalled (no bytes for ResponseHeaderTimeout)")

// stallReader reads a response body and abandons its request (cancels
// its context, which closes the connection and fails the pending Read)
// when one Read waits longer than idle, so that a stalled connection is
// resumed like a broken one instead of holding the call until Timeout.
type stallReader struct {
	r       io.Reader
	idle    time.Duration
	timer   *time.Timer // nil when idle is 0 (no bound)
	stalled atomic.Bool // the timer fired: the request was abandoned
}

func newStallReader(r io.Reader, idle time.Duration, abandon context.CancelFunc) *stallReader {
	sr := &stallReader{r: r, idle: idle}
	if idle > 0 {
		sr.timer = time.AfterFunc(idle, func() { sr.stalled.Store(true); abandon() })
	}
	return sr
}

func (sr *stallReader) Read(p []byte) (int, error) {
	if sr.timer != nil {
		sr.timer.Reset(sr.idle)
	}
	n, err := sr.r.Read(p)
	if err != nil && sr.stalled.Load() {
		err = errBodyStalled
	}
	return n, err
}

func (sr *stallReader) stop() {
	if sr.timer != nil {
		sr.timer.Stop()
	}
}

// bodyError marks a failure while reading a response body (retryable by
// ReadAt's own loop; the SDK only retries until headers arrive).
type bodyError struct{ err error }

func (e *bodyError) Error() string { return "reading response body: " + e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// getRange performs one GetObject for p at off and reads its body into p;
// etag is the version the store sent.
func (s *S3Store) getRange(opCtx, parent context.Context, u URI, version string, p []byte, off int64) (n int, etag string, err error) {
	n, err = s.getRangeBody(opCtx, parent, u, version, p, off, &etag)
	return n, etag, err
}

func (s *S3Store) getRangeBody(opCtx, parent context.Context, u URI, version string, p []byte, off int64, etag *string) (int, error) {
	rng := "bytes=" + strconv.FormatInt(off, 10) + "-" + strconv.FormatInt(off+int64(len(p))-1, 10)
	in := &s3.GetObjectInput{Bucket: aws.String(u.Bucket), Key: aws.String(u.Key), Range: aws.String(rng)}
	if ifMatchable(version) {
		in.IfMatch = aws.String(version)
	}
	// The request's own context, cancelled to abandon a stalled body.
	reqCtx, abandon := context.WithCancel(opCtx)
	defer abandon()
	out, err := s.client.GetObject(reqCtx, in)
	if err != nil {
		if httpStatus(err) == http.StatusRequestedRangeNotSatisfiable {
			return 0, s.afterRangeNotSatisfiable(opCtx, parent, u, version, off)
		}
		return 0, s.mapErr(parent, "GET", u.String()+" "+rng, err)
	}
	defer out.Body.Close()
	body := newStallReader(out.Body, s.cfg.ResponseHeaderTimeout, abandon)
	defer body.stop()
	got := NormalizeETag(aws.ToString(out.ETag))
	*etag = got
	switch {
	case version == "":
	case got == "":
		// Nothing says these bytes are of version: a proxy's own page,
		// or a rewrite behind a store that ignores If-Match.
		return 0, fmt.Errorf("%w: GET %s: asked for ETag %s, the store's answer has no ETag", ErrNoVersion, u, version)
	case got != version:
		return 0, fmt.Errorf("%w: GET %s: asked for ETag %s, store sent %s", ErrVersionChanged, u, version, got)
	}
	want := int64(len(p)) // bytes expected in this body
	atEnd := true         // does the body end at the end of the object?
	if cr := aws.ToString(out.ContentRange); cr != "" {
		start, end, total, ok := parseContentRange(cr)
		if !ok || start != off || end < start || (total >= 0 && end >= total) {
			return 0, fmt.Errorf("origin: GET %s %s: unexpected Content-Range %q", u, rng, cr)
		}
		want = min(want, end-start+1)
		// An unknown total ("*") does not say the body ends the object:
		// a short body is a partial one, and a read past the end gets
		// 416, which settles it (afterRangeNotSatisfiable).
		atEnd = total >= 0 && end+1 == total
	} else {
		if rawStatus(out.ResultMetadata) == http.StatusPartialContent {
			return 0, fmt.Errorf("origin: GET %s %s: 206 Partial Content without Content-Range: cannot tell where the bytes start", u, rng)
		}
		// The server ignored Range and sent the whole object (200).
		if out.ContentLength == nil || *out.ContentLength < 0 {
			return 0, fmt.Errorf("origin: GET %s %s: the store ignored Range and sent no Content-Length", u, rng)
		}
		total := *out.ContentLength
		if off >= total {
			return 0, io.EOF
		}
		if _, err := io.CopyN(io.Discard, body, off); err != nil {
			if opCtx.Err() != nil {
				return 0, s.mapErr(parent, "GET", u.String()+" "+rng, opCtx.Err())
			}
			return 0, &bodyError{err}
		}
		want = min(want, total-off)
	}
	n, err := io.ReadFull(body, p[:want])
	if err != nil {
		if opCtx.Err() != nil {
			return n, s.mapErr(parent, "GET", u.String()+" "+rng, opCtx.Err())
		}
		return n, &bodyError{err}
	}
	if n < len(p) {
		if !atEnd {
			// The store sent less than asked without reaching the end
			// (some cap the size of one range).
			return n, errPartialRange
		}
		return n, io.EOF
	}
	return n, nil
}

// rawStatus is the HTTP status of a response, 0 if unknown.
func rawStatus(md middleware.Metadata) int {
	if r, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && r != nil && r.Response != nil {
		return r.StatusCode
	}
	return 0
}

// errPartialRange: a response held fewer bytes than asked for, short of
// the end of the object; ReadAt asks for the rest.
var errPartialRange = errors.New("origin: partial range")

// afterRangeNotSatisfiable handles 416, which S3 sends when off is at or
// past the end. The object may have shrunk, and not every store checks
// If-Match before Range, so a HEAD with If-Match tells a genuine end of
// object (io.EOF) from a changed object (ErrVersionChanged).
func (s *S3Store) afterRangeNotSatisfiable(opCtx, parent context.Context, u URI, version string, off int64) error {
	info, err := s.head(opCtx, parent, u, version)
	if err != nil {
		return err
	}
	if version != "" && info.Version != version {
		// A store that ignores If-Match: the object changed (shrank).
		return fmt.Errorf("%w: GET %s at offset %d: asked for ETag %s, the object is now %s of %d bytes", ErrVersionChanged, u, off, version, info.Version, info.Size)
	}
	if off >= info.Size {
		return io.EOF
	}
	return fmt.Errorf("%w: store answered 416 for offset %d of %s, which has %d bytes", ErrRange, off, u, info.Size)
}

// parseContentRange parses "bytes start-end/total" (total may be "*",
// reported as -1).
func parseContentRange(s string) (start, end, total int64, ok bool) {
	s, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, tot, found := strings.Cut(s, "/")
	if !found {
		return 0, 0, 0, false
	}
	a, b, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, 0, false
	}
	var err1, err2, err3 error
	start, err1 = strconv.ParseInt(a, 10, 64)
	end, err2 = strconv.ParseInt(b, 10, 64)
	total = -1
	if tot != "*" {
		total, err3 = strconv.ParseInt(tot, 10, 64)
	}
	return start, end, total, err1 == nil && err2 == nil && err3 == nil
}

// List implements Store with ListObjectsV2. Keys ending in "/" (folder
// markers) are skipped.
//
// It asks for EncodingType=url, so a key with characters XML 1.0 cannot
// carry (control characters) comes back under its real name rather than
// with U+FFFD in their place, and decodes the keys itself: aws-sdk-go-v2
// does not. Keys are decoded only when the answer says it is encoded
// (its EncodingType element): a store that ignores the parameter
// (versitygw 1.8 does) sends raw keys, in which "%" and "+" are literal.
//
// An answer List cannot trust fails the listing rather than end it early
// or loop: a truncated page without a NextContinuationToken, a token the
// store sent before, an entry without a Size.
func (s *S3Store) List(ctx context.Context, prefix string, fn func(Info) error) error {
	u, err := ParseURI(prefix)
	if err != nil {
		return err
	}
	if u.Scheme != SchemeS3 {
		return fmt.Errorf("%w: the S3 store cannot list %q", ErrUnsupportedScheme, prefix)
	}
	in := &s3.ListObjectsV2Input{Bucket: aws.String(u.Bucket), EncodingType: types.EncodingTypeUrl}
	if u.Key != "" {
		in.Prefix = aws.String(u.Key)
	}
	// Not the SDK's paginator: it takes a truncated page without a
	// NextContinuationToken for the last one (a silently partial
	// listing) and follows a token it was given before for ever.
	tokens := make(map[string]bool) // continuation tokens followed so far
	for {
		opCtx, cancel := s.withTimeout(ctx)
		page, err := s.client.ListObjectsV2(opCtx, in)
		cancel()
		if err != nil {
			return s.mapErr(ctx, "LIST", prefix, err)
		}
		for _, obj := range page.Contents {
			key := aws.ToString(obj.Key)
			if page.EncodingType == types.EncodingTypeUrl {
				if key, err = url.QueryUnescape(key); err != nil {
					return fmt.Errorf("%w: s3 LIST %s: the store sent the url-encoded key %q, which does not decode: %w",
						ErrRejected, prefix, aws.ToString(obj.Key), err)
				}
			}
			if strings.HasSuffix(key, "/") {
				continue
			}
			if obj.Size == nil {
				return fmt.Errorf("origin: s3 LIST %s: the store listed %q without its Size", prefix, key)
			}
			info := Info{
				URI:     URI{Scheme: SchemeS3, Bucket: u.Bucket, Key: key}.String(),
				Size:    aws.ToInt64(obj.Size),
				Version: NormalizeETag(aws.ToString(obj.ETag)),
				Listed:  true,
			}
			if obj.LastModified != nil {
				info.ModTime = *obj.LastModified
			}
			if err := fn(info); err != nil {
				return err
			}
		}
		if !aws.ToBool(page.IsTruncated) {
			return nil
		}
		next := aws.ToString(page.NextContinuationToken)
		switch {
		case next == "":
			return fmt.Errorf("origin: s3 LIST %s: the store sent a truncated page without a NextContinuationToken: cannot list the rest", prefix)
		case tokens[next]:
			return fmt.Errorf("origin: s3 LIST %s: the store sent the continuation token %q a second time: the listing would not end", prefix, next)
		}
		tokens[next] = true
		in.ContinuationToken = aws.String(next)
	}
}

func httpStatus(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// mapErr converts an SDK error into one wrapping this package's sentinels.
// parent is the caller's context: when it is done the error is the
// caller's cancellation, not a timeout of ours.
func (s *S3Store) mapErr(parent context.Context, op, what string, err error) error {
	if perr := parent.Err(); perr != nil && errors.Is(err, perr) {
		return fmt.Errorf("origin: s3 %s %s: %w", op, what, err)
	}
	code := ""
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code = apiErr.ErrorCode()
	}
	status := httpStatus(err)
	switch {
	case code == "NoSuchBucket":
		return fmt.Errorf("%w: s3 %s %s: %w", ErrBucketNotFound, op, what, err)
	case code == "NoSuchKey" || code == "NotFound" || status == http.StatusNotFound:
		return fmt.Errorf("%w: s3 %s %s: %w", ErrNotFound, op, what, err)
	case code == "PreconditionFailed" || status == http.StatusPreconditionFailed:
		return fmt.Errorf("%w: s3 %s %s: %w", ErrVersionChanged, op, what, err)
	case status == http.StatusUnauthorized || status == http.StatusForbidden || code == "AccessDenied" ||
		code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch":
		return fmt.Errorf("%w: s3 %s %s (check the credentials from the AWS chain): %w", ErrAccessDenied, op, what, err)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		// The call's Timeout expired, or every attempt timed out waiting
		// for the store (ResponseHeaderTimeout): a hanging store.
		return fmt.Errorf("%w: s3 %s %s (timeout %s): %w", ErrTimeout, op, what, s.cfg.Timeout, errors.Join(context.DeadlineExceeded, err))
	case status >= 500 || status == http.StatusTooManyRequests || isRetryExhausted(err) || isNetError(err):
		// The store kept failing for every attempt allowed, the retry
		// quota ran out, or the store cannot be reached.
		return fmt.Errorf("%w: s3 %s %s: %w", ErrUnavailable, op, what, err)
	case status >= 300 && status < 400:
		// AWS answers 301 to a request sent to another region's
		// endpoint than the bucket's, naming the bucket's region.
		hint := ""
		var re *awshttp.ResponseError
		if errors.As(err, &re) && re.Response != nil {
			if region := re.Response.Header.Get("x-amz-bucket-region"); region != "" {
				hint = "; the bucket is in " + region
			}
		}
		return fmt.Errorf("%w: s3 %s %s (HTTP %d %s: the store redirects the request: --origin-s3-region or --origin-s3-endpoint is wrong%s): %w",
			ErrRejected, op, what, status, code, hint, err)
	case status >= 400 && status < 500:
		return fmt.Errorf("%w: s3 %s %s (HTTP %d %s: the key may not be valid for this store, or --origin-s3-region/--origin-s3-endpoint is wrong): %w",
			ErrRejected, op, what, status, code, err)
	}
	return fmt.Errorf("origin: s3 %s %s: %w", op, what, err)
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

func isRetryExhausted(err error) bool {
	var me *retry.MaxAttemptsError
	var qe ratelimit.QuotaExceededError
	return errors.As(err, &me) || errors.As(err, &qe)
}

// isNetError reports a failure to reach the store (refused, reset, DNS)
// that is not a timeout.
func isNetError(err error) bool {
	var ne net.Error
	var send *smithyhttp.RequestSendError
	return (errors.As(err, &ne) || errors.As(err, &send)) && !isTimeout(err)
}

// sdkLogger adapts log to the AWS SDK's logger, so that the SDK writes
// nothing to stderr of its own (its default logger prints plain text,
// which breaks a JSON log). A warning stays a warning; debug lines stay
// debug.
func sdkLogger(log *slog.Logger) logging.Logger {
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "aws-sdk")
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		level := slog.LevelWarn
		if c == logging.Debug {
			level = slog.LevelDebug
		}
		log.Log(context.Background(), level, fmt.Sprintf(format, v...))
	})
}
