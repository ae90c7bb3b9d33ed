package cache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// How a read serves one page.
const (
	refHit    = iota // resident: the slot is pinned
	refOwn           // missing: this read leads the flight and fetches it
	refWait          // missing: another read's flight fetches it
	refClosed        // the cache is closing
)

type pageRef struct {
	fl      *flight
	page    int64
	slot    uint32
	ram     int32 // refHit: the pinned RAM-tier copy plus one, 0 for none
	kind    uint8
	promote bool // refHit: copy the page to the RAM tier after the read
	warm    bool // counted as a Prefetch's page, not a read's (plan)
	// refHit: this read fetched the page itself in an earlier window
	// that it planned again (see readState.fetched); delivered as a miss
	// of cause ownCause.
	own      bool
	ownCause MissCause
}

// fetchRun is refs[i:i+n]: consecutive pages this read fetches with one
// origin request.
type fetchRun struct {
	i, n int
	buf  *fetchBuf // the leader's reference, released after delivery
}

// readState is the scratch of one read, pooled so that hits do not
// allocate.
type readState struct {
	refs []pageRef
	runs []fetchRun
	// sized is the first page of the read not yet fed to the sizing
	// estimators: a page planned again (its leader was cancelled) was
	// counted once already.
	sized int64
	// fetched are pages this read fetched itself in a window it then
	// planned again from an earlier page (whose leader gave up), with
	// their misses' causes: their misses stay counted, and the next plan
	// that finds them cached delivers them as those misses, not as hits.
	fetched []ownFetch
}

// ownFetch is a page a read fetched and has not delivered yet.
type ownFetch struct {
	page  int64
	cause MissCause
}

// sink receives the bytes of a read in offset order: into dst (Get),
// through fn (View), or nowhere (Prefetch).
type sink struct {
	dst []byte
	fn  func([]byte) error
	n   int
	// verify checks every cached page the read serves against its
	// checksum, whatever Config.Verify says (ViewVerified).
	verify bool
	// warm marks a Prefetch: its pages are counted apart from the reads'
	// (Stats.PrefetchCachedPages and PrefetchFetchedPages), not fed to
	// the sizing estimators, and its hits leave the RAM tier alone.
	warm bool
}

func (s *sink) put(p []byte) error {
	if s.fn != nil {
		return s.fn(p)
	}
	if s.dst != nil {
		copy(s.dst[s.n:], p)
	}
	s.n += len(p)
	return nil
}

// Get copies bytes [off, off+length) of obj into dst, serving cached pages
// from the cache and fetching missing ones from the origin (one request
// per contiguous run of missing pages, at most Config.MaxFetchBytes each).
// A range that runs past the end of the object is truncated: the result's
// Bytes says how many bytes were copied. dst must hold them.
//
// Errors: ErrInvalidObject, ErrInvalidRange, ErrOutOfRange, ErrShortBuffer,
// ErrClosed, ErrShortRead, the context's error, or the origin's error
// (wrapped; errors.Is(err, ErrVersionChanged) holds when the origin refused
// a changed object). On error dst holds a prefix of the range.
func (c *Cache) Get(ctx context.Context, obj Object, off, length int64, dst []byte) (ReadResult, error) {
	s := sink{dst: dst}
	if dst == nil {
		s.dst = []byte{}
	}
	return c.read(ctx, obj, off, length, &s)
}

// View calls fn with the bytes of [off, off+length) of obj, in order, in
// one or more slices (at most one page each). A slice of a cached page is
// the cache's own memory: it is valid only during the call, must not be
// modified (a disk page is mapped read-only) and must not be retained. The
// page is pinned during the call so eviction cannot reuse it. A huge range
// is served in bounded memory: at most FetchParallelism x MaxFetchBytes of
// fetched data is held at once. If fn returns an error, View stops and
// returns it. fn must not call Close.
//
// Errors are those of Get, without ErrShortBuffer, plus fn's.
func (c *Cache) View(ctx context.Context, obj Object, off, length int64, fn func(p []byte) error) (ReadResult, error) {
	if fn == nil {
		return ReadResult{}, fmt.Errorf("%w: nil View callback", ErrInvalidRange)
	}
	s := sink{fn: fn}
	return c.read(ctx, obj, off, length, &s)
}

// ViewVerified is View, but it checks the data checksum of every cached
// page it serves, as Config.Verify = VerifyAlways does for every read, and
// serves the disk page rather than its RAM-tier copy. It is for bytes
// that leave this process to be cached elsewhere, such as a peer's fill:
// there a page that changed on disk after this process wrote it (which
// VerifyFirstRead trusts) would outlive the repair of its source. A page
// that fails is counted corrupt, dropped and refetched, as on any read.
// Reads of a RAM-only cache (no Dir) have nothing to check.
func (c *Cache) ViewVerified(ctx context.Context, obj Object, off, length int64, fn func(p []byte) error) (ReadResult, error) {
	if fn == nil {
		return ReadResult{}, fmt.Errorf("%w: nil View callback", ErrInvalidRange)
	}
	s := sink{fn: fn, verify: true}
	return c.read(ctx, obj, off, length, &s)
}

