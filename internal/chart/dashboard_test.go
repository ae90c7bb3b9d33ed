package chart_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// designMetrics are DESIGN.md's metric names (section "Metrics"): the
// contract the dashboard is built on. Each must appear in it.
var designMetrics = []string{
	"locus_cache_hits_total", "locus_cache_misses_total", "locus_cache_bytes_read_total",
	"locus_cache_used_bytes", "locus_cache_capacity_bytes", "locus_cache_evictions_total",
	"locus_read_duration_seconds", "locus_origin_requests_total",
	"locus_tasks_placed_total", "locus_task_bytes_total", "locus_placement_duration_seconds",
	"locus_ring_members", "locus_slots",
}

func readDashboard(t *testing.T, rel ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{moduleRoot(t)}, rel...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDashboardCopiesIdentical: dashboards/locus.json (for Grafana users
// without the chart) is the chart's helm/locus/dashboards/locus.json byte
// for byte. The chart can only read files inside itself (.Files.Get), so
// the copy in the chart is the one to edit; copy it over after.
func TestDashboardCopiesIdentical(t *testing.T) {
	top := readDashboard(t, "dashboards", "locus.json")
	inChart := readDashboard(t, "helm", "locus", "dashboards", "locus.json")
	if !bytes.Equal(top, inChart) {
		t.Fatalf("dashboards/locus.json (%d bytes) differs from helm/locus/dashboards/locus.json (%d bytes): edit the chart's copy, then cp helm/locus/dashboards/locus.json dashboards/", len(top), len(inChart))
	}
}

// exprs returns every PromQL expression in the dashboard (panel targets
// and template variable queries), with where it is.
func exprs(t *testing.T, dash []byte) map[string]string {
	t.Helper()
	var root any
	if err := json.Unmarshal(dash, &root); err != nil {
		t.Fatalf("dashboard is not JSON: %v", err)
	}
	out := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			title, _ := v["title"].(string)
			if title != "" {
				path = title
			}
			for k, c := range v {
				if s, ok := c.(string); ok && (k == "expr" || k == "definition" || k == "query") && strings.Contains(s, "locus_") {
					out[s] = path
				}
				walk(path, c)
			}
		case []any:
			for _, c := range v {
				walk(path, c)
			}
		}
	}
	walk("dashboard", root)
	if len(out) == 0 {
		t.Fatal("dashboard has no PromQL expressions")
	}
	return out
}

var metricName = regexp.MustCompile(`\blocus_[a-z0-9_]+\b`)

// scrapedMetrics returns the metric families a real cache node and a real
// scheduler export, by name, after one read through the node so that
// every labelled series has appeared.
func scrapedMetrics(t *testing.T) map[string]dto.MetricType {
	t.Helper()
	got := map[string]dto.MetricType{}

	mem := origintest.NewMemStore()
	const uri = "s3://lake/part-0.parquet"
	mem.Put(uri, bytes.Repeat([]byte("locus"), 64<<10))
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: mem})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, _, err := nodetest.ReadRange(ctx, c.Client(t, 0), &cachev1.ReadRangeRequest{Uri: uri, Offset: 0, Length: 1 << 16}); err != nil {
		t.Fatalf("read through the node: %v", err)
	}
	fams, err := c.Nodes[0].Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		got[f.GetName()] = f.GetType()
	}

	s := schedulertest.Start(t, scheduler.Config{})
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scheduler /metrics: %d %s", rec.Code, rec.Body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	sfams, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("scheduler /metrics does not parse: %v", err)
	}
	for name, f := range sfams {
		got[name] = f.GetType()
	}
	return got
}

// TestDashboardMetricsExported: every metric the dashboard queries is one
// the daemons export (a histogram's _bucket, _sum and _count included), and
// every metric DESIGN.md lists has a panel.
func TestDashboardMetricsExported(t *testing.T) {
	dash := readDashboard(t, "helm", "locus", "dashboards", "locus.json")
	exported := scrapedMetrics(t)
	used := map[string]bool{}
	for expr, where := range exprs(t, dash) {
		for _, name := range metricName.FindAllString(expr, -1) {
			base := name
			if _, ok := exported[name]; !ok {
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, found := strings.CutSuffix(name, suffix); found && exported[b] == dto.MetricType_HISTOGRAM {
						base = b
					}
				}
			}
			if _, ok := exported[base]; !ok {
				t.Errorf("panel %q queries %s, which neither daemon exports", where, name)
			}
			used[base] = true
		}
	}
	var missing []string
	for _, name := range designMetrics {
		if _, ok := exported[name]; !ok {
			t.Errorf("DESIGN.md's %s is not in a real scrape of the daemons", name)
		}
		if !used[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("the dashboard shows none of DESIGN.md's %v", missing)
	}
}

// TestDashboardHitRatioNextToDataLocal: the first row puts the data-local
// ratio and the hit ratio by locality side by side (DESIGN.md: "the
// number the dashboards put next to the data-local ratio"), the hit ratio
// computed as DESIGN.md defines it.
func TestDashboardHitRatioNextToDataLocal(t *testing.T) {
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			GridPos struct{ X, Y int }
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(readDashboard(t, "helm", "locus", "dashboards", "locus.json"), &d); err != nil {
		t.Fatal(err)
	}
	var dataLocal, hitRatio *struct{ x, y int }
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			switch {
			case strings.Contains(tg.Expr, `locus_tasks_placed_total{locality="DATA_LOCAL"`):
				dataLocal = &struct{ x, y int }{p.GridPos.X, p.GridPos.Y}
			case strings.Contains(tg.Expr, `sum by (locality) (rate(locus_task_bytes_total{source=~"local|peer"`) &&
				strings.Contains(tg.Expr, `/ sum by (locality) (rate(locus_task_bytes_total{`):
				hitRatio = &struct{ x, y int }{p.GridPos.X, p.GridPos.Y}
			}
		}
	}
	if dataLocal == nil || hitRatio == nil {
		t.Fatalf("want a data-local ratio panel and a hit-ratio-by-locality panel; found %v, %v", dataLocal != nil, hitRatio != nil)
	}
	if dataLocal.y != hitRatio.y {
		t.Errorf("data-local ratio at row %d, hit ratio by locality at row %d: want them side by side", dataLocal.y, hitRatio.y)
	}
}
