package node_test

import (
	"net/http"
	"testing"

	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

// TestDirectoryMarkerReadsAreCounted: a gateway GET or HEAD of a directory
// marker ("dir/", read from the origin uncached) is an origin call like any
// other and counts in locus_origin_requests_total. Was: the gateway read
// markers through the raw store, so a HEAD moved no counter (found by a
// review).
func TestDirectoryMarkerReadsAreCounted(t *testing.T) {
	mem := origintest.NewMemStore()
	mem.Put("s3://bkt/dirm/", nil)
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: mem})
	series := `locus_origin_requests_total{op="stat",status="ok"}`
	before := metricValue(t, scrapeMetrics(t, c, 0), series)
	for _, method := range []string{http.MethodHead, http.MethodGet} {
		req, err := http.NewRequest(method, c.HTTPURL(0)+"/bkt/dirm/", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s of a directory marker: %s, want 200", method, resp.Status)
		}
	}
	if got := metricValue(t, scrapeMetrics(t, c, 0), series) - before; got < 2 {
		t.Fatalf("%s grew by %v after a HEAD and a GET of a directory marker, want at least 2", series, got)
	}
}