// Prefetch makes sure the pages of [off, off+length) of obj are cached,
// fetching the missing ones, and returns when they are (or with the first
// error). Its result counts the pages that were already cached as hits
// and the others as misses by cause, as a read's does; but Stats counts
// them apart from the reads' (PrefetchCachedPages, PrefetchFetchedPages),
// so that HitPages and Misses, and the hit ratio made of them, are the
// readers' alone, and the sizing estimators do not see them. Nor does the
// RAM tier: a Prefetch does not count as a use of a page's RAM copy. An
// object of more than 2^32 pages is never cached: its Prefetch returns at
// once, fetching nothing.
func (c *Cache) Prefetch(ctx context.Context, obj Object, off, length int64) (ReadResult, error) {
	s := sink{warm: true}
	return c.read(ctx, obj, off, length, &s)
}

func (c *Cache) read(ctx context.Context, obj Object, off, length int64, s *sink) (res ReadResult, err error) {
	if err := obj.validate(); err != nil {
		return res, err
	}
	end, err := clampRange(obj.Size, off, length)
	if err != nil {
		return res, err
	}
	if s.dst != nil && int64(len(s.dst)) < end-off {
		return res, fmt.Errorf("%w: %d bytes for a %d-byte read", ErrShortBuffer, len(s.dst), end-off)
	}
	if c.closed.Load() {
		return res, ErrClosed
	}
	if end == off {
		return res, nil
	}
	o, stale := c.objects.lookup(obj)
	if stale != nil {
		c.dropObject(stale)
	}
	if o.npages > maxObjectPages {
		if s.warm {
			return res, nil // such an object is never cached: nothing to prefetch
		}
		return res, c.readThrough(ctx, o, obj, off, end, s, &res)
	}
	st := c.states.Get().(*readState)
	defer c.states.Put(st)
	first, last := pageSpan(off, end, c.cfg.PageSize)
	st.sized = first
	st.fetched = st.fetched[:0]
	for p := first; p <= last; {
		if o.swept.Load() && len(st.fetched) == 0 {
			// The object table collected o while this read used it (it
			// had no page resident, say while this read fetched its
			// first pages): no page of it is stored any more, so the
			// rest of a long read would cache nothing. Go on with the
			// object as the table has it now. (Not while st.fetched
			// holds pages counted under o's keys.)
			if o, stale = c.objects.lookup(obj); stale != nil {
				c.dropObject(stale)
			}
		}
		next, err := c.readWindow(ctx, st, o, obj, off, end, p, last, s, &res)
		if err != nil {
			return res, err
		}
		p = next
	}
	return res, nil
}

// maxObjectPages is the most pages an object may have for its pages to be
// cached, and to be read through flights: a page key holds a page index in
// 32 bits (pageKey).
const maxObjectPages = 1 << 32

