package gateway

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/readpath"
)

// Gateway is an http.Handler serving the read side of the S3 REST API
// (path-style) from a Backend. Create it with New; it is safe for
// concurrent use.
type Gateway struct {
	cfg       Config
	reqPrefix uint32        // random per Gateway, so request ids differ across restarts
	reqSeq    atomic.Uint64 // request counter, the rest of the request id
}

// New returns a Gateway for cfg, or an error wrapping ErrInvalidConfig.
func New(cfg Config) (*Gateway, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.Buckets = maps.Clone(cfg.Buckets)
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &Gateway{cfg: cfg, reqPrefix: binary.BigEndian.Uint32(b[:])}, nil
}

// objectSubresources are query parameters that name another API than
// GetObject/HeadObject on an object; the gateway does not serve them.
var objectSubresources = []string{"acl", "tagging", "torrent", "legal-hold", "retention",
	"attributes", "uploadId", "uploads", "restore", "select", "object-lock"}

// bucketSubresources are query parameters that name another API than
// ListObjects on a bucket.
var bucketSubresources = []string{"acl", "cors", "lifecycle", "policy", "policyStatus",
	"versioning", "versions", "uploads", "tagging", "website", "logging",
	"notification", "replication", "encryption", "object-lock", "accelerate",
	"requestPayment", "ownershipControls", "publicAccessBlock", "analytics",
	"inventory", "metrics", "intelligent-tiering", "delete"}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rid := fmt.Sprintf("%08X%08X", g.reqPrefix, uint32(g.reqSeq.Add(1)))
	h := w.Header()
	h.Set("x-amz-request-id", rid)
	h.Set("Server", "Locus")

	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		g.fail(w, r, rid, errMethodNotAllowed(r.Method), nil)
		return
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	q := r.URL.Query()
	switch {
	case bucket == "":
		g.listBuckets(w, r, rid)
	case key == "":
		if name, ok := hasAny(q, bucketSubresources); ok {
			g.fail(w, r, rid, errNotImplemented("The Locus gateway does not serve the ?"+name+" bucket API; it serves GetObject, HeadObject, ListObjects(V2), HeadBucket and GetBucketLocation."), nil)
			return
		}
		g.bucket(w, r, rid, bucket, q)
	default:
		if name, ok := hasAny(q, objectSubresources); ok {
			g.fail(w, r, rid, errNotImplemented("The Locus gateway does not serve the ?"+name+" object API; it serves GetObject and HeadObject."), nil)
			return
		}
		g.object(w, r, rid, bucket, key, q)
	}
}

func hasAny(q url.Values, names []string) (string, bool) {
	for _, n := range names {
		if _, ok := q[n]; ok {
			return n, true
		}
	}
	return "", false
}

// prefixFor returns the URI prefix of bucket's keys, or ok=false for a
// bucket this gateway does not serve.
func (g *Gateway) prefixFor(bucket string) (string, bool) {
	if len(g.cfg.Buckets) == 0 {
		return "s3://" + bucket + "/", true
	}
	p, ok := g.cfg.Buckets[bucket]
	return p, ok
}

// escapesPrefix reports whether key (or a listing prefix) could leave its
// mapped bucket's URI prefix: with Config.Buckets set, a ".." path segment
// is refused, because some S3-compatible stores (POSIX-backed ones such as
// versitygw) resolve it and would serve /lake/../x from outside the prefix
// that "lake" maps to. Without a mapping every bucket is itself and ".." is
// an ordinary key character, as on AWS.
func (g *Gateway) escapesPrefix(key string) bool {
	if len(g.cfg.Buckets) == 0 {
		return false
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == ".." {
			return true
		}
	}
	return false
}

func errEscapesPrefix(bucket, key string) s3Error {
	return s3Error{Status: http.StatusForbidden, Code: "AccessDenied",
		Message: "Access Denied: key or prefix " + strconv.Quote(key) + " has a \"..\" segment, which could leave the prefix bucket " + strconv.Quote(bucket) + " maps to"}
}

