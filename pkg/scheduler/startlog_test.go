package scheduler_test

import (
	"log/slog"
	"regexp"
	"testing"

	"github.com/locuscache/locus/internal/testproc"
	"github.com/locuscache/locus/pkg/scheduler"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

// TestStartLogBlockSize: the "scheduler: serving" line printed
// block_size=0 (and replication_configured=0) when the block size (the
// replication) comes from the cache nodes, the default, as if blocks had
// no size; it says "from nodes" then, and the configured value when one is
// set.
func TestStartLogBlockSize(t *testing.T) {
	for _, tc := range []struct {
		name        string
		blockSize   int64
		replication int
		want        []string
	}{
		{"from the nodes", 0, 0, []string{`block_size="from nodes"`, `replication_configured="from nodes"`}},
		{"configured", 1 << 20, 2, []string{`block_size=1048576`, `replication_configured=2`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			views := schedulertest.NewViews(t, schedulertest.Node("n1", "r1", 2))
			var logs testproc.SyncBuffer
			startWith(t, views, func(cfg *scheduler.Config) {
				cfg.BlockSize = tc.blockSize
				cfg.Replication = tc.replication
				cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			})
			// Start logs the line before it returns.
			line := regexp.MustCompile(`(?m)^.*msg="scheduler: serving".*$`).FindString(logs.String())
			if line == "" {
				t.Fatalf("no start line in the logs:\n%s", logs.String())
			}
			for i, key := range []string{"block_size", "replication_configured"} {
				if got := regexp.MustCompile(`\b` + key + `=("[^"]*"|\S*)`).FindString(line); got != tc.want[i] {
					t.Errorf("start line has %s, want %s:\n%s", got, tc.want[i], line)
				}
			}
		})
	}
}
