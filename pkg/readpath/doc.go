// Package readpath holds the small value types that describe one read through
// the cluster cache: the Request a reader sends and the Summary that says how
// its bytes were served.
//
// It is shared by the cache node (pkg/node), which serves reads, and the
// S3 gateway and Go client (pkg/gateway, pkg/client), which issue them, so
// neither has to import the other. It has no I/O and no state.
//
// The accounting ladder of a Summary:
//
//	Bytes = LocalHitBytes + PeerHitBytes + OriginBytes
//	OriginBytes = sum over causes of Misses[cause].Bytes
//
// LocalHitBytes were served from the serving node's cache, PeerHitBytes from
// the cache of another node that owns the pages (a peer read), OriginBytes
// from the object store, each miss with its cause: Cold (never seen),
// Capacity (seen, not kept: evicted, or refused), Invalidated (cached
// under another version), OwnerUnavailable (the owner could not be
// reached, so the origin served it without caching), Corrupt (a cached
// page failed its checksum).
//
// ToProto and FromProto convert a Summary to and from the wire message
// cachev1.ReadSummary.
//
// Code and FromStatus are the one table between the read path's sentinel
// errors (readpath's, pkg/origin's, pkg/cache's, the context's) and the
// gRPC status codes of the CacheService: the node answers a failed read
// with status.Error(Code(err), ...), and a reader of the service (the
// client, a node reading from a peer) turns the status back with
// FromStatus, so errors.Is(err, origin.ErrNotFound) holds on both sides.
package readpath