// readThrough serves [off, end) of an object with more than maxObjectPages
// pages straight from the origin, in requests of at most MaxFetchBytes, one
// at a time, caching nothing and joining no flight: page p and page p+2^32
// would share a page key. Every page counts as a cold miss and as
// uncacheable. Such an object is over 2 TiB at the smallest page size.
func (c *Cache) readThrough(ctx context.Context, o *object, obj Object, off, end int64, s *sink, res *ReadResult) error {
	ps := int64(c.cfg.PageSize)
	buf := c.getBuf(c.maxFetchPages)
	defer releaseBuf(buf, &c.bufs)
	for pos := off; pos < end; {
		if c.closed.Load() {
			return ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// Requests end at page boundaries (the buffer holds whole pages),
		// so no page is split between two and counted twice.
		n := min(int64(c.maxFetchPages)*ps-pos%ps, end-pos)
		b := buf.b[:n]
		if err := c.originRead(ctx, o, obj, b, pos); err != nil {
			c.refused(o, err)
			return err
		}
		// Deliver a page at a time (View's contract), counting each.
		for q := int64(0); q < n; {
			r := min(((pos+q)/ps+1)*ps-pos, n)
			if err := s.put(b[q:r]); err != nil {
				return err
			}
			res.Bytes += r - q
			res.MissBytes += r - q
			res.Misses[MissCold].Pages++
			res.Misses[MissCold].Bytes += r - q
			c.uncacheable.Add(1)
			c.throughPages.Add(1)
			c.throughBytes.Add(r - q)
			q = r
		}
		pos += n
	}
	return nil
}

// readWindow serves a window of pages starting at from: about
// Config.FetchParallelism x MaxFetchBytes of them, extended so that a run of
// missing pages is split only at MaxFetchBytes. It returns the page to
// continue from: the end of the window, or an earlier page to retry (a
// page whose leader was cancelled).
func (c *Cache) readWindow(ctx context.Context, st *readState, o *object, obj Object, off, end, from, last int64, s *sink, res *ReadResult) (next int64, err error) {
	ps := c.cfg.PageSize
	to := min(last, from+int64(c.window)-1)
	refs := st.refs[:0]
	run := 0 // length of the run of missing pages planned last
	for p := from; p <= last; p++ {
		if p > to && run%c.maxFetchPages == 0 {
			break
		}
		lo, hi := within(off, end, ps, p)
		if p >= st.sized {
			if !s.warm {
				c.feedSizers(o, p)
			}
			st.sized = p + 1
		}
		r := c.plan(o, p, false, int64(hi-lo), s)
		refs = append(refs, r)
		if r.kind == refOwn {
			run++
		} else {
			run = 0
		}
	}
	// Verify unverified hits now, so a corrupt page joins the fetch.
	for i := range refs {
		r := &refs[i]
		if r.kind != refHit || r.ram != 0 || c.verified(r.slot, s.verify) {
			continue
		}
		lo, hi := within(off, end, ps, r.page)
		c.dropCorrupt(o, r, int64(hi-lo))
		c.slots[r.slot].pins.Add(-1)
		*r = c.plan(o, r.page, true, int64(hi-lo), s)
	}
	if len(st.fetched) > 0 {
		c.ownFetches(st, o, refs, off, end)
	}
	st.refs = refs
	runs := st.runs[:0]
	for i := 0; i < len(refs); {
		if refs[i].kind != refOwn {
			i++
			continue
		}
		j := i + 1
		for j < len(refs) && refs[j].kind == refOwn && j-i < c.maxFetchPages {
			j++
		}
		runs = append(runs, fetchRun{i: i, n: j - i})
		i = j
	}
	st.runs = runs
	c.fetchAll(ctx, o, obj, refs, runs)

	next = from + int64(len(refs))
	retry := false
	i := 0
	delivered := false
	defer func() {
		if !delivered {
			// A View callback panicked (or called runtime.Goexit): release
			// what the window holds (the page being delivered, the pages
			// after it, the runs' buffers), or its pins would keep Close
			// waiting for ever; the panic goes on unwinding as it was.
			// The pages after the one being delivered were counted by
			// plan but served to no one, as after an error.
			if i < len(refs) {
				c.uncountUnserved(o, refs[i+1:], off, end)
			}
			c.releaseRefs(refs[i:], runs)
			clear(refs)
		}
	}()
	for ; i < len(refs) && err == nil; i++ {
		r := &refs[i]
		lo, hi := within(off, end, ps, r.page)
		if r.kind == refHit {
			if r.ram != 0 {
				err = s.put(c.ram.mem.page(uint32(r.ram - 1))[lo:hi])
				c.ram.pins[r.ram-1].Add(-1)
			} else {
				err = s.put(c.store.page(r.slot)[lo:hi])
				if r.promote && err == nil {
					c.promote(o, r.page, r.slot)
				}
				c.slots[r.slot].pins.Add(-1)
			}
			res.Bytes += int64(hi - lo)
			if r.own {
				// Fetched by this read in a window it planned again: a miss.
				res.MissBytes += int64(hi - lo)
				res.Misses[r.ownCause].Pages++
				res.Misses[r.ownCause].Bytes += int64(hi - lo)
				continue
			}
			res.HitBytes += int64(hi - lo)
			res.HitPages++
			continue
		}
		if r.kind == refClosed {
			err = ErrClosed
			continue
		}
		fl := r.fl
		if r.kind == refWait {
			select {
			case <-fl.done:
			case <-ctx.Done():
				// Leave the flight: its leader adds a buffer reference for
				// us that is never dropped; the buffer goes to the garbage
				// collector instead of the pool. The page is not served:
				// take back the miss plan counted (its leader counts the
				// fetch).
				c.uncount(o, r, int64(hi-lo))
				r.fl = nil
				err = ctx.Err()
				continue
			}
			if fl.obj != o || (fl.gaveUp && ctx.Err() == nil) {
				// Our leader gave up and we did not, or the flight was
				// another object's whose id ours reuses (its page is not
				// ours, nor its error). Plan the page again: this time
				// we find its slot (and drop it, if another's) or lead.
				releaseBuf(fl.buf, &c.bufs)
				next = r.page
				retry = true
				i++
				break
			}
		}
		if fl.err != nil {
			err = fl.err
		} else {
			err = s.put(fl.data[lo:hi])
			res.Bytes += int64(hi - lo)
			res.MissBytes += int64(hi - lo)
			res.Misses[fl.cause].Pages++
			res.Misses[fl.cause].Bytes += int64(hi - lo)
		}
		if r.kind == refWait {
			releaseBuf(fl.buf, &c.bufs)
		}
	}
	if retry {
		// The next window plans the pages from next on again, and counts
		// them again: take back what this window's plan counted, except
		// the misses of pages this read fetched itself (the origin sent
		// them to this read; the next window delivers them as misses).
		for j := i - 1; j < len(refs); j++ {
			r := &refs[j]
			switch {
			case j >= i && r.kind == refOwn && r.fl != nil && r.fl.err == nil:
				st.fetched = append(st.fetched, ownFetch{page: r.page, cause: r.fl.cause})
				continue
			case j >= i && r.kind == refHit && r.own: // fetched two windows back
				st.fetched = append(st.fetched, ownFetch{page: r.page, cause: r.ownCause})
				continue
			}
			lo, hi := within(off, end, ps, r.page)
			c.uncount(o, r, int64(hi-lo))
		}
		// Entries from an earlier retry, past this window, come after
		// this window's: keep them in page order (ownFetches merges).
		slices.SortFunc(st.fetched, func(a, b ownFetch) int { return cmp.Compare(a.page, b.page) })
	}
	if err != nil && !retry {
		// The read stopped (its reader's error or its context) before
		// the pages from i on.
		c.uncountUnserved(o, refs[i:], off, end)
	}
	delivered = true
	c.releaseRefs(refs[i:], runs)
	clear(refs) // drop flight pointers so the pool does not keep them
	return next, err
}

// uncountUnserved takes back what plan counted for pages of a window a read
// stopped before (its reader's error or panic, or its context) and so
// served to no one: hits, and misses of flights another read leads (which
// counts the fetch). The misses of pages this read fetched itself stay
// counted, in this window or an earlier one it planned again (own): the
// origin sent them all the same.
func (c *Cache) uncountUnserved(o *object, refs []pageRef, off, end int64) {
	for j := range refs {
		r := &refs[j]
		if (r.kind == refHit && !r.own) || r.kind == refWait {
			lo, hi := within(off, end, c.cfg.PageSize, r.page)
			c.uncount(o, r, int64(hi-lo))
		}
	}
}

// ownFetches settles the pages of a window planned again that the read
// fetched itself before (st.fetched), for a read of [off, end) of o: a
// page found cached is marked own (delivered as the miss the read already
// counted, its hit taken back); a page that is not (not stored, or
// evicted since) keeps the count of its new plan, and the earlier miss is
// taken back. Either way the page leaves st.fetched.
func (c *Cache) ownFetches(st *readState, o *object, refs []pageRef, off, end int64) {
	ps := c.cfg.PageSize
	// refs and st.fetched are in page order: one merge walk, keeping the
	// entries of pages this window does not hold.
	fetched, k := st.fetched, 0
	kept := fetched[:0] // compacted in place, behind k
	for i := range refs {
		r := &refs[i]
		for k < len(fetched) && fetched[k].page < r.page {
			kept = append(kept, fetched[k])
			k++
		}
		if k == len(fetched) || fetched[k].page != r.page {
			continue
		}
		f := fetched[k]
		k++
		lo, hi := within(off, end, ps, r.page)
		if r.kind == refHit {
			c.uncount(o, r, int64(hi-lo))
			r.own, r.ownCause = true, f.cause
			continue
		}
		sh := c.shardFor(mix64(pageKey(o, r.page)))
		sh.mu.Lock()
		c.uncountMiss(sh, f.cause, int64(hi-lo), r.warm)
		sh.mu.Unlock()
	}
	st.fetched = append(kept, fetched[k:]...)
}

// releaseRefs releases what a window holds for pages it did not deliver
// (refs): their pins, the buffers of the flights they waited for, and the
// buffers of the window's runs.
func (c *Cache) releaseRefs(refs []pageRef, runs []fetchRun) {
	for i := range refs {
		r := &refs[i]
		switch {
		case r.kind == refHit && r.ram != 0:
			c.ram.pins[r.ram-1].Add(-1)
		case r.kind == refHit:
			c.slots[r.slot].pins.Add(-1)
		case r.kind == refWait && r.fl != nil:
			select {
			case <-r.fl.done:
				releaseBuf(r.fl.buf, &c.bufs)
			default: // a waiter that left: the buffer goes to the garbage collector
			}
		}
	}
	for k := range runs {
		releaseBuf(runs[k].buf, &c.bufs)
		runs[k].buf = nil
	}
}

// uncount takes back the hit or miss that plan counted in the shard's
// stats for r, a page of o whose read wanted bytes of it (and the RAM
// tier's hit, for a hit on a RAM copy).
func (c *Cache) uncount(o *object, r *pageRef, bytes int64) {
	sh := c.shardFor(mix64(pageKey(o, r.page)))
	if r.kind == refHit && r.ram != 0 {
		c.ram.hits.Add(-1) // the RAM tier counted it when plan pinned its copy
	}
	sh.mu.Lock()
	switch {
	case r.kind == refHit && r.warm:
		sh.st.warmCached--
	case r.kind == refHit:
		sh.st.hitPages--
		sh.st.hitBytes -= bytes
	case (r.kind == refOwn || r.kind == refWait) && r.fl != nil:
		c.uncountMiss(sh, r.fl.cause, bytes, r.warm)
	}
	sh.mu.Unlock()
}

// feedSizers records a read of page p of o in the sizing estimators
// (Config.Sizer and PolicySizing's miniatures), once per page a read asks
// for: a page planned again (a cancelled leader, a corrupt copy) is not
// counted twice.
func (c *Cache) feedSizers(o *object, p int64) {
	if c.cfg.Sizer == nil && c.mini == nil {
		return
	}
	k := mix64(pageKey(o, p))
	if c.cfg.Sizer != nil && (c.skipSizer == nil || !c.skipSizer.Skip(k)) {
		c.sizerMu.Lock()
		c.cfg.Sizer.Access(k)
		c.sizerMu.Unlock()
	}
	if c.mini != nil && c.mini.Sampled(k) {
		c.miniMu.Lock()
		c.mini.Access(k)
		c.miniMu.Unlock()
	}
}

// plan looks page p of o up and pins it, joins its flight, or starts one,
// for the read of sink s. bytes is how much of the page the read wants
// (for the counters; a Prefetch's pages go to counters of their own). A
// hit pins the page's RAM-tier copy if it has one, unless the read
// verifies (it checks the disk page, which holds the checksum).
func (c *Cache) plan(o *object, p int64, corrupt bool, bytes int64, s *sink) pageRef {
	pk := pageKey(o, p)
	k := mix64(pk)
	sh := c.shardFor(k)
	sh.mu.Lock()
	if sh.closed {
		sh.mu.Unlock()
		return pageRef{kind: refClosed, page: p, warm: s.warm}
	}
	if slot, ok := sh.index[pk]; ok {
		if m := &c.slots[slot]; m.obj == o {
			sh.pol.Touch(k)
			if s.warm {
				sh.st.warmCached++
			} else {
				sh.st.hitPages++
				sh.st.hitBytes += bytes
			}
			ref := pageRef{kind: refHit, page: p, slot: slot, warm: s.warm}
			if c.ram != nil && !s.verify && !s.warm { // a Prefetch needs no bytes: the RAM tier is not asked
				if ref.ram = c.ram.pin(m); ref.ram == 0 {
					if m.hits < 255 { // saturating (m.hits+1 would wrap to 0)
						m.hits++
					}
					ref.promote = m.hits >= 2
				}
			}
			if ref.ram == 0 {
				m.pins.Add(1)
			}
			sh.mu.Unlock()
			return ref
		}
		// Same id, another object: only after 2^32 objects. Drop the old one.
		sh.pol.Remove(k)
		c.unlink(sh, pk, slot)
	}
	if fl := sh.flights[pk]; fl != nil {
		if sh.pol != nil {
			sh.pol.Touch(k)
		}
		fl.waiters++
		c.countMiss(sh, fl.cause, bytes, s.warm)
		sh.mu.Unlock()
		return pageRef{kind: refWait, page: p, fl: fl, warm: s.warm}
	}
	cause := MissCorrupt
	if !corrupt {
		cause = c.hist.classify(o, p)
	}
	if sh.pol != nil && sh.pol.Touch(k) {
		sh.pol.Remove(k) // resident in the policy only: cannot happen, but heal
	}
	fl := &flight{done: make(chan struct{}), obj: o, cause: cause}
	sh.flights[pk] = fl
	c.countMiss(sh, cause, bytes, s.warm)
	sh.mu.Unlock()
	return pageRef{kind: refOwn, page: p, fl: fl, warm: s.warm}
}

// countMiss counts a page a read (or, warm, a Prefetch) did not find
// cached, in shard sh, whose lock the caller holds.
func (c *Cache) countMiss(sh *shard, cause MissCause, bytes int64, warm bool) {
	if warm {
		sh.st.warmFetched++
		return
	}
	sh.st.misses[cause].Pages++
	sh.st.misses[cause].Bytes += bytes
}

// uncountMiss takes back what countMiss counted.
func (c *Cache) uncountMiss(sh *shard, cause MissCause, bytes int64, warm bool) {
	if warm {
		sh.st.warmFetched--
		return
	}
	sh.st.misses[cause].Pages--
	sh.st.misses[cause].Bytes -= bytes
}

// verified checks the pinned slot's checksum if it has not been checked
// yet (or every time, with VerifyAlways or always) and reports whether the
// page is good.
// The first read of a disk slot also maps it in one call (populate).
func (c *Cache) verified(slot uint32, always bool) bool {
	m := &c.slots[slot]
	f := m.flags.Load()
	if f&flagVerified != 0 && !c.verifyAlways && !always {
		return true
	}
	if f&flagPopulated == 0 {
		c.store.populate(slot)
		m.flags.Or(flagPopulated)
	}
	if !c.store.durable() {
		return true
	}
	if checksum(c.store.page(slot)[:m.length]) != m.crc {
		return false
	}
	m.flags.Or(flagVerified)
	return true
}

// promote copies the pinned disk page of o to the RAM tier.
func (c *Cache) promote(o *object, p int64, slot uint32) {
	r := c.ram.reserve(c.slots)
	if r < 0 {
		return
	}
	m := &c.slots[slot]
	copy(c.ram.mem.page(uint32(r)), c.store.page(slot)[:m.length])
	pk := pageKey(o, p)
	sh := c.shardFor(mix64(pk))
	sh.mu.Lock()
	if cur, ok := sh.index[pk]; ok && cur == slot && m.obj == o && m.ram.Load() == 0 {
		m.ram.Store(r + 1)
		c.ram.publish(r, int32(slot))
		c.ram.promotions.Add(1)
	} else {
		c.ram.publish(r, ramFree)
	}
	sh.mu.Unlock()
}

// dropCorrupt removes the page of hit r that failed its checksum, if it is
// still the one indexed, and takes back the hit the plan counted (the plan
// that follows counts a corrupt miss).
func (c *Cache) dropCorrupt(o *object, r *pageRef, bytes int64) {
	p, slot := r.page, r.slot
	pk := pageKey(o, p)
	sh := c.shardFor(mix64(pk))
	sh.mu.Lock()
	if r.warm {
		sh.st.warmCached--
	} else {
		sh.st.hitPages--
		sh.st.hitBytes -= bytes
	}
	if cur, ok := sh.index[pk]; !ok || cur != slot || c.slots[slot].obj != o {
		sh.mu.Unlock()
		return
	}
	sh.st.corrupt++
	c.hist.mark(corruptFP(o, p), markCorrupt)
	c.cfg.Logger.Warn("cache: page failed its checksum; dropped, refetching",
		"uri", o.URI, "version", o.Version, "page", p, "slot", slot)
	c.dropAndClear(sh, pk, slot)
}

// fetchAll fetches every run, at most FetchParallelism at once, and
// returns when every flight of this read is complete.
func (c *Cache) fetchAll(ctx context.Context, o *object, obj Object, refs []pageRef, runs []fetchRun) {
	if len(runs) == 0 {
		return
	}
	if len(runs) == 1 || c.cfg.FetchParallelism == 1 {
		for i := range runs {
			c.fetchRun(ctx, o, obj, refs, &runs[i])
		}
		return
	}
	var wg sync.WaitGroup
	var next atomic.Int32
	for range min(c.cfg.FetchParallelism, len(runs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(runs) {
					return
				}
				c.fetchRun(ctx, o, obj, refs, &runs[i])
			}
		}()
	}
	wg.Wait()
}

