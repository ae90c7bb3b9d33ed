package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress prints a long command's progress on stderr (ring simulate, plan,
// warm): at most a line a second, and only once the command has run for
// longer than after, so short runs stay quiet and long ones show they are
// alive. Safe for concurrent use.
type progress struct {
	w      io.Writer
	prefix string // each line starts "<prefix>: [elapsed]"
	start  time.Time
	after  time.Duration

	mu   sync.Mutex // guards last
	last time.Time
}

func newProgress(w io.Writer, prefix string, after time.Duration) *progress {
	return &progress{w: w, prefix: prefix, start: time.Now(), after: after}
}

func (p *progress) report(format string, a ...any) {
	now := time.Now()
	if now.Sub(p.start) < p.after {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.Sub(p.last) < time.Second {
		return
	}
	p.last = now
	fmt.Fprintf(p.w, "%s: [%.1fs] %s\n", p.prefix, now.Sub(p.start).Seconds(), fmt.Sprintf(format, a...))
}
