package node

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc/codes"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/parquetx"
	"github.com/locuscache/locus/pkg/readpath"
)

// metrics holds the node's Prometheus metrics in a private registry. The
// names are DESIGN.md's; see the package documentation for what each
// counts.
type metrics struct {
	reg *prometheus.Registry

	bytesRead      *prometheus.CounterVec // locus_cache_bytes_read_total{source}
	peerServed     *prometheus.CounterVec // locus_peer_served_bytes_total{source}
	ownerUnavail   atomic.Int64           // pages read around this cache (readOrigin), folded into locus_cache_misses_total{cause="owner_unavailable"}
	readDuration   *prometheus.HistogramVec
	reads          *prometheus.CounterVec // locus_reads_total{kind,code}
	originRequests *prometheus.CounterVec // locus_origin_requests_total{op,status}
	originAttempts *prometheus.CounterVec // locus_origin_http_attempts_total{method,code}
	peerReads      *prometheus.CounterVec // locus_peer_reads_total{result}
}

// Sources of the node's gauges, read at scrape time.
type metricSources struct {
	id, rack  string
	cache     func() cache.Stats
	stats     func() origin.StatCacheStats
	footers   func() parquetx.FooterCacheStats
	inflight  func() int64
	draining  func() bool
	ready     func() bool
	members   func() int
	capacity  int64
	blockSize int64
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		bytesRead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "locus_cache_bytes_read_total",
			Help: "Bytes returned to readers of this node (gRPC ReadRange and the S3 gateway, not peer reads), by where they came from: local (this node's cache), peer (another node's cache), origin (the object store).",
		}, []string{"source"}),
		peerServed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "locus_peer_served_bytes_total",
			Help: "Bytes this node served to other nodes' peer reads, by source: local (its cache), peer (a replica's fill from an earlier owner's cache that the read joined) or origin (filled on a miss).",
		}, []string{"source"}),
		readDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "locus_read_duration_seconds",
			Help:    "Duration of reads served by this node, by kind: client (gRPC ReadRange and gateway GETs, whatever their answer) or peer (reads forwarded by other nodes).",
			Buckets: []float64{.0002, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"kind"}),
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "locus_reads_total",
			Help: "Reads served by this node, one per gRPC ReadRange or S3 gateway GET, by kind (client, peer) and outcome as a gRPC code (OK, NotFound, FailedPrecondition, OutOfRange, Canceled, Unavailable, ...; NotModified for the gateway's 304).",
		}, []string{"kind", "code"}),
		originRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "locus_origin_requests_total",
			Help: "Calls to the origin store, by operation (stat, read, list) and status (ok, not_found, version_changed, no_version, access_denied, unavailable, timeout, canceled, error).",
		}, []string{"op", "status"}),
		originAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "locus_origin_http_attempts_total",
			Help: "HTTP attempts made to the S3 origin, retries included, by method and HTTP status code (0: no response).",
		}, []string{"method", "code"}),
		peerReads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "locus_peer_reads_total",
			Help: "Peer reads this node made (reads forwarded to a block's list, and a replica's cache fills from the nodes before it), by result: ok, or the reason it continued elsewhere.",
		}, []string{"result"}),
	}
	for _, s := range []readpath.Source{readpath.Local, readpath.Peer, readpath.Origin} {
		m.bytesRead.WithLabelValues(s.String())
	}
	m.peerServed.WithLabelValues("local")
	m.peerServed.WithLabelValues("peer")
	m.peerServed.WithLabelValues("origin")
	m.readDuration.WithLabelValues("client")
	m.readDuration.WithLabelValues("peer")
	for _, op := range []string{"stat", "read", "list"} {
		m.originRequests.WithLabelValues(op, "ok") // DESIGN's metric is there from the first scrape
	}
	m.reg.MustRegister(m.bytesRead, m.peerServed, m.readDuration, m.reads, m.originRequests, m.originAttempts, m.peerReads,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// register adds the gauges read from the node's parts at scrape time.
func (m *metrics) register(src metricSources) {
	m.reg.MustRegister(&nodeCollector{src: src, ownerUnavail: &m.ownerUnavail})
}

// observeRead records one finished read.
func (m *metrics) observeRead(peer bool, s readpath.Summary, err error, d time.Duration) {
	m.observe(peer, Code(err).String(), s, d)
}

// observe records one finished read whose outcome is code.
func (m *metrics) observe(peer bool, code string, s readpath.Summary, d time.Duration) {
	kind := "client"
	if peer {
		kind = "peer"
	}
	m.reads.WithLabelValues(kind, code).Inc()
	m.readDuration.WithLabelValues(kind).Observe(d.Seconds())
	if peer {
		m.peerServed.WithLabelValues("local").Add(float64(s.LocalHitBytes))
		m.peerServed.WithLabelValues("peer").Add(float64(s.PeerHitBytes))
		m.peerServed.WithLabelValues("origin").Add(float64(s.OriginBytes))
		return
	}
	m.bytesRead.WithLabelValues("local").Add(float64(s.LocalHitBytes))
	m.bytesRead.WithLabelValues("peer").Add(float64(s.PeerHitBytes))
	m.bytesRead.WithLabelValues("origin").Add(float64(s.OriginBytes))
}

// codeNotModified is locus_reads_total's code for a gateway GET answered
// 304 Not Modified (If-None-Match, If-Modified-Since): the one value that
// is not a gRPC code, since gRPC has no such answer. The client's copy was
// current and no byte was sent.
const codeNotModified = "NotModified"

// gatewayCode names the outcome of one S3 gateway GET for
// locus_reads_total's code label, in the gRPC path's terms, so a
// dashboard sums both: from the error when the Backend failed (or the
// client went away: Canceled), else from the HTTP status the gateway
// decided (404 NotFound, 412 FailedPrecondition, 416 OutOfRange, 400
// InvalidArgument, 403 PermissionDenied, 304 NotModified).
func gatewayCode(status int, err error) string {
	switch {
	case status == http.StatusNotModified:
		return codeNotModified
	case err != nil && (status == 0 || status < 300 || status >= 500 || errors.Is(err, context.Canceled)):
		return Code(err).String()
	}
	c := codes.Unknown
	switch {
	case status < 300:
		c = codes.OK
	case status == http.StatusNotFound:
		c = codes.NotFound
	case status == http.StatusPreconditionFailed:
		c = codes.FailedPrecondition
	case status == http.StatusRequestedRangeNotSatisfiable:
		c = codes.OutOfRange
	case status == http.StatusForbidden:
		c = codes.PermissionDenied
	case status == http.StatusServiceUnavailable:
		c = codes.Unavailable
	case status == http.StatusNotImplemented:
		c = codes.Unimplemented
	case status >= 400 && status < 500:
		c = codes.InvalidArgument
	case status >= 500:
		c = codes.Internal
	}
	return c.String()
}

// peerRead records the outcome of one peer stream.
func (m *metrics) peerRead(err error) {
	r := "ok"
	switch {
	case err == nil:
	case errors.Is(err, errPeerIdle):
		r = "idle_timeout"
	case errors.Is(err, ErrPeer):
		r = "protocol_error"
	default:
		r = Code(err).String()
	}
	m.peerReads.WithLabelValues(r).Inc()
}

// originStatus names the outcome of one origin call for
// locus_origin_requests_total.
func originStatus(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, origin.ErrNotFound):
		return "not_found"
	case errors.Is(err, origin.ErrVersionChanged):
		return "version_changed"
	case errors.Is(err, origin.ErrNoVersion):
		return "no_version" // an object without an ETag: refused, not a failure of the store
	case errors.Is(err, origin.ErrAccessDenied), errors.Is(err, origin.ErrOutsideRoot):
		return "access_denied"
	case errors.Is(err, origin.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, origin.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "error"
}

// observeAttempt counts one HTTP attempt of the S3 store.
func (m *metrics) observeAttempt(a origin.Attempt) {
	m.originAttempts.WithLabelValues(a.Method, strconv.Itoa(a.Status)).Inc()
}

// countingStore counts the origin calls the node makes.
type countingStore struct {
	origin.Store
	m *metrics
}

func (s countingStore) Stat(ctx context.Context, uri string) (origin.Info, error) {
	info, err := s.Store.Stat(ctx, uri)
	s.m.originRequests.WithLabelValues("stat", originStatus(err)).Inc()
	return info, err
}

func (s countingStore) ReadAt(ctx context.Context, uri, version string, p []byte, off int64) (int, error) {
	n, err := s.Store.ReadAt(ctx, uri, version, p, off)
	e := err
	if errors.Is(e, io.EOF) && n == len(p) {
		e = nil
	}
	s.m.originRequests.WithLabelValues("read", originStatus(e)).Inc()
	return n, err
}

func (s countingStore) List(ctx context.Context, prefix string, fn func(origin.Info) error) error {
	var stopped error // fn's own error: the caller stopped the listing, the origin did not fail
	err := s.Store.List(ctx, prefix, func(info origin.Info) error {
		stopped = fn(info)
		return stopped
	})
	e := err
	if stopped != nil && errors.Is(err, stopped) {
		e = nil
	}
	s.m.originRequests.WithLabelValues("list", originStatus(e)).Inc()
	return err
}

// nodeCollector reads the cache's, the stat cache's and the node's state
// at scrape time.
type nodeCollector struct {
	src          metricSources
	ownerUnavail *atomic.Int64
}

var (
	descHits       = prometheus.NewDesc("locus_cache_hits_total", "Pages served from this node's cache (for its own readers and for peers; prefetches are counted apart, in locus_cache_prefetch_pages_total).", nil, nil)
	descPrefetch   = prometheus.NewDesc("locus_cache_prefetch_pages_total", "Pages prefetches (warm-ups) asked this node's cache for, by result: cached (already there) or fetched (from the origin, or a fetch in progress joined). Not in locus_cache_hits_total or locus_cache_misses_total.", []string{"result"}, nil)
	descMisses     = prometheus.NewDesc("locus_cache_misses_total", "Pages not served from a cache, by cause: cold, capacity, invalidated, corrupt (this node's cache), owner_unavailable (no node of a block's preference list could be reached, so this node read the origin around its cache; a list node that fills its cache from the origin for that reason counts the page under its cache's cause).", []string{"cause"}, nil)
	descUsed       = prometheus.NewDesc("locus_cache_used_bytes", "Bytes of page data cached.", nil, nil)
	descCapacity   = prometheus.NewDesc("locus_cache_capacity_bytes", "Page data capacity of the cache.", nil, nil)
	descEvictions  = prometheus.NewDesc("locus_cache_evictions_total", "Pages evicted for space.", nil, nil)
	descRejected   = prometheus.NewDesc("locus_cache_admission_rejected_total", "Fetched pages the admission policy refused to cache.", nil, nil)
	descInvalid    = prometheus.NewDesc("locus_cache_invalidated_pages_total", "Pages dropped because their object changed version.", nil, nil)
	descCorrupt    = prometheus.NewDesc("locus_cache_corrupt_pages_total", "Pages that failed their checksum (dropped and refetched).", nil, nil)
	descWriteErr   = prometheus.NewDesc("locus_cache_write_errors_total", "Failed writes to the cache's slab files.", nil, nil)
	descPages      = prometheus.NewDesc("locus_cache_resident_pages", "Pages cached.", nil, nil)
	descRAMPages   = prometheus.NewDesc("locus_cache_ram_pages", "Disk pages with a copy in the RAM tier.", nil, nil)
	descRAMHits    = prometheus.NewDesc("locus_cache_ram_hits_total", "Pages served from the RAM tier.", nil, nil)
	descDegraded   = prometheus.NewDesc("locus_cache_degraded", "1 while the cache runs below its configuration: slabs that did not fit at start, or a pause in storing new pages after a failed write (full or failing disk).", nil, nil)
	descReindexed  = prometheus.NewDesc("locus_cache_reindexed_pages", "Pages found on disk at start (warm restart).", nil, nil)
	descOrigBytes  = prometheus.NewDesc("locus_cache_origin_fetched_bytes_total", "Bytes the cache fetched to fill its pages: from the origin, or, on a node that is not its block's owner (a replica), from the earlier nodes of the block's list when they have it (locus_origin_requests_total counts the origin's own reads).", nil, nil)
	descSizingRead = prometheus.NewDesc("locus_cache_sizing_sampled_reads_total", "Page reads the policy sizing estimate (locus_cache_estimated_hit_ratio{model=\"policy\"}) replayed: the sample it rests on.", nil, nil)
	descEstimate   = prometheus.NewDesc("locus_cache_estimated_hit_ratio", "Estimated page hit ratio if the cache were size_factor times its capacity: model=policy simulates the cache's own policy (miniature simulation, anchored at the measured hit ratio), model=lru is the LRU curve (SHARDS).", []string{"size_factor", "model"}, nil)
	descStat       = prometheus.NewDesc("locus_stat_cache_total", "Stat cache outcomes: hit, miss, revalidation, changed (a new version found).", []string{"outcome"}, nil)
	descFooter     = prometheus.NewDesc("locus_parquet_footer_cache_total", "Parquet footer cache outcomes: hit, miss, eviction.", []string{"outcome"}, nil)
	descFooterSize = prometheus.NewDesc("locus_parquet_footer_cache_bytes", "Estimated memory of the cached Parquet footers.", nil, nil)
	descInflight   = prometheus.NewDesc("locus_inflight_reads", "Reads in progress on this node.", nil, nil)
	descDraining   = prometheus.NewDesc("locus_node_draining", "1 while the node drains before leaving.", nil, nil)
	descReady      = prometheus.NewDesc("locus_node_ready", "1 once the node joined the cluster and its cache is indexed, until it drains.", nil, nil)
	descMembers    = prometheus.NewDesc("locus_node_cluster_members", "Members of the cluster this node sees (itself included).", nil, nil)
	descInfo       = prometheus.NewDesc("locus_node_info", "Constant 1, labelled with the node's identity.", []string{"node_id", "rack", "block_size", "announced_capacity"}, nil)
)

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	prometheus.DescribeByCollect(c, ch)
}

