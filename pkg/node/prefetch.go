package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/parquetx"
	"github.com/locuscache/locus/pkg/readpath"
	"github.com/locuscache/locus/pkg/ring"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// ErrOwnerUnavailable: a Prefetch could not reach any node of a block's
// preference list (prefetching caches pages only on the nodes of their
// lists, so there is nothing else to do). The gRPC code is UNAVAILABLE.
var ErrOwnerUnavailable = errors.New("node: no owner of the block is reachable")

// StatParquet is Stat plus, when the object is a Parquet file, its parsed
// footer (nil otherwise). An object is taken for Parquet when its name ends
// in .parquet or .parq, or when it starts and ends with the Parquet magic;
// its footer is read through the cluster cache and kept in the node's
// footer cache under (URI, version). A footer that does not parse makes the
// object non-Parquet (logged, and remembered for the version), not an
// error. An object that changes while
// its footer is read (the stat entry was stale) is stat'ed again and read
// once more, as Read starts over.
func (n *Node) StatParquet(ctx context.Context, uri string) (origin.Info, *parquetx.Footer, error) {
	info, err := n.Stat(ctx, uri)
	if err != nil {
		return info, nil, err
	}
	f, err := n.footer(ctx, info)
	if err != nil && isVersionChanged(err) {
		n.stats.Invalidate(uri)
		if info, err = n.Stat(ctx, uri); err != nil {
			return info, nil, err
		}
		f, err = n.footer(ctx, info)
	}
	if err != nil {
		if unusableFooter(err) {
			if !errors.Is(err, parquetx.ErrNotParquet) {
				n.log.Info("parquet footer unusable", "uri", uri, "version", info.Version, "err", err)
			}
			return info, nil, nil
		}
		return info, nil, err
	}
	return info, f, nil
}

// footer returns the parsed footer of one object version, or an error
// wrapping parquetx.ErrNotParquet for an object that is not Parquet.
func (n *Node) footer(ctx context.Context, info origin.Info) (*parquetx.Footer, error) {
	k := parquetx.FooterKey{URI: info.URI, Version: info.Version}
	// A version's bytes never change: whether it is usable Parquet is
	// looked at once. Every Stat of a client with an Origin (one per
	// read) otherwise read the first and last pages again (the magic of
	// a name that does not say Parquet, the footer of one that does but
	// is not usable), cache hits no reader asked for, and counted a
	// footer cache miss.
	if n.notParquet.has(k) {
		return nil, fmt.Errorf("%w: %s", parquetx.ErrNotParquet, info.URI)
	}
	if f, ok := n.footers.Get(k); ok {
		return f, nil
	}
	r := &readerAt{ctx: ctx, n: n, info: info}
	if !parquetx.IsParquetName(info.URI) {
		ok, err := parquetx.Sniff(r, info.Size)
		if err != nil {
			return nil, err
		}
		if !ok {
			n.notParquet.add(k)
			return nil, fmt.Errorf("%w: %s", parquetx.ErrNotParquet, info.URI)
		}
	}
	f, err := n.footers.LoadMissed(ctx, k, func(ctx context.Context) (*parquetx.Footer, error) {
		return parquetx.ReadFooter(&readerAt{ctx: ctx, n: n, info: info}, info.Size)
	})
	if unusableFooter(err) {
		n.notParquet.add(k)
	}
	return f, err
}

// unusableFooter reports whether err says the bytes of the object are no
// Parquet footer the node can use (rather than that they could not be
// read): the answer for every later Stat of the same version.
func unusableFooter(err error) bool {
	return errors.Is(err, parquetx.ErrNotParquet) || errors.Is(err, parquetx.ErrCorrupt) ||
		errors.Is(err, parquetx.ErrEncrypted) || errors.Is(err, parquetx.ErrUnsupported)
}

// keySet remembers the object versions whose magic said they are not
// Parquet, in two generations of at most keySetGen keys (the older dropped
// when the newer fills up), so it stays small however many objects are
// stat'ed. Safe for concurrent use.
type keySet struct {
	mu       sync.Mutex
	cur, old map[parquetx.FooterKey]struct{}
}

const keySetGen = 4096

func (s *keySet) has(k parquetx.FooterKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, inCur := s.cur[k]
	_, inOld := s.old[k]
	return inCur || inOld
}

