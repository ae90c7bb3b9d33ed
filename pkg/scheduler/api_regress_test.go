package scheduler_test

// Regression tests from an adversarial review of the placement API's
// semantics and accounting (2026-11-30): each failed before its fix.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/schedapi"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// scrape returns the value of every sample of /metrics, keyed by the
// sample's text before the value (name{labels}).
func scrape(t *testing.T, c interface {
	DoRaw(context.Context, string, string, any) ([]byte, error)
}) map[string]float64 {
	t.Helper()
	raw, err := c.DoRaw(context.Background(), "GET", "/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out
}

// TestHitRatioMatchesMetrics: DESIGN.md defines the hit ratio per
// locality as locus_task_bytes_total{source=~"local|peer"} over all of
// locus_task_bytes_total for that locality, "the number the dashboards put
// next to the data-local ratio"; GET /v1/counters reports
// hit_ratio_by_locality. After the same calls both give the same number.
// Was: a complete whose bytes exceeded local+peer+miss was accepted and
// its surplus counted in the JSON denominator but in no source (0.5 in
// the JSON, 1.0 on the dashboard). Fixed: the surplus counts as miss
// bytes (placement.Outcome).
func TestHitRatioMatchesMetrics(t *testing.T) {
	_, c := startWith(t, threeNodes(t), nil)
	ctx := context.Background()
	p, err := c.Place(ctx, schedapi.PlaceRequest{Job: "hr", Task: "t", Split: split("s3://bkt/hr"), WaitMS: -1})
	if err != nil {
		t.Fatal(err)
	}
	// 100 bytes read, 50 of them local hits; the client does not break the
	// rest down. Either this is refused as bad input, or both views agree.
	_, err = c.Complete(ctx, schedapi.CompleteRequest{Job: "hr", Task: p.Task, Bytes: 100, LocalHitBytes: 50})
	if err != nil {
		if statusOf(err) == 400 {
			return // refused as bytes that do not add up: consistent
		}
		t.Fatal(err)
	}
	jc, err := c.Counters(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	m := scrape(t, c)
	var hit, all float64
	for _, src := range []string{"local", "peer", "origin"} {
		v := m[fmt.Sprintf(`locus_task_bytes_total{locality=%q,source=%q}`, p.Locality, src)]
		all += v
		if src != "origin" {
			hit += v
		}
	}
	var jsonRatio float64
	switch p.Locality {
	case "DATA_LOCAL":
		jsonRatio = jc.HitRatioByLocality.DataLocal
	case "RACK_LOCAL":
		jsonRatio = jc.HitRatioByLocality.RackLocal
	default:
		jsonRatio = jc.HitRatioByLocality.OtherLocal
	}
	if all == 0 {
		t.Fatalf("no locus_task_bytes_total for %s", p.Locality)
	}
	if prom := hit / all; prom != jsonRatio {
		t.Errorf("%s hit ratio: GET /v1/counters says %v (bytes %d), the DESIGN formula over locus_task_bytes_total says %v (%v of %v): the complete's bytes %d != local %d + peer %d + miss %d was accepted",
			p.Locality, jsonRatio, jc.Bytes, prom, hit, all, jc.Bytes, jc.LocalHitBytes, jc.PeerHitBytes, jc.MissBytes)
	}
}

// TestCompleteRetryAfter503IsNotNotFound: with etcd, a complete whose
// counters cannot be written gets 503 (Retry-After: 1) though the leader
// applied it (freed the slot, counted the task). Its retry is answered as
// that completion (503 again while etcd is down, 200 once the counters
// are written), not 404. Was: the retry got not_found for a task the
// client did complete. Fixed: Scheduler.unconfirmed.
func TestCompleteRetryAfter503IsNotNotFound(t *testing.T) {
	e := schedulertest.StartEtcd(t)
	s := schedulertest.Start(t, scheduler.Config{
		NodeID:     "sched-0",
		Membership: threeNodes(t),
		Etcd:       scheduler.EtcdConfig{Endpoints: e.Endpoints, SessionTTL: 2 * time.Second, OpTimeout: time.Second, Prefix: "/" + t.Name() + "/"},
	})
	waitLeader(t, []*scheduler.Scheduler{s}, 10*time.Second)
	c := schedulertest.NewClient(s.HTTPAddr())
	ctx := context.Background()
	p, err := c.Place(ctx, schedapi.PlaceRequest{Job: "j", Task: "t", Split: split("s3://bkt/u"), WaitMS: -1})
	if err != nil {
		t.Fatal(err)
	}
	e.Stop()
	_, err = c.Complete(ctx, schedapi.CompleteRequest{Job: "j", Task: p.Task, LocalHitBytes: 10})
	if statusOf(err) != 503 {
		t.Fatalf("complete with etcd down: %v, want 503", err)
	}
	inUse := 0
	for _, m := range s.Ring().Members {
		inUse += m.SlotsInUse
	}
	jc, _ := s.JobCounters(ctx, "j")
	t.Logf("after a complete answered 503: %d slots in use, counters completed %d running %d local bytes %d", inUse, jc.Completed, jc.Running, jc.LocalHitBytes)
	// The client retries as told (before the leader steps down).
	_, err = c.Complete(ctx, schedapi.CompleteRequest{Job: "j", Task: p.Task, LocalHitBytes: 10})
	if codeOf(err) == schedapi.CodeNotFound {
		t.Errorf("retry of a complete answered 503: %v: the first attempt was applied after all", err)
	}
}
