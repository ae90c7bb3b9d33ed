package schedulertest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/scheduler"
)

// DebugEnv names an environment variable: set to 1, schedulers started by
// Start log to stderr at debug level.
const DebugEnv = "LOCUS_SCHEDULER_DEBUG"

// Logger returns a logger for tests: discarded unless DebugEnv is 1.
func Logger(name string) *slog.Logger {
	if os.Getenv(DebugEnv) == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", name)
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Start starts a scheduler for a test: HTTP, gRPC and (without
// cfg.Membership) gossip on 127.0.0.1 free ports, loopback gossip tuning,
// a quiet logger. It is shut down when the test ends. It fails the test on
// any error.
func Start(t testing.TB, cfg scheduler.Config) *scheduler.Scheduler {
	t.Helper()
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = "127.0.0.1:0"
	}
	if cfg.GRPCAddr == "" {
		cfg.GRPCAddr = "127.0.0.1:0"
	}
	if cfg.GossipAddr == "" {
		cfg.GossipAddr = "127.0.0.1:0"
	}
	if cfg.GossipTuning == (membership.Tuning{}) {
		cfg.GossipTuning = membership.LoopbackTuning()
	}
	if cfg.NodeID == "" {
		cfg.NodeID = "scheduler-test"
	}
	if cfg.Logger == nil {
		cfg.Logger = Logger(cfg.NodeID)
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatalf("scheduler.New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("scheduler.Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Logf("scheduler %s shutdown: %v", cfg.NodeID, err)
		}
	})
	return s
}
