package scheduler

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/locuscache/locus/pkg/placement"
)

// metrics holds the scheduler's Prometheus metrics in a private registry.
// The task counters and gauges are read from the placer at scrape time (so
// they are exactly the counters GET /v1/counters shows); only the
// histograms and request counters are updated as calls happen.
type metrics struct {
	reg *prometheus.Registry

	// placementWait: locus_placement_duration_seconds, per placed task,
	// from its first submission to its placement (the delay-scheduling
	// wait plus the queueing; 0 for a task placed at once).
	placementWait prometheus.Histogram
	// requests: locus_scheduler_request_duration_seconds{call}.
	requests *prometheus.HistogramVec
	// answers: locus_scheduler_requests_total{call,code}.
	answers *prometheus.CounterVec
	// persist: locus_scheduler_persist_duration_seconds (etcd flushes).
	persist       prometheus.Histogram
	persistErrors prometheus.Counter
}

func newMetrics(s *Scheduler) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		placementWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "locus_placement_duration_seconds",
			Help:    "Per placed task, the time from its first submission to its placement: the locality wait and queueing it went through (0 when placed at once).",
			Buckets: []float64{0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 4, 6, 8, 10, 15, 20, 30, 60},
		}),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "locus_scheduler_request_duration_seconds",
			Help:    "Duration of scheduler API calls (HTTP and gRPC), by call: place, place_batch, complete, complete_batch, counters, ring.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 3, 14), // 0.1 ms .. 160 s
		}, []string{"call"}),
		answers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "locus_scheduler_requests_total",
			Help: "Scheduler API calls by call and HTTP status code (gRPC calls are counted with the equivalent HTTP code; \"forwarded\": proxied to the leader).",
		}, []string{"call", "code"}),
		persist: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "locus_scheduler_persist_duration_seconds",
			Help:    "Duration of the leader's counter flushes to etcd (one flush covers every call that changed counters meanwhile).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 12),
		}),
		persistErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "locus_scheduler_persist_errors_total",
			Help: "Counter flushes to etcd that failed (the calls waiting for them answered 503).",
		}),
	}
	m.reg.MustRegister(m.placementWait, m.requests, m.answers, m.persist, m.persistErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&stateCollector{s: s})
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

var (
	descPlaced = prometheus.NewDesc("locus_tasks_placed_total",
		"Tasks placed, by locality (DATA_LOCAL, RACK_LOCAL, OTHER_LOCAL): Tez's DATA_LOCAL_TASKS, RACK_LOCAL_TASKS, OTHER_LOCAL_TASKS over every job.", []string{"locality"}, nil)
	descCompleted = prometheus.NewDesc("locus_tasks_completed_total",
		"Tasks that reported completion, by the locality they were placed with.", []string{"locality"}, nil)
	descLost = prometheus.NewDesc("locus_tasks_lost_total",
		"Running tasks lost (their node died, left or restarted, their placement could not be delivered, or they were running at a leader failover), by locality.", []string{"locality"}, nil)
	descRunning = prometheus.NewDesc("locus_tasks_running",
		"Tasks placed and not yet completed or lost, by locality.", []string{"locality"}, nil)
	descQueued = prometheus.NewDesc("locus_tasks_queued",
		"Tasks waiting for a slot (their locality wait, or a free slot).", nil, nil)
	descBytes = prometheus.NewDesc("locus_task_bytes_total",
		"Bytes read by completed tasks, by the locality they ran with and the source that served them: local (the node's cache), peer (another node's cache), origin (a miss). Hit ratio per locality = source=~\"local|peer\" over all.", []string{"locality", "source"}, nil)
	descMembers = prometheus.NewDesc("locus_ring_members",
		"Members the scheduler sees in the gossip, by state: alive and draining cache nodes, observers.", []string{"state"}, nil)
	descSlots = prometheus.NewDesc("locus_slots",
		"Executor slots of the cache nodes, by state: used (held by running tasks), free (on alive nodes), draining (on draining nodes, not used).", []string{"state"}, nil)
	descLeader = prometheus.NewDesc("locus_scheduler_leader",
		"1 when this scheduler places tasks (standalone, or the elected leader), 0 on a follower.", nil, nil)
	descWaiting = prometheus.NewDesc("locus_scheduler_waiting_requests",
		"Tasks of requests waiting for their placement (single and batch).", nil, nil)
	descEpoch = prometheus.NewDesc("locus_membership_views_total",
		"Views of the membership this scheduler has seen (grows on every membership change).", nil, nil)
)

// stateCollector reads the placer and the View at scrape time.
type stateCollector struct{ s *Scheduler }

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPlaced, descCompleted, descLost, descRunning, descQueued, descBytes, descMembers, descSlots, descLeader, descWaiting, descEpoch} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	leader := 0.0
	if s.IsLeader() {
		leader = 1
	}
	ch <- prometheus.MustNewConstMetric(descLeader, prometheus.GaugeValue, leader)

	s.mu.Lock()
	var (
		have     bool
		g        placement.Counters
		nodes    []placement.NodeStatus
		nwaiting = len(s.waiters)
	)
	if s.p != nil {
		have = true
		g, _ = s.p.Counters("")
		nodes = s.p.Nodes()
	}
	s.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, float64(nwaiting))

	if have {
		for _, l := range placement.Localities {
			lc := g.Level(l)
			name := l.String()
			ch <- prometheus.MustNewConstMetric(descPlaced, prometheus.CounterValue, float64(lc.Placed), name)
			ch <- prometheus.MustNewConstMetric(descCompleted, prometheus.CounterValue, float64(lc.Completed), name)
			ch <- prometheus.MustNewConstMetric(descLost, prometheus.CounterValue, float64(lc.Lost), name)
			ch <- prometheus.MustNewConstMetric(descRunning, prometheus.GaugeValue, float64(lc.Running), name)
			ch <- prometheus.MustNewConstMetric(descBytes, prometheus.CounterValue, float64(lc.LocalHitBytes), name, "local")
			ch <- prometheus.MustNewConstMetric(descBytes, prometheus.CounterValue, float64(lc.PeerHitBytes), name, "peer")
			ch <- prometheus.MustNewConstMetric(descBytes, prometheus.CounterValue, float64(lc.MissBytes), name, "origin")
		}
		ch <- prometheus.MustNewConstMetric(descQueued, prometheus.GaugeValue, float64(g.Queued))
		var used, free, draining int
		for _, n := range nodes {
			used += n.Used
			switch n.State {
			case placement.Alive:
				free += max(n.Slots-n.Used, 0)
			case placement.Draining:
				draining += max(n.Slots-n.Used, 0)
			}
		}
		ch <- prometheus.MustNewConstMetric(descSlots, prometheus.GaugeValue, float64(used), "used")
		ch <- prometheus.MustNewConstMetric(descSlots, prometheus.GaugeValue, float64(free), "free")
		ch <- prometheus.MustNewConstMetric(descSlots, prometheus.GaugeValue, float64(draining), "draining")
	}

	if s.mem != nil {
		v := s.mem.View()
		var alive, draining, observers int
		for _, m := range v.Members {
			switch {
			case m.IsObserver():
				observers++
			case m.Placeable():
				alive++
			default:
				draining++
			}
		}
		ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(alive), "alive")
		ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(draining), "draining")
		ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(observers), "observer")
		ch <- prometheus.MustNewConstMetric(descEpoch, prometheus.CounterValue, float64(v.Generation))
	}
}