func (s *keySet) add(k parquetx.FooterKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		s.cur = make(map[parquetx.FooterKey]struct{})
	}
	s.cur[k] = struct{}{}
	if len(s.cur) >= keySetGen {
		s.old, s.cur = s.cur, make(map[parquetx.FooterKey]struct{})
	}
}

// readerAt is an io.ReaderAt over one version of an object, reading through
// the cluster cache.
type readerAt struct {
	ctx  context.Context
	n    *Node
	info origin.Info
}

func (r *readerAt) ReadAt(p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if off >= r.info.Size {
		return 0, io.EOF
	}
	k := 0
	_, err := r.n.read(r.ctx, readpath.Request{URI: r.info.URI, Offset: off, Length: int64(len(p)), ExpectedVersion: r.info.Version},
		func(b []byte) error { k += copy(p[k:], b); return nil }, false)
	if err != nil {
		return k, err
	}
	if k < len(p) {
		return k, io.EOF
	}
	return k, nil
}

// PrefetchRequest names what to load into the cluster cache: byte ranges,
// and/or the column chunks of Parquet row groups (restricted to Columns,
// dotted paths, when set).
type PrefetchRequest struct {
	URI       string
	Ranges    []parquetx.Range
	RowGroups []int
	Columns   []string
}

// PrefetchResult says how many bytes had to be fetched from the origin and
// how many were already cached (on the node that cached them, or, for a
// replica's fill, on the earlier node of the list that served it), summed
// over the nodes.
type PrefetchResult struct {
	FetchedBytes, CachedBytes int64
}

// Prefetch loads the requested bytes into the caches of the nodes of their
// blocks' preference lists: the blocks whose list holds this node into its
// own cache, the others by asking the first reachable node of their list
// (its Prefetch, marked as forwarded so it is never forwarded again, and
// which fills from the origin). On a block where this node is a replica
// (not first in the list) its cache fills the way its reads do: from the
// earlier nodes of the list, whose own caches fill from the origin on a
// miss, so such a prefetch warms the owner too (see the package
// documentation). It returns once every page is cached, or with the first
// error.
// Errors are those of Read, plus parquetx.ErrNoSuchRowGroup /
// ErrNoSuchColumn, an error wrapping parquetx.ErrNotParquet for row groups
// of an object that is not Parquet, and ErrOwnerUnavailable.
func (n *Node) Prefetch(ctx context.Context, req PrefetchRequest) (PrefetchResult, error) {
	return n.prefetch(ctx, req, false)
}

// prefetch runs prefetchOnce and, when the object changed under a stat
// entry the node trusted (here, or on the owner it forwarded to: both
// invalidate theirs on the way out), runs it once more from a fresh Stat,
// as Read starts over.
func (n *Node) prefetch(ctx context.Context, req PrefetchRequest, forwarded bool) (PrefetchResult, error) {
	res, err := n.prefetchOnce(ctx, req, forwarded)
	if isVersionChanged(err) && ctx.Err() == nil {
		return n.prefetchOnce(ctx, req, forwarded)
	}
	return res, err
}