// fetchRun reads one run from the origin with one request, stores its
// pages and completes their flights.
func (c *Cache) fetchRun(ctx context.Context, o *object, obj Object, refs []pageRef, run *fetchRun) {
	ps := int64(c.cfg.PageSize)
	p0 := refs[run.i].page
	off := p0 * ps
	n := int(min(int64(run.n)*ps, obj.Size-off))
	buf := c.getBuf(run.n)
	b := buf.b[:n]
	err := ctx.Err()
	if err != nil {
		c.originErrors.Add(1) // counted as before: the read failed without a request
	} else {
		err = c.originRead(ctx, o, obj, b, off)
	}
	if err != nil {
		// Waiters whose own context is live fetch again if this read gave
		// up, not if the origin failed (also with a timeout of its own).
		gaveUp := ctx.Err() != nil
		for i := run.i; i < run.i+run.n; i++ {
			r := &refs[i]
			pk := pageKey(o, r.page)
			sh := c.shardFor(mix64(pk))
			sh.mu.Lock()
			r.fl.gaveUp = gaveUp
			completeFlight(sh, pk, r.fl, nil, nil, err)
			sh.mu.Unlock()
		}
		releaseBuf(buf, &c.bufs)
		c.refused(o, err)
		return
	}
	for i := run.i; i < run.i+run.n; i++ {
		r := &refs[i]
		lo := (r.page - p0) * ps
		c.storePage(o, r.page, b[lo:lo+int64(pageLen(obj.Size, c.cfg.PageSize, r.page))], r.fl, buf)
	}
	run.buf = buf
}

