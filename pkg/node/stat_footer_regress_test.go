package node_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

// TestStatReadsUnusableFooterOncePerVersion: an object named *.parquet
// whose footer cannot be used (not Parquet at all, a corrupt footer, an
// encrypted file) is answered as non-Parquet, and that answer is the same
// for every Stat of one version, so the footer is read once. A client with
// an Origin Stats before every read: reads of cold pages leave
// locus_cache_hits_total at 0, and the footer cache counts one miss. Was:
// every Stat read the last page again (and logged "parquet footer
// unusable" again), one cache hit per client read that no reader asked
// for; and every Stat of any non-Parquet object (a CSV too) counted a
// footer cache miss (found by a review).
func TestStatReadsUnusableFooterOncePerVersion(t *testing.T) {
	const size = 8 << 20
	trailer := func(b []byte, metaLen uint32, magic string) []byte {
		copy(b, "PAR1")
		binary.LittleEndian.PutUint32(b[len(b)-8:], metaLen)
		copy(b[len(b)-4:], magic)
		return b
	}
	for _, tc := range []struct {
		name, uri string
		data      []byte
		statPages float64 // the cold pages the first Stat reads
	}{
		{"not parquet", "s3://bucket/t/part-0.parquet", randBytes(21, size), 1},
		{"corrupt footer", "s3://bucket/t/part-0.parquet", trailer(bytes.Repeat([]byte{0xff}, size), 100, "PAR1"), 1},
		{"encrypted", "s3://bucket/t/part-0.parquet", trailer(randBytes(22, size), 100, "PARE"), 1},
		// The magic of a name that does not say Parquet: first and last
		// page (TestStatSniffsOncePerVersion), and one footer cache miss.
		{"csv", "s3://bucket/t/part-0.csv", randBytes(23, size), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := origintest.NewMemStore()
			uri := tc.uri
			mem.Put(uri, tc.data)
			c := nodetest.Start(t, nodetest.Options{N: 1, Origin: mem})
			cl, err := client.New(client.Config{Origin: mem})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			const reads = 5
			for i := int64(1); i <= reads; i++ { // pages 1..5: not the last
				var buf bytes.Buffer
				if _, err := cl.ReadRange(context.Background(), c.Nodes[0].GRPCAddr(), uri, i*nodetest.DefaultPageSize, 100, &buf); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(buf.Bytes(), tc.data[i*nodetest.DefaultPageSize:][:100]) {
					t.Fatalf("read %d: wrong bytes", i)
				}
			}
			st, err := cl.Stat(context.Background(), c.Nodes[0].GRPCAddr(), uri)
			if err != nil || st.Parquet {
				t.Fatalf("Stat: parquet=%v err=%v; want a non-Parquet answer", st.Parquet, err)
			}
			body := scrapeMetrics(t, c, 0)
			hits, cold := metricValue(t, body, `locus_cache_hits_total`), metricValue(t, body, `locus_cache_misses_total{cause="cold"}`)
			// The reads' own pages are cold misses; the first Stat's
			// look at the object adds its own.
			if hits != 0 || cold != reads+tc.statPages {
				t.Fatalf("after %d reads of cold pages and %d Stats: %v cache hits, %v cold misses; want 0 and %v (the footer read once)", reads, reads+1, hits, cold, reads+tc.statPages)
			}
			if got := metricValue(t, body, `locus_parquet_footer_cache_total{outcome="miss"}`); got != 1 {
				t.Fatalf("after %d Stats of one version: %v footer cache misses, want 1", reads+1, got)
			}
		})
	}
}