// fail writes e and logs the request: server-side failures at Warn, client
// errors at Debug. A 501 NotImplemented the gateway decides itself (no
// cause: a client's call of an API it does not serve; tools probe
// ?tagging, ?acl, versions) is not a server fault, so it logs at Debug
// too: at Warn a busy client would bury the operator's real warnings. A
// 501 with a cause (a bucket mapped to a URI scheme this node has no
// origin store for: every GET of it fails) is the operator's, at Warn.
func (g *Gateway) fail(w http.ResponseWriter, r *http.Request, rid string, e s3Error, cause error) {
	level := slog.LevelDebug
	if e.Status >= 500 && (e.Status != http.StatusNotImplemented || cause != nil) {
		level = slog.LevelWarn
	}
	g.cfg.Logger.Log(r.Context(), level, "gateway request failed",
		"method", r.Method, "path", r.URL.Path, "status", e.Status, "code", e.Code,
		"request_id", rid, "err", cause)
	e.write(w, r, rid)
}

// object serves GetObject and HeadObject.
func (g *Gateway) object(w http.ResponseWriter, r *http.Request, rid, bucket, key string, q url.Values) {
	var out outcome
	ctx, w, done := g.observe(w, r, &out)
	defer done() // also when an aborted response panics with http.ErrAbortHandler
	if v := q.Get("versionId"); v != "" && v != "null" {
		// Checked here, not in ServeHTTP, so that the GET counts.
		g.fail(w, r, rid, errNotImplemented("The Locus gateway serves the current version of an object only; versionId is not supported."), nil)
		return
	}
	prefix, ok := g.prefixFor(bucket)
	if !ok {
		g.fail(w, r, rid, errNoSuchBucket(bucket), nil)
		return
	}
	if g.escapesPrefix(key) {
		g.fail(w, r, rid, errEscapesPrefix(bucket, key), nil)
		return
	}
	uri := objectURI(prefix, key)
	be := g.cfg.Backend
	if strings.HasSuffix(key, "/") {
		be = g.cfg.DirectoryMarkers // see Config.DirectoryMarkers
	}
	for attempt := 0; ; attempt++ {
		retry := g.serveObjectOnce(ctx, w, r, rid, be, bucket, key, uri, q, attempt < g.cfg.MaxVersionRetries, &out)
		if !retry {
			return
		}
	}
}

// outcome is what a GET's RequestObserver is told besides the status: the
// summary of the Read that served the body and the error that ended the
// request. Each attempt overwrites it, so the last one is reported.
type outcome struct {
	sum readpath.Summary
	err error
}

// observe starts recording a GET of an object when the Backend is a
// RequestObserver. It returns the context for the request's Backend calls,
// the ResponseWriter to answer through (it notes the status), and the
// function the caller defers to report the outcome.
func (g *Gateway) observe(w http.ResponseWriter, r *http.Request, out *outcome) (context.Context, http.ResponseWriter, func()) {
	obs, ok := g.cfg.Backend.(RequestObserver)
	if !ok || r.Method != http.MethodGet {
		return r.Context(), w, func() {}
	}
	ctx, done := obs.ObserveRequest(r.Context())
	sw := &statusWriter{ResponseWriter: w}
	return ctx, sw, func() {
		// Deferred by object: a panic other than the abort of a response
		// (http.ErrAbortHandler, with out.err set) is a failure of the
		// read path, reported as such, then let go on.
		p := recover()
		err := out.err
		if p != nil && p != http.ErrAbortHandler {
			err = fmt.Errorf("gateway: the backend panicked: %v", p)
		}
		if err == nil && sw.status == 0 {
			err = context.Canceled // no answer was sent: only a client gone early gets none
		}
		done(sw.status, out.sum, err)
		if p != nil {
			panic(p)
		}
	}
}

