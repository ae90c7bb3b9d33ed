package node_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

// TestStatSniffsOncePerVersion: a client with an Origin Stats the object
// before every read (to pin its version), and the node's Stat looks for
// the Parquet magic of an object whose name does not say Parquet (its
// first and last bytes, read through the cache). That answer is the same
// for every Stat of one version, so it is read once: reads of cold pages
// of a CSV object leave locus_cache_hits_total at 0. Was: every Stat read
// both pages again, two cache hits per client read, so nine reads of nine
// cold pages showed 16 hits next to 11 misses, a 59% hit ratio where the
// readers found nothing cached (found by a review).
func TestStatSniffsOncePerVersion(t *testing.T) {
	mem := origintest.NewMemStore()
	const size = 8 << 20
	uri := "s3://bucket/data.csv"
	mem.Put(uri, randBytes(17, size))
	c := nodetest.Start(t, nodetest.Options{N: 1, Origin: mem})
	cl, err := client.New(client.Config{Origin: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const reads = 9
	for i := int64(1); i <= reads; i++ { // pages 3, 6, ... 27: neither the first nor the last
		var buf bytes.Buffer
		if _, err := cl.ReadRange(context.Background(), c.Nodes[0].GRPCAddr(), uri, 3*i*nodetest.DefaultPageSize, 100, &buf); err != nil {
			t.Fatal(err)
		}
	}
	body := scrapeMetrics(t, c, 0)
	hits, cold := metricValue(t, body, `locus_cache_hits_total`), metricValue(t, body, `locus_cache_misses_total{cause="cold"}`)
	// The reads' own pages are cold misses; the first Stat's look at the
	// first and last pages two more.
	if hits != 0 || cold != reads+2 {
		t.Fatalf("after %d reads of cold pages: %v cache hits, %v cold misses; want 0 and %d (the Stat's magic read once)", reads, hits, cold, reads+2)
	}
}
