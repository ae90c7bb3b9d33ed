package node

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/readpath"
	"github.com/locuscache/locus/pkg/ring"
)

// This file is the cache's fill path: the node's cache.Origin, which reads
// the origin, or, for a replica's own reads, the earlier nodes of the
// block's preference list first (see the package documentation, "Filling a
// replica"). It also keeps the record that lets a read say where each page
// it missed came from.

// fillRouteKey is the context key of a *fillRoute.
type fillRouteKey struct{}

// fillRoute rides in the context of a cache read on blocks where this node
// is at position k > 0 of the preference list: the cache's fills for that
// read go through earlier (list[:k], owner first) before the origin.
type fillRoute struct {
	view    *membership.View
	earlier []ring.Node
	// cached, when set, adds up the bytes of this route's fills that an
	// earlier node served from its cache (a prefetch's CachedBytes).
	cached *atomic.Int64
}

// fillOrigin is the node's cache.Origin. A fill whose context carries a
// fillRoute reads through the earlier nodes of the list (fillThrough);
// any other fill reads the origin store, wrapping a version change in
// cache.ErrVersionChanged as the cache requires.
type fillOrigin struct{ n *Node }

func (o fillOrigin) ReadAt(ctx context.Context, obj cache.Object, p []byte, off int64) (int, error) {
	if rt, ok := ctx.Value(fillRouteKey{}).(*fillRoute); ok && len(rt.earlier) > 0 {
		return o.n.fillThrough(ctx, rt, obj, p, off)
	}
	o.n.fills.forget(obj, off, len(p), o.n.cfg.PageSize)
	return o.n.originReadAt(ctx, obj, p, off)
}

// originReadAt reads p at off of obj from the origin store.
func (n *Node) originReadAt(ctx context.Context, obj cache.Object, p []byte, off int64) (int, error) {
	k, err := n.stats.ReadAt(ctx, obj.URI, obj.Version, p, off)
	if err != nil && errors.Is(err, origin.ErrVersionChanged) {
		err = errVersionChanged(err)
	}
	return k, err
}

// Where the bytes of a fill came from: a peer's cache, or the origin with a
// miss cause (the peer's, or owner_unavailable).
const srcPeer = -1

// fillSeg says that bytes [lo, hi) of a fill (or of one of its pages) came
// from src: srcPeer, or a readpath.MissCause.
type fillSeg struct {
	lo, hi int
	src    int
}

// fillThrough fills p with bytes [off, off+len(p)) of obj by peer reads
// (Peer, ExpectedVersion obj.Version) from the nodes of rt.earlier in
// order, skipping those known down, and reads what none of them could
// serve from the origin (owner_unavailable). A peer that fails mid-way is
// left at the byte it reached: the next node, or the origin, continues
// from there. An answer about the object (version changed, not found, out
// of range) ends the fill with that error. On success it records where
// each page came from (fillLog) before returning, so the readers of the
// pages (this read and any read waiting for the same pages) can count
// them.
func (n *Node) fillThrough(ctx context.Context, rt *fillRoute, obj cache.Object, p []byte, off int64) (int, error) {
	var segs []fillSeg
	got := 0
	for _, o := range rt.earlier {
		if got >= len(p) {
			break // a peer sent every byte before its stream failed
		}
		m, ok := rt.view.Member(o.ID)
		if !ok || m.GRPCAddr == "" || n.peers.down(m.GRPCAddr) {
			continue
		}
		start := got
		k, s, err := n.peers.read(ctx, m, obj, off+int64(got), int64(len(p)-got), func(d []byte) error {
			got += copy(p[got:], d)
			return nil
		})
		if err == nil {
			segs = layout(segs, start, s)
			break
		}
		if errors.Is(err, ErrPeerVersion) {
			k, got = 0, start // another version's bytes: drop them, read them elsewhere
		}
		if k > 0 {
			segs = append(segs, fillSeg{lo: start, hi: start + int(k), src: srcPeer})
		}
		if !peerFault(ctx, err) {
			if isVersionChanged(err) {
				err = errVersionChanged(err)
			}
			return got, err
		}
		n.log.Warn("peer fill failed; continuing without it", "peer", m.ID, "addr", m.GRPCAddr,
			"uri", obj.URI, "at", off+int64(got), "err", err)
	}
	var err error
	if got < len(p) {
		var k int
		k, err = n.originReadAt(ctx, obj, p[got:], off+int64(got))
		if err != nil && !errors.Is(err, io.EOF) {
			return got + k, err
		}
		if k > 0 {
			segs = append(segs, fillSeg{lo: got, hi: got + k, src: int(readpath.OwnerUnavailable)})
		}
		got += k
	}
	n.fills.record(obj, p[:got], off, n.cfg.PageSize, segs)
	if rt.cached != nil {
		for _, s := range segs {
			if s.src == srcPeer {
				rt.cached.Add(int64(s.hi - s.lo))
			}
		}
	}
	return got, err
}