// callOrigin calls the origin's ReadAt, turning a panic into an error: the
// read's flights must complete (their waiters, and Close, wait for them),
// and a panic on one of fetchAll's goroutines would end the process.
func (c *Cache) callOrigin(ctx context.Context, obj Object, b []byte, off int64) (n int, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.cfg.Logger.Error("origin panicked", "uri", obj.URI, "offset", off, "panic", p, "stack", string(debug.Stack()))
			n, err = 0, fmt.Errorf("%w: %v", ErrOriginPanic, p)
		}
	}()
	return c.origin.ReadAt(ctx, obj, b, off)
}

// originRead fills b with o's bytes at off in one origin request, counted.
// A short count is ErrShortRead; an origin error is wrapped with the range.
// On success the origin has served o's version: the other versions of its
// URI are dropped.
func (c *Cache) originRead(ctx context.Context, o *object, obj Object, b []byte, off int64) error {
	c.originRequests.Add(1)
	got, err := c.callOrigin(ctx, obj, b, off)
	if errors.Is(err, io.EOF) {
		err = nil // a short count is checked below
	}
	end := off + int64(len(b))
	if err == nil && got < len(b) {
		err = fmt.Errorf("%w: %q version %q bytes [%d, %d): got %d", ErrShortRead, obj.URI, obj.Version, off, end, got)
	} else if err != nil {
		err = fmt.Errorf("cache: origin read of %q version %q bytes [%d, %d): %w", obj.URI, obj.Version, off, end, err)
	}
	if err != nil {
		c.originErrors.Add(1)
		return err
	}
	c.originBytes.Add(int64(len(b)))
	for _, stale := range c.objects.confirm(o) {
		c.dropObject(stale)
	}
	return nil
}