func (n *Node) prefetchOnce(ctx context.Context, req PrefetchRequest, forwarded bool) (PrefetchResult, error) {
	var res PrefetchResult
	if !n.enter() {
		return res, ErrStopped
	}
	defer n.exit()
	if err := checkURI(req.URI); err != nil {
		return res, err
	}
	info, err := n.stats.Stat(ctx, req.URI)
	if err != nil {
		return res, err
	}
	ranges := slices.Clone(req.Ranges)
	for _, r := range ranges {
		if err := (readpath.Request{URI: req.URI, Offset: r.Offset, Length: r.Length}).Validate(); err != nil {
			return res, fmt.Errorf("%w: %w", cache.ErrInvalidRange, err)
		}
		if r.Offset > info.Size {
			return res, fmt.Errorf("%w: offset %d, %s has %d bytes", cache.ErrOutOfRange, r.Offset, req.URI, info.Size)
		}
	}
	if len(req.RowGroups) > 0 {
		f, err := n.footer(ctx, info)
		if errors.Is(err, parquetx.ErrNotParquet) {
			return res, fmt.Errorf("%w: %s", errNotParquet, req.URI)
		}
		if err != nil {
			return res, err
		}
		cr, err := parquetx.ChunkRanges(f, req.RowGroups, req.Columns, 0)
		if err != nil {
			return res, err
		}
		ranges = append(ranges, cr...)
	}
	ranges = parquetx.MergeRanges(ranges, 0)

	// Group the pieces by how they are cached: here from the origin (the
	// blocks this node owns, or all of them for a forwarded prefetch),
	// here through the nodes before this one in the list (a replica's
	// blocks), or by the first reachable node of the list.
	type group struct {
		local  bool
		nodes  []ring.Node // local: the fill route; else the preference list
		ranges []parquetx.Range
	}
	obj := cache.Object{URI: req.URI, Version: info.Version, Size: info.Size}
	view := n.members.View()
	bs := n.cfg.BlockSize
	groups := map[string]*group{}
	var order []string
	for _, r := range ranges {
		end := min(r.End(), info.Size)
		for off := r.Offset; off < end; {
			bend := min(end, (off/bs+1)*bs)
			gr := group{local: true}
			if !forwarded && view.Ring != nil {
				owners := view.Ring.Owners(ring.BlockKey(req.URI, off/bs), n.cfg.Replication)
				if i := slices.IndexFunc(owners, func(o ring.Node) bool { return o.ID == n.cfg.ID }); i >= 0 {
					gr.nodes = owners[:i]
				} else {
					gr.local, gr.nodes = false, owners
				}
			}
			key := fmt.Sprintf("%v %v", gr.local, ownerIDs(gr.nodes))
			if groups[key] == nil {
				groups[key] = &gr
				order = append(order, key)
			}
			groups[key].ranges = append(groups[key].ranges, parquetx.Range{Offset: off, Length: bend - off})
			off = bend
		}
	}
	var mu sync.Mutex
	add := func(fetched, cached int64) {
		mu.Lock()
		res.FetchedBytes += fetched
		res.CachedBytes += cached
		mu.Unlock()
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, key := range order {
		gr := groups[key]
		rs := parquetx.MergeRanges(gr.ranges, 0)
		switch {
		case gr.local && len(gr.nodes) == 0:
			for _, r := range rs {
				g.Go(func() error {
					rr, err := n.cache.Prefetch(gctx, obj, r.Offset, r.Length)
					add(rr.MissBytes, rr.HitBytes)
					return err
				})
			}
		case gr.local:
			// A replica: a warm-up of its cache (not a read: the readers'
			// counters and the sizers leave it alone) whose fills go
			// through the earlier nodes of the list.
			for _, r := range rs {
				g.Go(func() error {
					var peer atomic.Int64
					rctx := context.WithValue(gctx, fillRouteKey{}, &fillRoute{view: view, earlier: gr.nodes, cached: &peer})
					rr, err := n.cache.Prefetch(rctx, obj, r.Offset, r.Length)
					fromPeer := min(peer.Load(), rr.MissBytes)
					add(rr.MissBytes-fromPeer, rr.HitBytes+fromPeer)
					return err
				})
			}
		default:
			g.Go(func() error {
				r, err := n.prefetchRemote(gctx, view, gr.nodes, req.URI, rs)
				add(r.FetchedBytes, r.CachedBytes)
				return err
			})
		}
	}
	err = g.Wait()
	if isVersionChanged(err) {
		n.stats.Invalidate(req.URI)
		err = errVersionChanged(err)
	}
	return res, err
}

// prefetchRemote asks the first reachable owner to prefetch ranges.
func (n *Node) prefetchRemote(ctx context.Context, view *membership.View, owners []ring.Node, uri string, rs []parquetx.Range) (PrefetchResult, error) {
	pr := make([]*cachev1.ByteRange, len(rs))
	for i, r := range rs {
		pr[i] = &cachev1.ByteRange{Offset: r.Offset, Length: r.Length}
	}
	var last error
	for _, o := range owners {
		m, ok := view.Member(o.ID)
		if !ok || m.GRPCAddr == "" || n.peers.down(m.GRPCAddr) {
			continue
		}
		resp, err := n.peers.prefetch(ctx, m, uri, pr)
		if err == nil {
			return PrefetchResult{FetchedBytes: resp.GetFetchedBytes(), CachedBytes: resp.GetCachedBytes()}, nil
		}
		if !peerFault(ctx, err) {
			return PrefetchResult{}, err
		}
		last = err
	}
	return PrefetchResult{}, fmt.Errorf("%w: %s (owners %v): %v", ErrOwnerUnavailable, uri, ownerIDs(owners), last)
}

func ownerIDs(owners []ring.Node) []string {
	ids := make([]string, len(owners))
	for i, o := range owners {
		ids[i] = o.ID
	}
	return ids
}
