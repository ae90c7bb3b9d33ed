package placementtest

import (
	"fmt"
	"testing"
)

// BenchmarkSimulate runs the acceptance workload (24 nodes x 12 slots, a
// sequential stream of 100 stages, 3s waits) without the per-event checks
// and reports the locality reached; ns/op is the cost of simulating (and
// placing) the whole stream. Compare replication 1, 2 and 3, Submit and
// PlaceBatch.
func BenchmarkSimulate(b *testing.B) {
	for _, load := range []float64{1, 2} {
		for _, rep := range []int{1, 2, 3} {
			for _, batch := range []bool{false, true} {
				b.Run(fmt.Sprintf("load=%v/rep=%d/batch=%v", load, rep, batch), func(b *testing.B) {
					var r SimResult
					for b.Loop() {
						var err error
						r, err = Simulate(SimConfig{Seed: 1, Load: load, Replication: rep, Batch: batch, Stages: 100})
						if err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(100*r.DataLocalRatio(), "%data-local")
					b.ReportMetric(100*r.Counters.HitRatio(), "%hit")
					b.ReportMetric(float64(r.Tasks), "tasks")
				})
			}
		}
	}
}
