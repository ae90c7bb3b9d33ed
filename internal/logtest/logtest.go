// Package logtest holds a slog.Handler for tests that check what was
// logged at which level.
package logtest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// Recorder is a slog.Handler that keeps every record (Debug included).
// It is safe for concurrent use; WithAttrs and WithGroup return the same
// Recorder (attributes added that way are not kept).
type Recorder struct {
	mu   sync.Mutex
	recs []slog.Record // guarded by mu
}

func (h *Recorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *Recorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

func (h *Recorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *Recorder) WithGroup(string) slog.Handler      { return h }

// Records returns a copy of the records so far.
func (h *Recorder) Records() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]slog.Record(nil), h.recs...)
}

// At returns the messages logged at level.
func (h *Recorder) At(level slog.Level) []string {
	var out []string
	for _, r := range h.Records() {
		if r.Level == level {
			out = append(out, r.Message)
		}
	}
	return out
}

// AtLeast returns the messages logged at level or above.
func (h *Recorder) AtLeast(level slog.Level) []string {
	var out []string
	for _, r := range h.Records() {
		if r.Level >= level {
			out = append(out, r.Message)
		}
	}
	return out
}

// WaitFor waits up to 5 s for a message at level containing s, and fails
// the test if none comes.
func (h *Recorder) WaitFor(t testing.TB, level slog.Level, s string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		for _, m := range h.At(level) {
			if strings.Contains(m, s) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %v message containing %q; logged at that level: %q", level, s, h.At(level))
		}
	}
}
