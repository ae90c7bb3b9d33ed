package placement

import (
	"fmt"
	"time"
)

// MaxPrefer is the longest preference list a task may carry (the ring's
// replication factor is far below it).
const MaxPrefer = 8

// Config tunes a Placer. The zero value of every field means "use the
// default"; negative values are rejected by New with ErrInvalidConfig.
type Config struct {
	// FirstSeenTTL is how long the placer remembers the first-seen time of
	// a task that was queued and then cancelled (a deferred batch member, or
	// an HTTP request that gave up). When the same (job, task) is submitted
	// again within this time its waits count from the first submission, so
	// resubmitting never resets a task's locality wait. Default 10 minutes:
	// far longer than any sane locality wait, short enough that a retried
	// task of a long-gone attempt starts fresh.
	FirstSeenTTL time.Duration
	// FirstSeenMax bounds how many first-seen times are remembered; the
	// oldest are forgotten first. Default 262144 (at most about 45 MiB).
	FirstSeenMax int
	// MaxJobs bounds how many jobs keep per-job counters. When a new job
	// would exceed it, the job that has been idle (no queued or running
	// task) the longest is forgotten: its counters stay in the global
	// counters and Counters(job) then returns ErrUnknownJob. Jobs with
	// queued or running tasks are never forgotten. Default 100000.
	MaxJobs int
	// MaxQueued bounds the number of queued tasks; Submit and PlaceBatch
	// return ErrQueueFull beyond it, so a runaway client cannot exhaust the
	// scheduler's memory. Default 1000000 (about 500 MiB of task records at
	// the limit).
	MaxQueued int
}

// DefaultConfig returns the defaults described on each Config field.
func DefaultConfig() Config {
	return Config{
		FirstSeenTTL: 10 * time.Minute,
		FirstSeenMax: 1 << 18,
		MaxJobs:      100000,
		MaxQueued:    1000000,
	}
}

// validate fills zero fields with defaults and rejects negative ones.
func (c *Config) validate() error {
	d := DefaultConfig()
	if c.FirstSeenTTL < 0 || c.FirstSeenMax < 0 || c.MaxJobs < 0 || c.MaxQueued < 0 {
		return fmt.Errorf("%w: negative field in %+v", ErrInvalidConfig, *c)
	}
	if c.FirstSeenTTL == 0 {
		c.FirstSeenTTL = d.FirstSeenTTL
	}
	if c.FirstSeenMax == 0 {
		c.FirstSeenMax = d.FirstSeenMax
	}
	if c.MaxJobs == 0 {
		c.MaxJobs = d.MaxJobs
	}
	if c.MaxQueued == 0 {
		c.MaxQueued = d.MaxQueued
	}
	return nil
}

// WaitFromMillis maps the API's wait_ms onto a Task.Wait: 0 means the
// scheduler's default (--locality-wait), a negative value means "do not
// wait" (step down at once).
func WaitFromMillis(ms int64, def time.Duration) time.Duration {
	switch {
	case ms == 0:
		return def
	case ms < 0:
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}
