package node_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

// TestStopWholeCluster: when every node stops at once (a whole-cluster
// shutdown, helm uninstall), each node's leave broadcast may find no peer
// left to carry it. Stop must not spend its whole context (the daemon
// gives it the drain timeout plus 15s, past Kubernetes' default 30s grace
// period) waiting for that broadcast.
func TestStopWholeCluster(t *testing.T) {
	c := nodetest.Start(t, nodetest.Options{N: 3, Origin: origintest.NewMemStore()})
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	took := make([]time.Duration, len(c.Nodes))
	for i, n := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.Stop(ctx)
			took[i] = time.Since(start)
		}()
	}
	wg.Wait()
	for i, d := range took {
		if d > 10*time.Second {
			t.Errorf("node %d took %s to stop", i, d.Round(time.Millisecond))
		}
	}
	t.Logf("stop times: %v", took)
}
