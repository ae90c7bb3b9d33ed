package cache

// MissCause says why a page was not served from this cache.
type MissCause uint8

// The miss causes. The order is fixed: it indexes ReadResult.Misses and
// Stats.Misses.
const (
	// MissCold: the page was never seen (within the history window).
	MissCold MissCause = iota
	// MissCapacity: the page was cached and left for lack of space, or
	// was offered and not kept: refused by the admission policy, evicted
	// while it was written, not written for want of an unpinned slot, or
	// not written while storing was paused after a failed write (or its
	// own write failed; Stats.Degraded says so while a pause lasts, so a
	// dashboard can tell such misses from a cache that is too small).
	MissCapacity
	// MissInvalidated: another version of the page's URI was cached (this
	// page or others: the object replaced an older version), or Invalidate
	// dropped the page.
	MissInvalidated
	// MissCorrupt: the page was cached but failed its checksum; it was
	// dropped and refetched (a read that finds it gone before the refetch
	// stored it again counts the same).
	MissCorrupt
	// MissOwnerUnavailable is not produced by this package: the cache node
	// uses it when the page's owner could not be reached.
	MissOwnerUnavailable

	// NumMissCauses is the number of causes (the length of the arrays).
	NumMissCauses = 5
)

var causeNames = [NumMissCauses]string{"cold", "capacity", "invalidated", "corrupt", "owner_unavailable"}

// String returns the cause as the metric label uses it ("cold", ...).
func (c MissCause) String() string {
	if int(c) < len(causeNames) {
		return causeNames[c]
	}
	return "unknown"
}

// MissCount counts missed pages and the bytes of the request they held.
type MissCount struct {
	Pages int64
	Bytes int64
}

// ReadResult says how the bytes of one read were served. It is a value with
// no pointers: reads do not allocate for it.
type ReadResult struct {
	// Bytes is how many bytes the read returned: the requested length,
	// truncated at the end of the object.
	Bytes int64
	// HitBytes were served from the cache, MissBytes from the origin.
	// HitBytes + MissBytes == Bytes.
	HitBytes, MissBytes int64
	// HitPages is the number of pages served from the cache.
	HitPages int64
	// Misses counts missed pages and their bytes by cause, indexed by
	// MissCause. The Bytes add up to MissBytes.
	Misses [NumMissCauses]MissCount
}

// MissPages is the number of pages this read missed, over all causes.
func (r ReadResult) MissPages() int64 {
	var n int64
	for _, m := range r.Misses {
		n += m.Pages
	}
	return n
}

func (r *ReadResult) add(o ReadResult) {
	r.Bytes += o.Bytes
	r.HitBytes += o.HitBytes
	r.MissBytes += o.MissBytes
	r.HitPages += o.HitPages
	for i := range r.Misses {
		r.Misses[i].Pages += o.Misses[i].Pages
		r.Misses[i].Bytes += o.Misses[i].Bytes
	}
}