func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	s := c.src.cache()
	counter(descHits, float64(s.HitPages))
	for cause, mc := range s.Misses {
		if cache.MissCause(cause) == cache.MissOwnerUnavailable {
			continue
		}
		counter(descMisses, float64(mc.Pages), cache.MissCause(cause).String())
	}
	counter(descMisses, float64(c.ownerUnavail.Load()), readpath.OwnerUnavailable.String())
	counter(descPrefetch, float64(s.PrefetchCachedPages), "cached")
	counter(descPrefetch, float64(s.PrefetchFetchedPages), "fetched")
	gauge(descUsed, float64(s.UsedBytes))
	gauge(descCapacity, float64(s.CapacityBytes))
	counter(descEvictions, float64(s.Evictions))
	counter(descRejected, float64(s.Rejected))
	counter(descInvalid, float64(s.InvalidatedPages))
	counter(descCorrupt, float64(s.CorruptPages))
	counter(descWriteErr, float64(s.WriteErrors))
	gauge(descPages, float64(s.ResidentPages))
	gauge(descRAMPages, float64(s.RAMPages))
	counter(descRAMHits, float64(s.RAMHits))
	gauge(descDegraded, b2f(s.Degraded))
	gauge(descReindexed, float64(s.ReindexedPages))
	counter(descOrigBytes, float64(s.OriginBytes))
	if s.PolicySizing != nil {
		counter(descSizingRead, float64(s.PolicySizingReads))
	}
	for model, pts := range map[string][]cache.SizingPoint{"lru": s.Sizing, "policy": s.PolicySizing} {
		for _, p := range pts {
			if s.CapacityPages > 0 { // a pass-through cache (no slots) has no size to scale
				gauge(descEstimate, p.HitRatio, strconv.FormatFloat(p.Factor, 'g', -1, 64), model)
			}
		}
	}
	st := c.src.stats()
	counter(descStat, float64(st.Hits), "hit")
	counter(descStat, float64(st.Misses), "miss")
	counter(descStat, float64(st.Revalidations), "revalidation")
	counter(descStat, float64(st.Changed), "changed")
	fs := c.src.footers()
	counter(descFooter, float64(fs.Hits), "hit")
	counter(descFooter, float64(fs.Misses), "miss")
	counter(descFooter, float64(fs.Evictions), "eviction")
	gauge(descFooterSize, float64(fs.Bytes))
	gauge(descInflight, float64(c.src.inflight()))
	gauge(descDraining, b2f(c.src.draining()))
	gauge(descReady, b2f(c.src.ready()))
	gauge(descMembers, float64(c.src.members()))
	gauge(descInfo, 1, c.src.id, c.src.rack, strconv.FormatInt(c.src.blockSize, 10), strconv.FormatInt(c.src.capacity, 10))
}
