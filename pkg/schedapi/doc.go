// Package schedapi is the scheduler's JSON API: types and codec shared by
// the service and its clients.
//
// The service (pkg/scheduler) serves these messages; its Go client
// (pkg/client) and test harnesses send them. The package imports only the
// standard library, so an executor that embeds pkg/client does not link
// the scheduler's etcd client, logger or gossip library (pkg/client's
// TestImportGraph checks it).
//
// # The calls
//
//	POST /v1/place            PlaceRequest → Placement
//	POST /v1/place/batch      PlaceBatchRequest → PlaceBatchResponse
//	POST /v1/complete         CompleteRequest → CompleteResponse
//	POST /v1/complete/batch   CompleteBatchRequest → CompleteBatchResponse
//	GET  /v1/jobs/{job}       JobCounters (GET /v1/counters: every job)
//	GET  /v1/jobs             JobsResponse
//	GET  /v1/ring             RingStatus
//	GET  /v1/lost             LostResponse
//
// Every error answer has an ErrorResponse body, {"error": "...", "code":
// "..."}, whose code names one of the sentinel errors (ErrOfCode) and
// sets the status (StatusOfCode): bad_request and not_found 400 (an
// unknown job or task is bad input, like a negative offset), unauthorized
// 401, conflict 409, too_large 413, no_node, not_leader and unavailable
// 503. A client tells an unknown job from other bad input by the code, not
// the status; it reads a 404 without a code (a scheduler from before the
// code field) as ErrNotFound too. The one 404 is a path the API does not
// have (code no_endpoint); a path it has, asked with another method, is
// a 405 (code method_not_allowed). The Validate methods check a request the way the
// scheduler does (errors wrap ErrBadRequest), so a client may check before
// sending: a split's URI with objuri.CheckObject, as the cache nodes check
// their reads' (the package's one import outside the standard library, a
// leaf that has none).
//
// # The codec
//
// encoding/json decodes with reflection at about 100 MB/s; at a 1000-task
// batch that was most of the scheduler's time. So the hot calls have a
// small codec of their own, in both directions:
//
//	           request                      answer
//	client     AppendPlaceBatchRequest      DecodePlaceBatchResponse
//	           AppendCompleteBatchRequest   DecodeCompleteBatchResponse
//	server     DecodePlaceRequest, ...      AppendPlacementResponse, ...
//
// The encoders write exactly the bytes encoding/json writes (json.Marshal
// for requests, json.Encoder, with its final newline, for answers). The
// decoders take a fast path for the plain form every encoder writes (keys
// exactly the field names, each once; strings without escapes; integers
// without fraction or exponent) and fall back to encoding/json for
// anything else: strictly for requests (DecodeJSON: unknown fields and
// trailing data are ErrBadRequest), leniently for answers (json.Unmarshal
// ignores unknown fields, so a later scheduler may add some). The fast path
// never changes what a body means: whenever it accepts, encoding/json gives
// the same value (FuzzFastDecode and FuzzResponseDecode check it
// differentially, TestFastEncode and TestClientCodec byte for byte).
//
// # Threading
//
// Everything here is a pure function of its arguments: safe for
// concurrent use.
package schedapi
