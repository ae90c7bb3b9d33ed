// Package membershiptest starts real, in-process memberlist clusters on
// loopback for tests of code that consumes membership Views (the cache node,
// the scheduler). Each member binds 127.0.0.1 on a free port and uses
// membership.LoopbackTuning, so a cluster of a few members converges in tens
// of milliseconds and a member that is Shutdown is declared dead in about a
// second or two.
//
// For pure tests that need a View but no gossip, use membership.NewView.
package membershiptest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/ring"
)

// CacheNode returns valid metadata for a cache node with the given id: rack
// "r1", a placeholder gRPC address, 4 slots, 1 GiB capacity, the default
// block size.
func CacheNode(id string) membership.NodeMeta {
	return membership.NodeMeta{
		ID:            id,
		Rack:          "r1",
		GRPCAddr:      "127.0.0.1:7070",
		HTTPAddr:      "127.0.0.1:7080",
		Slots:         4,
		CapacityBytes: 1 << 30,
	}
}

// Observer returns valid metadata for an observer (a scheduler) with the
// given id.
func Observer(id string) membership.NodeMeta {
	return membership.NodeMeta{ID: id, Role: membership.RoleObserver}
}

// DebugEnv names an environment variable: set to 1, members made by Config
// log everything (memberlist's debug lines included) to stderr, prefixed
// with their id.
const DebugEnv = "LOCUS_MEMBERSHIP_DEBUG"

// Config returns a loopback Config for meta: 127.0.0.1 on a free port,
// LoopbackTuning, logs discarded (see DebugEnv).
func Config(meta membership.NodeMeta) membership.Config {
	cfg := membership.Config{
		Meta:     meta,
		BindAddr: "127.0.0.1:0",
		Tuning:   membership.LoopbackTuning(),
	}
	if os.Getenv(DebugEnv) == "1" {
		h := slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})
		cfg.Logger = slog.New(h).With("member", meta.ID)
	}
	return cfg
}

// Start starts one member per meta, joins each to the first, and waits up to
// 5 s until every member's View lists all of them with the same Epoch. The
// members are shut down when the test ends. It fails the test on any error.
func Start(t testing.TB, metas ...membership.NodeMeta) []*membership.Membership {
	t.Helper()
	cfgs := make([]membership.Config, len(metas))
	for i, meta := range metas {
		cfgs[i] = Config(meta)
	}
	return StartConfigs(t, cfgs...)
}

// NewAlone starts one member for meta without joining anyone (a misfit
// whose Join a test checks, a second cluster's seed); it is shut down when
// the test ends.
func NewAlone(t testing.TB, meta membership.NodeMeta) *membership.Membership {
	t.Helper()
	m, err := membership.New(Config(meta))
	if err != nil {
		t.Fatalf("start member %q: %v", meta.ID, err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	return m
}

// StartConfigs is Start with full Configs (a gossip key, a custom tuning).
func StartConfigs(t testing.TB, cfgs ...membership.Config) []*membership.Membership {
	t.Helper()
	ms := make([]*membership.Membership, 0, len(cfgs))
	for i, cfg := range cfgs {
		m, err := membership.New(cfg)
		if err != nil {
			t.Fatalf("start member %d (%q): %v", i, cfg.Meta.ID, err)
		}
		t.Cleanup(func() { _ = m.Shutdown() })
		if i > 0 {
			if _, err := m.Join([]string{ms[0].GossipAddr()}); err != nil {
				t.Fatalf("member %q: join %s: %v", cfg.Meta.ID, ms[0].GossipAddr(), err)
			}
		}
		ms = append(ms, m)
	}
	WaitConverged(t, ms, 5*time.Second)
	return ms
}

// WaitConverged waits until every member of ms has a View listing exactly
// the members of ms with one common Epoch, and returns that epoch. It fails
// the test after timeout, reporting each member's view.
func WaitConverged(t testing.TB, ms []*membership.Membership, timeout time.Duration) uint64 {
	t.Helper()
	want := make(map[string]bool, len(ms))
	for _, m := range ms {
		want[m.LocalMeta().ID] = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		epoch, ok := converged(ms, want)
		if ok {
			return epoch
		}
		select {
		case <-ctx.Done():
			var report string
			for _, m := range ms {
				report += fmt.Sprintf("\n  %s sees %s", m.LocalMeta().ID, Describe(m.View()))
			}
			t.Fatalf("members did not converge within %v:%s", timeout, report)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func converged(ms []*membership.Membership, want map[string]bool) (uint64, bool) {
	var epoch uint64
	for i, m := range ms {
		v := m.View()
		if len(v.Members) != len(want) {
			return 0, false
		}
		for _, mem := range v.Members {
			if !want[mem.ID] {
				return 0, false
			}
		}
		if i == 0 {
			epoch = v.Epoch
		} else if v.Epoch != epoch {
			return 0, false
		}
	}
	return epoch, true
}

// View is the View (ring and epoch) that members announcing metas
// compute, built without gossip (membership.NewView, default ring).
func View(t testing.TB, metas ...membership.NodeMeta) *membership.View {
	t.Helper()
	ms := make([]membership.Member, len(metas))
	for i, m := range metas {
		ms[i] = membership.Member{NodeMeta: m}
	}
	v, err := membership.NewView(ms, ring.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Describe renders a View for failure messages: epoch, generation and the
// members with their state.
func Describe(v *membership.View) string {
	s := fmt.Sprintf("epoch=%016x gen=%d [", v.Epoch, v.Generation)
	for i, m := range v.Members {
		if i > 0 {
			s += " "
		}
		s += m.ID + ":" + string(m.State)
		if m.IsObserver() {
			s += "(observer)"
		}
	}
	return s + "]"
}