// refused drops o if err says the origin refused its version.
func (c *Cache) refused(o *object, err error) {
	if errors.Is(err, ErrVersionChanged) && c.objects.refuse(o) {
		c.dropObject(o)
	}
}

// storePage offers a fetched page to the policy, writes it to a slot if
// admitted, publishes it in the index and completes its flight.
func (c *Cache) storePage(o *object, p int64, data []byte, fl *flight, buf *fetchBuf) {
	pk := pageKey(o, p)
	k := mix64(pk)
	sh := c.shardFor(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.pol == nil || sh.closed || !o.cacheable || o.dead.Load() {
		if !o.cacheable {
			c.uncacheable.Add(1)
		}
		if o.swept.Load() && o.cacheable && sh.pol != nil {
			c.hist.add(evictedFP(o, p)) // seen, not kept: its object was collected
		}
		completeFlight(sh, pk, fl, data, buf, nil)
		return
	}
	if c.paused() {
		c.hist.add(evictedFP(o, p)) // seen, not kept (storing is paused): a later miss is a capacity miss
		completeFlight(sh, pk, fl, data, buf, nil)
		return
	}
	var admitted bool
	sh.victims, admitted = sh.pol.Insert(k, sh.victims[:0])
	for _, v := range sh.victims {
		if v != k {
			c.evict(sh, v)
		}
	}
	if !admitted {
		sh.st.rejected++
		c.hist.add(evictedFP(o, p)) // seen, not kept: a later miss is a capacity miss
		completeFlight(sh, pk, fl, data, buf, nil)
		return
	}
	slot, ok := c.alloc(sh)
	if !ok { // every free slot is pinned by readers
		sh.pol.Remove(k)
		c.hist.add(evictedFP(o, p)) // seen, not kept
		completeFlight(sh, pk, fl, data, buf, nil)
		return
	}
	// Count the write before looking at o.dead: dropObject sets dead, then
	// waits for writing to drop to zero, so either we see dead here or it
	// waits for us to clear what we wrote.
	o.writing.Add(1)
	defer o.writing.Add(-1)
	o.pages.Add(1)
	if o.dead.Load() {
		o.pages.Add(-1)
		sh.pol.Remove(k)
		if o.swept.Load() {
			c.hist.add(evictedFP(o, p)) // seen, not kept: its object was collected
		}
		c.release(sh, slot)
		completeFlight(sh, pk, fl, data, buf, nil)
		return
	}
	m := &c.slots[slot]
	if m.flags.Load()&flagHeader != 0 {
		// The slot still holds an evicted page's header. Blank it before
		// the lock goes: once the slot is not free, an invalidation
		// (clearEvictedHeaders) no longer clears it, and must not return
		// while a header of its object can survive a crash.
		if err := c.store.clear(slot); err != nil {
			c.writeFailed(err)
			o.pages.Add(-1)
			sh.pol.Remove(k)
			c.hist.add(evictedFP(o, p)) // seen, not kept
			c.release(sh, slot)         // stale again: the next invalidation retries
			completeFlight(sh, pk, fl, data, buf, nil)
			return
		}
		m.flags.And(^uint32(flagHeader))
	}
	sh.mu.Unlock()

	// The slot is ours: reserved, in no index, free list or pending list.
	durable := c.store.durable()
	h := pageHeader{uri: o.URI, version: o.Version, size: o.Size, page: p, length: uint32(len(data))}
	if durable {
		h.crc = checksum(data)
		h.seq = c.seq.Add(1)
	}
	werr := c.store.write(slot, &h, data)
	flags := uint32(flagVerified)
	if durable {
		flags |= flagHeader // written, or in an unknown state after an error
	}
	m.flags.Store(flags)
	if werr != nil {
		c.writeFailed(werr)
	} else {
		c.writeSucceeded()
	}

	sh.mu.Lock()
	if werr != nil || fl.revoked || o.dead.Load() {
		o.pages.Add(-1)
		sh.pol.Remove(k)
		if !o.dead.Load() || o.swept.Load() {
			// Seen, not kept: the write failed, an eviction took the
			// page while it was written (fl.revoked), or the object
			// table collected its object.
			c.hist.add(evictedFP(o, p))
		}
		if werr == nil && o.dead.Load() && durable {
			// Invalidated while we wrote: the header must not survive.
			m.pins.Add(1)
			c.release(sh, slot) // pending while we clear it
			sh.mu.Unlock()
			if err := c.store.clear(slot); err != nil {
				// A failed slab write like any other: counted, and
				// storing pauses. The slot stays listed stale, so the
				// next invalidation tries again.
				c.writeFailed(err)
			} else {
				m.flags.And(^uint32(flagHeader))
			}
			m.pins.Add(-1)
			sh.mu.Lock()
		} else {
			c.release(sh, slot) // a stale header if the write got that far
		}
		completeFlight(sh, pk, fl, data, buf, nil)
		return
	}
	if old, ok := sh.index[pk]; ok { // id reuse after 2^32 objects
		c.unlink(sh, pk, old)
	}
	m.obj, m.page, m.length, m.crc, m.hits = o, uint32(p), uint32(len(data)), h.crc, 0
	sh.index[pk] = slot
	o.stored.Store(true)
	sh.st.resident++
	sh.st.usedBytes += int64(len(data))
	completeFlight(sh, pk, fl, data, buf, nil)
}

// dropObject removes every resident page of an object that left the table
// (a new version, or Invalidate; o.dead is set), clears their headers, and
// remembers them as invalidated for miss classification. Before it
// returns, no header of o is left valid on disk: it also clears the
// headers of evicted pages (clearEvictedHeaders) and waits for writes of o
// in progress, which clear what they wrote when they see o.dead. It
// returns how many pages it dropped. A cache closed before it starts drops
// nothing (the pages stay on disk, for the next version's reads to replace
// or an Invalidate after the restart).
func (c *Cache) dropObject(o *object) int {
	if !c.enterDrop() {
		return 0
	}
	defer c.drops.Add(-1)
	return c.drop(o)
}

// drop is dropObject for a caller that entered (enterDrop).
func (c *Cache) drop(o *object) int {
	dropped := 0
	if o.npages <= int64(len(c.slots)) {
		dropped = c.dropByPage(o)
	} else {
		// An object of more pages than the cache has slots (a huge object,
		// or small pages): walking its page indexes would cost time in
		// proportion to its size (minutes for an object of 2^32 pages),
		// walking the shards' indexes costs time in proportion to the
		// cache.
		dropped = c.dropByIndex(o)
	}
	c.invalidatedPages.Add(int64(dropped))
	c.clearEvictedHeaders()
	for o.writing.Load() != 0 {
		time.Sleep(50 * time.Microsecond)
	}
	return dropped
}

// scanHistory bounds the pages of an object dropObject checks against the
// eviction history (whose evicted pages then count as invalidated).
const scanHistory = 1 << 16

// dropByPage drops o's resident pages by looking each of its pages up, in
// order, until none is left resident, and marks its evicted pages (up to
// scanHistory) invalidated. It returns how many pages it dropped.
func (c *Cache) dropByPage(o *object) int {
	dropped := 0
	for p := int64(0); p < o.npages; p++ {
		if o.pages.Load() == 0 && p >= scanHistory {
			break
		}
		pk := pageKey(o, p)
		sh := c.shardFor(mix64(pk))
		sh.mu.Lock() // also once closed: Close waits for invalidations (enterDrop)
		if slot, ok := sh.index[pk]; ok && c.slots[slot].obj == o {
			c.hist.mark(invalidatedFP(o, p), markInvalidated)
			dropped++
			c.dropAndClear(sh, pk, slot)
			continue
		}
		sh.mu.Unlock()
		if p < scanHistory && c.hist.contains(evictedFP(o, p)) {
			c.hist.mark(invalidatedFP(o, p), markInvalidated)
		}
	}
	return dropped
}

// dropByIndex drops o's resident pages by walking every shard's index, and
// marks o's evicted pages (up to scanHistory) invalidated. It returns how
// many pages it dropped.
func (c *Cache) dropByIndex(o *object) int {
	dropped := 0
	var keys []uint64
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock() // also once closed: Close waits for invalidations (enterDrop)
		keys = keys[:0]
		for pk, slot := range sh.index {
			if c.slots[slot].obj == o {
				keys = append(keys, pk)
			}
		}
		sh.mu.Unlock()
		for _, pk := range keys {
			sh.mu.Lock()
			if slot, ok := sh.index[pk]; ok && c.slots[slot].obj == o {
				c.hist.mark(invalidatedFP(o, int64(c.slots[slot].page)), markInvalidated)
				dropped++
				c.dropAndClear(sh, pk, slot)
				continue
			}
			sh.mu.Unlock()
		}
	}
	for p := range min(o.npages, scanHistory) {
		if c.hist.contains(evictedFP(o, p)) {
			c.hist.mark(invalidatedFP(o, p), markInvalidated)
		}
	}
	return dropped
}

// getBuf returns a buffer for a run of n pages holding one reference.
// Buffers are pooled by power-of-two page counts.
func (c *Cache) getBuf(n int) *fetchBuf {
	class := 0
	for 1<<class < n {
		class++
	}
	b, _ := c.bufs[class].Get().(*fetchBuf)
	if b == nil {
		b = &fetchBuf{b: make([]byte, (1<<class)*c.cfg.PageSize), class: uint8(class)}
	}
	b.refs.Store(1)
	return b
}

// releaseBuf drops one reference to b (nil is ignored); the last one
// returns b to its pool.
func releaseBuf(b *fetchBuf, pools *[maxBufClasses]sync.Pool) {
	if b == nil || b.refs.Add(-1) != 0 {
		return
	}
	pools[b.class].Put(b)
}
