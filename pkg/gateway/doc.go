// Package gateway is the cache node's S3-compatible HTTP gateway: the read
// side of the S3 REST API, so unmodified S3 clients (the AWS CLI and SDKs
// with an endpoint override, s3cmd, rclone) read objects through the
// cluster cache.
//
//	gw, err := gateway.New(gateway.Config{Backend: node})   // *node.Node is a Backend
//	http.ListenAndServe("127.0.0.1:7080", gw)
//	aws s3 cp s3://lake/t/part-0.parquet - --endpoint-url http://127.0.0.1:7080
//
// The gateway is a thin translation layer: it parses the request, Stats
// the object through the Backend, evaluates the conditions and the range,
// and streams Backend.Read straight into the response. It holds no state
// beyond its Config and is safe for concurrent use.
//
// # Addressing
//
// Path style only: /{bucket}/{key} names s3://{bucket}/{key}, or, with
// Config.Buckets, any URI prefix (including file:// trees); a mapped
// bucket's keys cannot leave its prefix (a ".." segment is 403, since
// POSIX-backed S3 stores resolve it). A key ending in "/" is a "directory
// marker" (an object named like a prefix, as the S3 console's "Create
// folder" writes): the gateway reads it through Config.DirectoryMarkers
// (a node refuses such URIs as listing prefixes, so a node's gateway reads
// them from the origin, uncached) and answers like S3, 200 for a marker and
// 404 NoSuchKey for a prefix that is no object. Virtual-hosted
// style (bucket.host/key) is not supported: point clients at the gateway
// with path-style addressing (the AWS CLI's addressing_style = path,
// rclone's force_path_style, s3cmd's host_bucket without %(bucket)s);
// with an IP endpoint they all do this already.
//
// # What it answers
//
//	GET/HEAD /{bucket}/{key}      GetObject / HeadObject (Range, conditions, partNumber=1,
//	                              response-* overrides)
//	GET /{bucket}?list-type=2     ListObjectsV2 (prefix, delimiter, max-keys, start-after,
//	                              continuation-token, encoding-type=url)
//	GET /{bucket}                 ListObjects (v1, marker); rclone lists the parent
//	                              "directory" before reading one object
//	HEAD /{bucket}                HeadBucket
//	GET /{bucket}?location        GetBucketLocation (Config.Region; NoSuchBucket when the
//	                              Lister finds no bucket); s3cmd may ask
//	GET /                         ListBuckets (the configured Buckets, else none)
//	PUT, POST, DELETE, ...        405 MethodNotAllowed: the gateway is read-only
//	?acl, ?tagging, versionId...  501 NotImplemented
//
// Listings need a Lister (the Backend, when it implements one); without it
// they answer 501. Each listing page scans the prefix in the origin from
// the start (origin.Store.List has no start-after), so deep paging over a
// huge prefix costs O(pages × objects) origin listing: the listing is here
// for tools that locate one object, not as a listing service.
//
// # Responses
//
// A 200 or 206 carries ETag (the object version, quoted as S3 quotes it),
// Last-Modified (http.TimeFormat), Content-Length, Accept-Ranges: bytes,
// Content-Range on a 206, Content-Type (the object's as the origin keeps
// it, from its stat; application/octet-stream when it keeps none, as for
// files; a stat answer that came from a listing is asked again, since a
// listing carries no content type), the object's Content-Encoding,
// Content-Disposition, Cache-Control, Content-Language and Expires when
// the origin keeps them (from the same stat; a gzip-compressed object
// keeps its Content-Encoding: gzip, also on a range, which is of the
// stored bytes), the object's user metadata as x-amz-meta-* headers, and
// x-amz-request-id (also on errors). The response-* query parameters
// (response-content-type, response-cache-control, ...) override those
// headers, as on S3. A 304 carries ETag, Last-Modified, Cache-Control and
// Expires (RFC 9110 15.4.5: a cache refreshes its copy with them) but no
// Content-Type, -Encoding, -Disposition or -Language; an error document,
// 412 included, carries none of the object's standard headers. A GET
// that starts over after a version change starts from clean headers:
// nothing of the old version's is sent.
//
// partNumber=1 names the whole object (the gateway serves every object as
// one part, x-amz-mp-parts-count 1): 206 with Content-Range bytes
// 0-(size-1)/size, as S3 answers a part (200 for an empty object); any
// other part is 416 InvalidPartNumber.
//
// Range follows S3 (see ParseRange): one range, bytes=a-b, bytes=a- or
// bytes=-n, clamped to the object; a multi-range header is ignored and the
// whole object served, as S3 does. A range starting at or past the end,
// bytes=-0, or any range of an empty object is 416 InvalidRange (with
// Content-Range: bytes */size). A malformed header is 400 InvalidArgument;
// S3 itself ignores malformed headers, which Config.LenientRange restores.
//
// Conditional headers (If-Match, If-None-Match, If-Modified-Since,
// If-Unmodified-Since) are evaluated in RFC 9110 order with S3's
// documented precedence (304 Not Modified, 412 PreconditionFailed), and
// If-Range is honoured. See conditional.go. A Backend's Stat may answer
// from a cache (a node's, for its TTL); when it implements Revalidator, the
// gateway asks the origin again before it fails a precondition, and before
// it answers an If-None-Match or If-Range that names an ETag other than the
// cached one (the client may know a newer version).
//
// Errors are S3 XML documents,
// <Error><Code/><Message/><Resource/><RequestId/></Error>, without a body
// for HEAD:
//
//	404 NoSuchKey / NoSuchBucket    origin.ErrNotFound / ErrBucketNotFound (a GET of a
//	                                missing key asks the Lister whether the bucket exists)
//	416 InvalidRange                unsatisfiable range
//	400 InvalidArgument             malformed Range, bad URI, bad listing parameter
//	403 AccessDenied                origin.ErrAccessDenied, ErrOutsideRoot (file:// escape)
//	412 PreconditionFailed          If-Match / If-Unmodified-Since
//	405 MethodNotAllowed            writes
//	501 NotImplemented              other APIs; no store for the URI scheme
//	503 ServiceUnavailable          origin.ErrUnavailable, ErrTimeout, deadline
//	503 SlowDown                    the object kept changing during the read
//	500 InternalError               anything else
//
// # Streaming and consistency
//
// The body is written as Backend.Read emits it, so a huge range costs the
// gateway no more memory than one emitted piece. Every read is pinned to
// the version its Stat returned (readpath.Request.ExpectedVersion), so the
// ETag sent matches every byte. If the object changes before the first
// byte, the gateway starts over (Config.MaxVersionRetries); once headers
// are out, any failure aborts the connection (panic(http.ErrAbortHandler)),
// so the client sees a truncated body and retries, never wrong or mixed
// bytes under a 200. Middleware around the gateway must let that panic
// through. A client that closes its connection cancels the request's
// context, which every Backend call gets, so a node stops filling the
// read for it.
//
// # Observing
//
// A Backend that implements RequestObserver hears of every GET of an
// object once, with the status sent, whatever the answer (bytes, 304,
// 412, 404, ...) and however many Reads it took (a retry after a version
// change makes two): a cache node counts client reads that way. Failed
// requests are logged at Debug (client errors, and 501 for an API the
// gateway does not serve) or Warn (server-side failures).
//
// # Security
//
// The gateway does not authenticate: SigV4 signatures, presigned-URL
// parameters and credentials are ignored (clients still need dummy
// credentials to sign). It reaches only what the node's origin
// credentials allow and cannot write. Bind it to loopback (the node's
// default) or put it behind the node's TLS/mTLS listener; the gateway
// itself never opens a socket.
package gateway
