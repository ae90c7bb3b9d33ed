package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/locuscache/locus/pkg/client"
)

// An executor's loop over the splits of a stage: place, read through the
// placed node, complete with how the bytes were served.
func ExampleScheduler() {
	ctx := context.Background()
	sc, err := client.NewScheduler(client.SchedulerConfig{URL: "http://127.0.0.1:8080"})
	if err != nil {
		panic(err)
	}
	defer sc.Close()
	c, _ := client.New(client.Config{})
	defer c.Close()

	splits := []client.Split{{URI: "s3://lake/t/part-0.parquet", Offset: 4, Length: 64 << 20}}
	for i, split := range splits {
		task := fmt.Sprintf("t%d", i)
		p, err := sc.Place(ctx, "query-42", task, split, 500*time.Millisecond)
		if errors.Is(err, client.ErrNoNode) {
			continue // the cluster is full or empty: retry later
		} else if err != nil {
			panic(err)
		}
		start := time.Now()
		sum, err := c.ReadSplit(ctx, p.Address, split, io.Discard)
		if err != nil {
			panic(err)
		}
		if _, err := sc.Complete(ctx, "query-42", task, client.InfoFromSummary(sum, time.Since(start))); err != nil {
			panic(err)
		}
	}
	jc, _ := sc.JobCounters(ctx, "query-42")
	fmt.Printf("DATA_LOCAL %d, hit ratio %.2f\n", jc.DataLocalTasks, jc.HitRatio)
}
