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
// block_size=0 when the block size comes from the cache nodes (the
// default), as if blocks had no size; it says "from nodes" then, and the
// configured size when one is set.
func TestStartLogBlockSize(t *testing.T) {
	for _, tc := range []struct {
		name      string
		blockSize int64
		want      string
	}{
		{"from the nodes", 0, `block_size="from nodes"`},
		{"configured", 1 << 20, `block_size=1048576`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			views := schedulertest.NewViews(t, schedulertest.Node("n1", "r1", 2))
			var logs testproc.SyncBuffer
			startWith(t, views, func(cfg *scheduler.Config) {
				cfg.BlockSize = tc.blockSize
				cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			})
			// Start logs the line before it returns.
			line := regexp.MustCompile(`(?m)^.*msg="scheduler: serving".*$`).FindString(logs.String())
			if line == "" {
				t.Fatalf("no start line in the logs:\n%s", logs.String())
			}
			if got := regexp.MustCompile(`block_size=("[^"]*"|\S*)`).FindString(line); got != tc.want {
				t.Errorf("start line has %s, want %s:\n%s", got, tc.want, line)
			}
		})
	}
}
