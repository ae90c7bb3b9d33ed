package readpath

import (
	"errors"
	"fmt"
	"math"

	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// ErrInvalidRequest is returned by Request.Validate for an empty URI, a
// negative offset, a length below 1, or an offset+length that overflows int64.
var ErrInvalidRequest = errors.New("readpath: invalid request")

// Request is one read of bytes [Offset, Offset+Length) of an object.
type Request struct {
	// URI names the object: s3://bucket/key or file:///abs/path.
	URI string
	// Offset is the first byte; >= 0.
	Offset int64
	// Length is the number of bytes; > 0. A range past the end of the
	// object is truncated to the end.
	Length int64
	// ExpectedVersion, if set, makes the read fail (wrapping
	// origin.ErrVersionChanged) unless the object's current version equals
	// it. Empty means the current version.
	ExpectedVersion string
	// Peer marks a read forwarded by another cache node to the owner of the
	// pages: the receiver serves it from its own cache (or the origin) and
	// never forwards it again.
	Peer bool
}

// Validate checks the request's shape (not whether the object exists).
func (r Request) Validate() error {
	switch {
	case r.URI == "":
		return fmt.Errorf("%w: empty uri", ErrInvalidRequest)
	case r.Offset < 0:
		return fmt.Errorf("%w: negative offset %d", ErrInvalidRequest, r.Offset)
	case r.Length < 1:
		return fmt.Errorf("%w: length %d, want > 0", ErrInvalidRequest, r.Length)
	case r.Offset > math.MaxInt64-r.Length:
		return fmt.Errorf("%w: offset %d + length %d overflows", ErrInvalidRequest, r.Offset, r.Length)
	}
	return nil
}

// End returns Offset+Length (the first byte past the requested range).
func (r Request) End() int64 { return r.Offset + r.Length }

// Source says where bytes were served from.
type Source int

// The sources, in the order of the metric label values.
const (
	// Local: the serving node's cache.
	Local Source = iota
	// Peer: another node's cache (a peer read that hit there).
	Peer
	// Origin: the object store.
	Origin

	// NumSources is the number of sources.
	NumSources = 3
)

var sourceNames = [NumSources]string{"local", "peer", "origin"}

// String returns the source as the metric label uses it ("local", "peer",
// "origin").
func (s Source) String() string {
	if s >= 0 && int(s) < NumSources {
		return sourceNames[s]
	}
	return fmt.Sprintf("Source(%d)", int(s))
}

// MissCause says why bytes were not served from a cache.
type MissCause int

// The miss causes. The order is fixed: it indexes Summary.Misses.
const (
	// Cold: never seen by the cache that owns the page.
	Cold MissCause = iota
	// Capacity: seen before and not kept (evicted for lack of space,
	// refused by admission, or not stored while the cache was degraded).
	Capacity
	// Invalidated: cached under another version of the object.
	Invalidated
	// OwnerUnavailable: the page's owner could not be reached, so the origin
	// served it (and nothing was cached).
	OwnerUnavailable
	// Corrupt: cached but failed its checksum; dropped and refetched.
	Corrupt

	// NumMissCauses is the number of causes (the length of Summary.Misses).
	NumMissCauses = 5
)

var causeNames = [NumMissCauses]string{"cold", "capacity", "invalidated", "owner_unavailable", "corrupt"}

// String returns the cause as the metric label uses it ("cold", "capacity",
// "invalidated", "owner_unavailable", "corrupt").
func (c MissCause) String() string {
	if c >= 0 && int(c) < NumMissCauses {
		return causeNames[c]
	}
	return fmt.Sprintf("MissCause(%d)", int(c))
}

// MissCount counts missed pages and their bytes (the bytes of the request
// those pages held).
type MissCount struct {
	Pages, Bytes int64
}

// Summary says how the bytes of one read were served.
type Summary struct {
	// Bytes returned: LocalHitBytes + PeerHitBytes + OriginBytes.
	Bytes int64
	// LocalHitBytes were served from the serving node's cache.
	LocalHitBytes int64
	// PeerHitBytes were served from another node's cache.
	PeerHitBytes int64
	// OriginBytes were fetched from the origin; Misses breaks them down.
	OriginBytes int64
	// Misses by cause, indexed by MissCause; the Bytes add up to OriginBytes.
	Misses [NumMissCauses]MissCount
	// Version of the object that was read.
	Version string
	// ObjectSize is the size of the object in bytes.
	ObjectSize int64
	// NodeID is the id of the node that served the read.
	NodeID string
}

// MissPages is the number of missed pages over all causes.
func (s Summary) MissPages() int64 {
	var n int64
	for _, m := range s.Misses {
		n += m.Pages
	}
	return n
}

// SourceBytes returns the bytes served from src.
func (s Summary) SourceBytes(src Source) int64 {
	switch src {
	case Local:
		return s.LocalHitBytes
	case Peer:
		return s.PeerHitBytes
	case Origin:
		return s.OriginBytes
	}
	return 0
}

// Add adds o's byte and miss counts to s. Version, ObjectSize and NodeID
// are left alone.
func (s *Summary) Add(o Summary) {
	s.Bytes += o.Bytes
	s.LocalHitBytes += o.LocalHitBytes
	s.PeerHitBytes += o.PeerHitBytes
	s.OriginBytes += o.OriginBytes
	for i := range s.Misses {
		s.Misses[i].Pages += o.Misses[i].Pages
		s.Misses[i].Bytes += o.Misses[i].Bytes
	}
}

// Check reports whether the summary's counts are consistent (the ladder in
// the package doc); a nil error means they are.
func (s Summary) Check() error {
	if s.Bytes < 0 || s.LocalHitBytes < 0 || s.PeerHitBytes < 0 || s.OriginBytes < 0 {
		return fmt.Errorf("readpath: negative count in summary %+v", s)
	}
	if s.LocalHitBytes+s.PeerHitBytes+s.OriginBytes != s.Bytes {
		return fmt.Errorf("readpath: local %d + peer %d + origin %d != bytes %d",
			s.LocalHitBytes, s.PeerHitBytes, s.OriginBytes, s.Bytes)
	}
	var mb int64
	for _, m := range s.Misses {
		if m.Pages < 0 || m.Bytes < 0 {
			return fmt.Errorf("readpath: negative miss count in summary %+v", s)
		}
		mb += m.Bytes
	}
	if mb != s.OriginBytes {
		return fmt.Errorf("readpath: miss bytes %d != origin bytes %d", mb, s.OriginBytes)
	}
	return nil
}

// protoCause maps a MissCause to its wire enum value and back.
var protoCause = [NumMissCauses]cachev1.MissCause{
	Cold:             cachev1.MissCause_MISS_CAUSE_COLD,
	Capacity:         cachev1.MissCause_MISS_CAUSE_CAPACITY,
	Invalidated:      cachev1.MissCause_MISS_CAUSE_INVALIDATED,
	OwnerUnavailable: cachev1.MissCause_MISS_CAUSE_OWNER_UNAVAILABLE,
	Corrupt:          cachev1.MissCause_MISS_CAUSE_CORRUPT,
}

// CauseToProto returns the wire enum value of c
// (MISS_CAUSE_UNSPECIFIED for an unknown cause).
func CauseToProto(c MissCause) cachev1.MissCause {
	if c >= 0 && int(c) < NumMissCauses {
		return protoCause[c]
	}
	return cachev1.MissCause_MISS_CAUSE_UNSPECIFIED
}

// CauseFromProto returns the MissCause of a wire enum value; ok is false for
// MISS_CAUSE_UNSPECIFIED and unknown values.
func CauseFromProto(c cachev1.MissCause) (MissCause, bool) {
	for i, p := range protoCause {
		if p == c {
			return MissCause(i), true
		}
	}
	return 0, false
}

// ToProto returns the wire form of s. Causes with no pages and no bytes are
// left out of Misses.
func (s Summary) ToProto() *cachev1.ReadSummary {
	m := &cachev1.ReadSummary{
		Bytes:         s.Bytes,
		LocalHitBytes: s.LocalHitBytes,
		PeerHitBytes:  s.PeerHitBytes,
		OriginBytes:   s.OriginBytes,
		Version:       s.Version,
		ObjectSize:    s.ObjectSize,
		NodeId:        s.NodeID,
	}
	for i, c := range s.Misses {
		if c.Pages == 0 && c.Bytes == 0 {
			continue
		}
		m.Misses = append(m.Misses, &cachev1.MissCount{
			Cause: protoCause[i],
			Pages: c.Pages,
			Bytes: c.Bytes,
		})
	}
	return m
}

// FromProto returns the Summary of a wire ReadSummary (a nil message gives
// the zero Summary). Miss entries with an unspecified or unknown cause are
// counted as Cold, so the miss bytes still add up to OriginBytes; repeated
// causes are summed.
func FromProto(m *cachev1.ReadSummary) Summary {
	if m == nil {
		return Summary{}
	}
	s := Summary{
		Bytes:         m.GetBytes(),
		LocalHitBytes: m.GetLocalHitBytes(),
		PeerHitBytes:  m.GetPeerHitBytes(),
		OriginBytes:   m.GetOriginBytes(),
		Version:       m.GetVersion(),
		ObjectSize:    m.GetObjectSize(),
		NodeID:        m.GetNodeId(),
	}
	for _, mc := range m.GetMisses() {
		c, ok := CauseFromProto(mc.GetCause())
		if !ok {
			c = Cold
		}
		s.Misses[c].Pages += mc.GetPages()
		s.Misses[c].Bytes += mc.GetBytes()
	}
	return s
}