// statusWriter notes the status of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// errClientGone wraps a failed write of the response body: the client
// closed the connection.
var errClientGone = fmt.Errorf("gateway: the client went away: %w", context.Canceled)

// serveObjectOnce does one Stat and one Read through be, and notes in out
// what a RequestObserver is told. It returns true when the object changed
// before any byte was sent and the caller may start over.
func (g *Gateway) serveObjectOnce(ctx context.Context, w http.ResponseWriter, r *http.Request, rid string,
	be Backend, bucket, key, uri string, q url.Values, mayRetry bool, out *outcome) (retry bool) {
	*out = outcome{}
	var before http.Header // the headers as they were, for a retry to start from
	if mayRetry {
		before = w.Header().Clone()
	}
	info, err := be.Stat(ctx, uri)
	rv, canRevalidate := be.(Revalidator)
	if canRevalidate && err == nil && info.Listed {
		// The Stat answer came from a listing, which carries no
		// Content-Type: ask the origin, or serve what is known.
		if fresh, rerr := rv.Revalidate(ctx, uri); rerr == nil || errors.Is(rerr, origin.ErrNotFound) {
			info, err = fresh, rerr
		}
	}
	if canRevalidate && err == nil {
		etag := quoteETag(info.Version)
		switch {
		case precondition(r.Header, etag, info.ModTime) == http.StatusPreconditionFailed:
			// The Backend's Stat may be stale: fail the precondition only
			// against the origin's current answer.
			info, err = rv.Revalidate(ctx, uri)
		case namesOtherETag(r.Header, etag):
			// The client may know a newer version: ask the origin, but
			// if it cannot answer (down, throttling), serve what the
			// cache knows rather than fail a request it could serve.
			if fresh, rerr := rv.Revalidate(ctx, uri); rerr == nil || errors.Is(rerr, origin.ErrNotFound) {
				info, err = fresh, rerr
			}
		}
	}
	if err != nil {
		out.err = err
		if ctx.Err() != nil {
			return false // the client went away
		}
		e := errorFor(err, bucket, key)
		if strings.HasSuffix(key, "/") && errors.Is(err, origin.ErrInvalidURI) {
			// A "directory" key that the Backend takes for a listing
			// prefix (a node without Config.DirectoryMarkers, a file://
			// bucket): tools probe such keys and expect 404.
			e = errNoSuchKey(bucket, key)
		}
		g.fail(w, r, rid, g.notFoundDetail(ctx, r, e, bucket), err)
		return false
	}
	etag := quoteETag(info.Version)
	h := w.Header()
	h.Set("ETag", etag)
	if !info.ModTime.IsZero() {
		h.Set("Last-Modified", info.ModTime.UTC().Format(http.TimeFormat))
	}
	h.Set("Accept-Ranges", "bytes")
	setContentHeaders(h, q, info)
	setMetadata(h, info.Metadata)

	switch precondition(r.Header, etag, info.ModTime) {
	case http.StatusNotModified:
		// RFC 9110 15.4.5: a 304 carries the Cache-Control and Expires a
		// 200 would (a cache refreshes its copy's freshness from them),
		// but not the representation's own metadata.
		for _, k := range []string{"Content-Type", "Content-Encoding", "Content-Disposition", "Content-Language"} {
			h.Del(k)
		}
		w.WriteHeader(http.StatusNotModified)
		return false
	case http.StatusPreconditionFailed:
		g.fail(w, r, rid, errPreconditionFailed(conditionName(r.Header)), nil)
		return false
	}

	size := info.Size
	rng, partial := ByteRange{Start: 0, Length: size}, false
	if pn := q.Get("partNumber"); pn != "" {
		// Objects here are served as one part: part 1 is the whole object,
		// answered as S3 answers a part, 206 with its Content-Range (an
		// empty object has no range to name: 200).
		if n, err := strconv.Atoi(pn); err != nil || n < 1 {
			g.fail(w, r, rid, errInvalidArgument("Part number must be an integer between 1 and 10000, inclusive"), nil)
			return false
		} else if n != 1 {
			g.fail(w, r, rid, s3Error{Status: http.StatusRequestedRangeNotSatisfiable, Code: "InvalidPartNumber", Message: "The requested partnumber is not satisfiable"}, nil)
			return false
		}
		if r.Header.Get("Range") != "" {
			g.fail(w, r, rid, errInvalidArgument("Cannot specify both Range header and partNumber query parameter"), nil)
			return false
		}
		h.Set("x-amz-mp-parts-count", "1")
		partial = size > 0
	} else if rh := r.Header.Get("Range"); rh != "" && rangeApplies(r.Header, etag, info.ModTime) {
		br, ok, err := ParseRange(rh, size)
		switch {
		case errors.Is(err, ErrUnsatisfiableRange):
			h.Set("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
			e := errInvalidRange(rh, size)
			g.fail(w, r, rid, e, err)
			return false
		case errors.Is(err, ErrMalformedRange) && !g.cfg.LenientRange:
			g.fail(w, r, rid, errInvalidArgument("The Range header "+strconv.Quote(rh)+" is malformed: want one range such as bytes=0-1023, bytes=1024- or bytes=-512"), err)
			return false
		case ok:
			rng, partial = br, true
		}
	}

	status := http.StatusOK
	if partial {
		status = http.StatusPartialContent
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", rng.Start, rng.End()-1, size))
	}
	h.Set("Content-Length", strconv.FormatInt(rng.Length, 10))
	if r.Method == http.MethodHead || rng.Length == 0 {
		w.WriteHeader(status)
		return false
	}

	var sent bool     // headers written
	var written int64 // body bytes written
	rc := http.NewResponseController(w)
	sum, err := be.Read(ctx, readpath.Request{
		URI: uri, Offset: rng.Start, Length: rng.Length, ExpectedVersion: info.Version,
	}, func(p []byte) error {
		if written+int64(len(p)) > rng.Length {
			return errTooManyBytes
		}
		if !sent {
			sent = true
			w.WriteHeader(status)
		}
		n, err := w.Write(p)
		written += int64(n)
		if err == nil && written < rng.Length {
			// The backend may pause before its next piece (the next read
			// window comes from the origin): what the server buffered of
			// this one, the headers too for the first, goes out now. A
			// piece of a page or more is written past the buffer anyway,
			// so this costs a syscall only for a short tail.
			if ferr := rc.Flush(); !errors.Is(ferr, http.ErrNotSupported) {
				err = ferr
			}
		}
		if err != nil {
			return fmt.Errorf("%w: %w", errClientGone, err)
		}
		return nil
	})
	if err == nil && written != rng.Length {
		err = fmt.Errorf("%w: backend returned %d bytes of %d", errShortBody, written, rng.Length)
	}
	out.sum, out.err = sum, err
	if err != nil && ctx.Err() != nil && !errors.Is(err, context.Canceled) {
		out.err = fmt.Errorf("%w: %w", errClientGone, err)
	}
	if err != nil {
		if sent {
			// Headers (and some bytes) are out: the only honest signal left
			// is a broken connection, so the client sees a short body
			// rather than wrong bytes.
			if ctx.Err() == nil {
				g.cfg.Logger.Warn("gateway aborting response mid-body",
					"path", r.URL.Path, "request_id", rid, "written", written, "want", rng.Length, "err", err)
			}
			panic(http.ErrAbortHandler)
		}
		if ctx.Err() != nil {
			return false
		}
		if mayRetry && (errors.Is(err, origin.ErrVersionChanged) || errors.Is(err, cache.ErrVersionChanged)) {
			// Nothing of this version's headers may reach the next one's
			// response (its ETag, Content-Type, Content-Encoding,
			// Cache-Control, ..., x-amz-meta-*).
			clear(h)
			for k, v := range before {
				h[k] = v
			}
			return true
		}
		e := errorFor(err, bucket, key)
		if partial && e.Status == http.StatusRequestedRangeNotSatisfiable {
			h.Set("Content-Range", "bytes */"+strconv.FormatInt(size, 10)) // not the 206's
		}
		g.fail(w, r, rid, e, err)
		return false
	}
	g.cfg.Logger.Debug("gateway read", "path", r.URL.Path, "request_id", rid, "bytes", sum.Bytes,
		"local", sum.LocalHitBytes, "peer", sum.PeerHitBytes, "origin", sum.OriginBytes, "node", sum.NodeID)
	return false
}

var (
	errTooManyBytes = errors.New("gateway: backend emitted more bytes than requested")
	errShortBody    = errors.New("gateway: backend returned fewer bytes than requested")
)

// notFoundDetail turns a NoSuchKey into NoSuchBucket when the bucket itself
// is missing. A HEAD of a missing bucket and of a missing key look the same
// to S3 clients (404, no body), and S3's HeadObject cannot tell them apart,
// so the gateway asks the Lister, for GETs only.
func (g *Gateway) notFoundDetail(ctx context.Context, r *http.Request, e s3Error, bucket string) s3Error {
	if e.Code != "NoSuchKey" || r.Method != http.MethodGet || g.cfg.Lister == nil {
		return e
	}
	prefix, _ := g.prefixFor(bucket)
	if !strings.HasPrefix(prefix, "s3://") || strings.Count(prefix, "/") != 3 {
		return e // a bucket mapped onto a key prefix or a directory always "exists"
	}
	err := g.cfg.Lister.List(ctx, prefix, func(origin.Info) error { return errStopListing })
	if errors.Is(err, origin.ErrBucketNotFound) {
		return errNoSuchBucket(bucket)
	}
	return e
}

var errStopListing = errors.New("gateway: stop listing")

func conditionName(h http.Header) string {
	if h.Get("If-Match") != "" {
		return "If-Match"
	}
	return "If-Unmodified-Since"
}

// setMetadata sets an x-amz-meta-* header for each entry of the object's
// user metadata, as S3 does on GetObject and HeadObject. A name that is
// not a plain header token (the origin's metadata may come from anywhere)
// is left out rather than written into the response as is.
func setMetadata(h http.Header, meta map[string]string) {
	for name, v := range meta {
		if name == "" || strings.ContainsFunc(name, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
		}) {
			continue
		}
		h.Set("x-amz-meta-"+name, v)
	}
}

// setContentHeaders sets the standard headers the origin keeps with the
// object, as S3 sends them on GetObject and HeadObject: Content-Type (or
// application/octet-stream when it keeps none, as for files), and
// Content-Encoding, Content-Disposition, Cache-Control, Content-Language
// and Expires when it keeps them. Then it applies the response-* query
// overrides S3 honours on GetObject.
func setContentHeaders(h http.Header, q url.Values, info origin.Info) {
	contentType := info.ContentType
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	h.Set("Content-Type", contentType)
	for header, v := range map[string]string{
		"Content-Encoding":    info.ContentEncoding,
		"Content-Disposition": info.ContentDisposition,
		"Cache-Control":       info.CacheControl,
		"Content-Language":    info.ContentLanguage,
		"Expires":             info.Expires,
	} {
		if v != "" {
			h.Set(header, v)
		}
	}
	for param, header := range map[string]string{
		"response-content-type":        "Content-Type",
		"response-content-disposition": "Content-Disposition",
		"response-content-encoding":    "Content-Encoding",
		"response-content-language":    "Content-Language",
		"response-cache-control":       "Cache-Control",
		"response-expires":             "Expires",
	} {
		if v := q.Get(param); v != "" {
			h.Set(header, v)
		}
	}
}