// layout appends the segments of a peer's answer for the bytes starting at
// start: its peer hits first, then its origin bytes cause by cause. The
// summary says how many bytes came from where, not which: when a peer
// served a fill partly from its cache and partly from the origin, the
// split among the fill's pages is this order's (exact totals; see the
// package documentation).
func layout(segs []fillSeg, start int, s readpath.Summary) []fillSeg {
	at := start
	add := func(b int64, src int) {
		if b > 0 {
			segs = append(segs, fillSeg{lo: at, hi: at + int(b), src: src})
			at += int(b)
		}
	}
	add(s.PeerHitBytes+s.LocalHitBytes, srcPeer)
	for c := range s.Misses {
		add(s.Misses[c].Bytes, c)
	}
	return segs
}

// fillKey names one page of one object version.
type fillKey struct {
	uri, version string
	size, page   int64
}

// pageFill says where the bytes of one filled page came from and where the
// cache holds them while the fill's readers take them: addr is the address
// of the page's first byte in the buffer the cache passed to ReadAt (the
// cache hands its readers slices of that buffer); it is only compared,
// never dereferenced, so the record keeps no buffer alive.
type pageFill struct {
	addr uintptr
	n    int
	segs []fillSeg // relative to the page
}

// fillLogGen is the number of pages per generation of the fill log: a page
// stays findable for at least this many later page fills.
const fillLogGen = 4096

// fillLog records the recent fills that went through fillThrough, by page,
// in two generations (the older dropped when the newer fills up), so it
// stays small however much is read. Safe for concurrent use.
type fillLog struct {
	mu       sync.Mutex
	cur, old map[fillKey]pageFill
}

// record notes the pages of a fill of p at off (page-aligned, as the cache
// fills) and their sources, replacing older records of those pages.
func (l *fillLog) record(obj cache.Object, p []byte, off int64, pageSize int, segs []fillSeg) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur == nil {
		l.cur = make(map[fillKey]pageFill)
	}
	for lo := 0; lo < len(p); lo += pageSize {
		hi := min(len(p), lo+pageSize)
		pf := pageFill{addr: uintptr(unsafe.Pointer(&p[lo])), n: hi - lo}
		for _, s := range segs {
			if a, b := max(s.lo, lo), min(s.hi, hi); a < b {
				pf.segs = append(pf.segs, fillSeg{lo: a - lo, hi: b - lo, src: s.src})
			}
		}
		k := fillKey{obj.URI, obj.Version, obj.Size, (off + int64(lo)) / int64(pageSize)}
		delete(l.old, k)
		l.cur[k] = pf
		if len(l.cur) >= fillLogGen {
			l.old, l.cur = l.cur, make(map[fillKey]pageFill)
		}
	}
}

// forget drops the records of the pages of a fill that does not go through
// fillThrough (it comes from the origin, and the cache's own miss causes
// say why), so a record never outlives its page's last routed fill.
func (l *fillLog) forget(obj cache.Object, off int64, length, pageSize int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.cur) == 0 && len(l.old) == 0 {
		return
	}
	for lo := 0; lo < length; lo += pageSize {
		k := fillKey{obj.URI, obj.Version, obj.Size, (off + int64(lo)) / int64(pageSize)}
		delete(l.cur, k)
		delete(l.old, k)
	}
}

func (l *fillLog) get(k fillKey) (pageFill, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if pf, ok := l.cur[k]; ok {
		return pf, true
	}
	pf, ok := l.old[k]
	return pf, ok
}

