package cache

import "time"

// Stats is a snapshot of the cache's counters and gauges. Counters count
// from New; they are sums of per-shard counters and are consistent within
// a shard, not across shards.
type Stats struct {
	// Mode is "disk", "ram" or "pass-through" (no slots at all).
	Mode string
	// Degraded is set when the cache runs below its configuration: it
	// paused storing new pages after a failed write (a failing or full
	// disk; it tries again after the pause), or the disk was
	// too full at start for every slab (it caches on the slabs that fit).
	// DegradedReason says which. Reads keep working.
	Degraded       bool
	DegradedReason string

	PageSize int
	// CapacityPages is the number of page slots; CapacityBytes their data
	// bytes. DiskBytes is the size of the slab files (data, headers and
	// superblocks), never more than Config.CapacityBytes.
	CapacityPages int64
	CapacityBytes int64
	DiskBytes     int64
	// ResidentPages are cached; UsedBytes is their data length.
	ResidentPages int64
	UsedBytes     int64
	// Objects is the number of interned objects (URI, version).
	Objects int
	// RAMPages are disk pages with a copy in the RAM tier, RAMCapacityPages
	// its size; RAMHits were served from it; Promotions copied a page in.
	RAMPages, RAMCapacityPages, RAMHits, Promotions int64

	// HitPages and HitBytes were served from the cache to reads; Misses
	// were not, by cause, indexed by MissCause. Prefetch's pages are in
	// neither: PrefetchCachedPages it found cached, PrefetchFetchedPages it
	// fetched from the origin (or waited for another's fetch of).
	HitPages, HitBytes int64
	Misses             [NumMissCauses]MissCount

	PrefetchCachedPages, PrefetchFetchedPages int64

	OriginRequests, OriginBytes, OriginErrors int64
	// Evictions counts pages the policy pushed out; Rejected counts fetched
	// pages the admission policy refused.
	Evictions, Rejected int64
	// CorruptPages failed their checksum; InvalidatedPages were dropped for
	// a new version or by Invalidate.
	CorruptPages, InvalidatedPages int64
	// WriteErrors counts failed slab writes; Uncacheable counts fetched
	// pages not cached because URI+version exceed 464 bytes (a page
	// header's room) or the object has more than 2^32 pages.
	WriteErrors, Uncacheable int64

	// ReindexedPages were found on disk at start; ReindexDuration is how
	// long that took.
	ReindexedPages  int64
	ReindexDuration time.Duration

	// Sizing estimates the hit ratio at 0.25x, 0.5x, 2x and 4x the page
	// capacity (nil unless Config.Sizer is set and the cache has slots).
	Sizing []SizingPoint
	// PolicySizing estimates the hit ratio of the cache's own policy at
	// the same sizes, by miniature simulation anchored at the measured hit
	// ratio in pages (nil unless Config.PolicySizing is set, and until the
	// miniatures have replayed a page read). PolicySizingReads is how
	// many page reads the miniatures replayed, the evidence the estimates
	// rest on (a sample of about 1 in 32 to 1 in 1,000 of the reads on
	// large caches).
	PolicySizing      []SizingPoint
	PolicySizingReads int64
}

// sizingFactors are the sizes, relative to the page capacity, that
// Stats.Sizing and Stats.PolicySizing report.
var sizingFactors = []float64{0.25, 0.5, 2, 4}

// SizingPoint is one point of the estimated hit-ratio curve: the hit
// ratio at Factor times the page capacity, CapacityPages (rounded, at
// least 1: on a cache of a few pages two factors can share a size).
type SizingPoint struct {
	Factor        float64
	CapacityPages int64
	HitRatio      float64
}

// Stats returns a snapshot of the counters.
func (c *Cache) Stats() Stats {
	s := Stats{
		PageSize:         c.cfg.PageSize,
		CapacityPages:    int64(len(c.slots)),
		CapacityBytes:    int64(len(c.slots)) * int64(c.cfg.PageSize),
		Objects:          c.objects.len(),
		OriginRequests:   c.originRequests.Load(),
		OriginBytes:      c.originBytes.Load(),
		OriginErrors:     c.originErrors.Load(),
		WriteErrors:      c.writeErrors.Load(),
		Uncacheable:      c.uncacheable.Load(),
		InvalidatedPages: c.invalidatedPages.Load(),
		ReindexedPages:   c.reindexed,
		ReindexDuration:  c.reindexTime,
	}
	switch {
	case c.store == nil:
		s.Mode = "pass-through"
	case c.store.durable():
		s.Mode = "disk"
	default:
		s.Mode = "ram"
	}
	s.DiskBytes = c.diskBytes
	if c.ram != nil {
		s.RAMPages, s.RAMCapacityPages = c.ram.resident(), int64(len(c.ram.owner))
		s.RAMHits, s.Promotions = c.ram.hits.Load(), c.ram.promotions.Load()
	}
	if r := c.degradedReason(); r != "" {
		s.Degraded, s.DegradedReason = true, r
	}
	if c.cfg.Sizer != nil && len(c.slots) > 0 { // a pass-through cache has no size to scale
		c.sizerMu.Lock()
		for _, f := range sizingFactors {
			n := max(1, int(f*float64(len(c.slots))+0.5)) // as mrc.Mini rounds
			s.Sizing = append(s.Sizing, SizingPoint{Factor: f, CapacityPages: int64(n), HitRatio: c.cfg.Sizer.HitRatio(n)})
		}
		c.sizerMu.Unlock()
	}
	s.Misses[MissCold].Pages = c.throughPages.Load()
	s.Misses[MissCold].Bytes = c.throughBytes.Load()
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		st := sh.st
		sh.mu.Unlock()
		s.HitPages += st.hitPages
		s.HitBytes += st.hitBytes
		s.PrefetchCachedPages += st.warmCached
		s.PrefetchFetchedPages += st.warmFetched
		for j := range s.Misses {
			s.Misses[j].Pages += st.misses[j].Pages
			s.Misses[j].Bytes += st.misses[j].Bytes
		}
		s.Evictions += st.evictions
		s.Rejected += st.rejected
		s.CorruptPages += st.corrupt
		s.ResidentPages += st.resident
		s.UsedBytes += st.usedBytes
	}
	if c.mini != nil {
		c.miniMu.Lock()
		s.PolicySizingReads = int64(c.mini.Replayed())
		c.miniMu.Unlock()
	}
	if s.PolicySizingReads > 0 { // before its first sampled access a miniature knows nothing
		accesses := s.HitPages
		for _, m := range s.Misses {
			accesses += m.Pages
		}
		measured := -1.0 // none yet: Calibrated leaves the points as they are
		if accesses > 0 {
			measured = float64(s.HitPages) / float64(accesses)
		}
		c.miniMu.Lock()
		for _, p := range c.mini.Calibrated(measured) {
			if p.Factor != 1 {
				s.PolicySizing = append(s.PolicySizing, SizingPoint{Factor: p.Factor, CapacityPages: int64(p.Size), HitRatio: p.HitRatio})
			}
		}
		c.miniMu.Unlock()
	}
	return s
}