// fillTally watches the slices a cache read hands out, in offset order, and
// counts those that are bytes of a recorded fill: the cache serves a missed
// page to every reader that wanted it (the one that fetched it and those
// that waited for it) from the very buffer it filled, and serves a hit from
// its own memory, so a slice is a fill's exactly when it starts where that
// fill put the page.
type fillTally struct {
	log   *fillLog
	obj   cache.Object
	ps    int64
	pos   int64
	sum   readpath.Summary // the fills' bytes: peer hits, origin bytes by cause
	pages int64            // slices (pages) counted in sum
}

func (t *fillTally) see(p []byte) {
	at := t.pos
	t.pos += int64(len(p))
	if len(p) == 0 {
		return
	}
	page := at / t.ps
	lo := int(at - page*t.ps)
	pf, ok := t.log.get(fillKey{t.obj.URI, t.obj.Version, t.obj.Size, page})
	if !ok || lo+len(p) > pf.n || pf.addr+uintptr(lo) != uintptr(unsafe.Pointer(unsafe.SliceData(p))) {
		return
	}
	hi := lo + len(p)
	var cause [readpath.NumMissCauses]int64
	for _, s := range pf.segs {
		a, b := max(s.lo, lo), min(s.hi, hi)
		if a >= b {
			continue
		}
		if s.src == srcPeer {
			t.sum.PeerHitBytes += int64(b - a)
		} else {
			cause[s.src] += int64(b - a)
			t.sum.OriginBytes += int64(b - a)
		}
	}
	t.sum.Bytes += int64(len(p))
	t.pages++
	// A page counts as one missed page, of the cause most of its origin
	// bytes had (a page is mixed only when a peer failed mid-page).
	top := -1
	for c, b := range cause {
		t.sum.Misses[c].Bytes += b
		if b > 0 && (top < 0 || b > cause[top]) {
			top = c
		}
	}
	if top >= 0 {
		t.sum.Misses[top].Pages++
	}
}

// summary is the read's summary from the cache's result r and the fills
// the tally recognised: the cache's hits are local hits; of its misses,
// the recognised ones count where their fill got them (a peer's cache, or
// the origin with the peer's miss cause or owner_unavailable). Misses the
// tally could not place (a page another read filled straight from the
// origin, or one whose record was already dropped) keep the cache's
// causes, less the recognised pages (taken from the causes in order: the
// cache does not say which cause each page had).
func (t *fillTally) summary(r cache.ReadResult) readpath.Summary {
	s := localSummary(r)
	rest := r.MissBytes - t.sum.Bytes
	if rest < 0 { // cannot happen: every recognised slice was a miss
		return s
	}
	out := readpath.Summary{
		Bytes:         r.Bytes,
		LocalHitBytes: r.HitBytes,
		PeerHitBytes:  t.sum.PeerHitBytes,
		OriginBytes:   t.sum.OriginBytes + rest,
		Misses:        t.sum.Misses,
	}
	if rest == 0 {
		return out
	}
	bytes, pages := t.sum.Bytes, t.pages
	for c := range s.Misses {
		m := &s.Misses[c]
		db, dp := min(bytes, m.Bytes), min(pages, m.Pages)
		m.Bytes -= db
		m.Pages -= dp
		bytes -= db
		pages -= dp
		out.Misses[c].Bytes += m.Bytes
		out.Misses[c].Pages += m.Pages
	}
	return out
}

// viewRouted reads [off, off+length) of obj from this node's cache, whose
// fills for this read go through the nodes of earlier (this node's
// predecessors in the blocks' preference list) before the origin; emit
// may be nil. The summary counts bytes by where they came from
// (fillTally.summary).
func (n *Node) viewRouted(ctx context.Context, view *membership.View, earlier []ring.Node, obj cache.Object, off, length int64, emit func([]byte) error) (readpath.Summary, error) {
	t := fillTally{log: &n.fills, obj: obj, ps: int64(n.cfg.PageSize), pos: off}
	ctx = context.WithValue(ctx, fillRouteKey{}, &fillRoute{view: view, earlier: earlier})
	r, err := n.cache.View(ctx, obj, off, length, func(p []byte) error {
		t.see(p)
		if emit == nil {
			return nil
		}
		return emit(p)
	})
	return t.summary(r), err
}
