package placement

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// LevelCounters counts the tasks placed at one locality level and the cache
// outcome they reported. Placed = Completed + Running + Lost always holds.
type LevelCounters struct {
	// Placed counts placement decisions at this level (Tez's
	// DATA_LOCAL_TASKS, RACK_LOCAL_TASKS, OTHER_LOCAL_TASKS).
	Placed int64 `json:"placed"`
	// Running is a gauge: placed, not yet completed or lost.
	Running int64 `json:"running"`
	// Completed counts tasks that reported an Outcome.
	Completed int64 `json:"completed"`
	// Lost counts tasks whose node died or left, or that were cancelled
	// after placement, or that were running when the state was exported.
	Lost int64 `json:"lost"`
	// Bytes read by completed tasks, and how they were served: local cache
	// hit on the node the task ran on, peer cache hit (read through the
	// owner), origin (miss).
	Bytes         int64 `json:"bytes"`
	LocalHitBytes int64 `json:"local_hit_bytes"`
	PeerHitBytes  int64 `json:"peer_hit_bytes"`
	MissBytes     int64 `json:"miss_bytes"`
	// TaskTime is the sum of completed tasks' reported durations.
	TaskTime time.Duration `json:"task_time_ns"`
}

// HitRatio is (local + peer hit bytes) / bytes, at most 1; 0 when no bytes
// were read.
func (l LevelCounters) HitRatio() float64 {
	if l.Bytes == 0 {
		return 0
	}
	return min((float64(l.LocalHitBytes)+float64(l.PeerHitBytes))/float64(l.Bytes), 1)
}

// LocalHitRatio is local hit bytes / bytes, at most 1; 0 when no bytes were
// read.
func (l LevelCounters) LocalHitRatio() float64 {
	if l.Bytes == 0 {
		return 0
	}
	return min(float64(l.LocalHitBytes)/float64(l.Bytes), 1)
}

// satAdd adds two non-negative counts, saturating at math.MaxInt64: a byte
// or time counter stops at its maximum instead of wrapping negative (which
// would also make the exported State fail Import's check).
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// addOutcome counts a completed task's outcome (saturating).
func (l *LevelCounters) addOutcome(o Outcome) {
	l.Bytes = satAdd(l.Bytes, o.Bytes)
	l.LocalHitBytes = satAdd(l.LocalHitBytes, o.LocalHit)
	l.PeerHitBytes = satAdd(l.PeerHitBytes, o.PeerHit)
	l.MissBytes = satAdd(l.MissBytes, o.Miss)
	l.TaskTime = time.Duration(satAdd(int64(l.TaskTime), int64(o.Duration)))
}

func (l *LevelCounters) add(o LevelCounters) {
	l.Placed += o.Placed
	l.Running += o.Running
	l.Completed += o.Completed
	l.Lost += o.Lost
	l.addOutcome(Outcome{Bytes: o.Bytes, LocalHit: o.LocalHitBytes, PeerHit: o.PeerHitBytes, Miss: o.MissBytes, Duration: o.TaskTime})
}

func (l *LevelCounters) check() error {
	if l.Placed < 0 || l.Running < 0 || l.Completed < 0 || l.Lost < 0 ||
		l.Bytes < 0 || l.LocalHitBytes < 0 || l.PeerHitBytes < 0 || l.MissBytes < 0 || l.TaskTime < 0 {
		return fmt.Errorf("negative counter in %+v", *l)
	}
	if l.Placed != l.Completed+l.Running+l.Lost {
		return fmt.Errorf("placed %d != completed %d + running %d + lost %d",
			l.Placed, l.Completed, l.Running, l.Lost)
	}
	return nil
}

// Counters is a snapshot of one job's (or all jobs') locality counters. It
// is a plain value: the service turns it into JSON (GET /v1/jobs/{job}) and
// Prometheus metrics (locus_tasks_placed_total{locality} = Level(l).Placed,
// locus_task_bytes_total{locality,source="local|peer|origin"} =
// LocalHitBytes|PeerHitBytes|MissBytes).
type Counters struct {
	DataLocal  LevelCounters `json:"DATA_LOCAL"`
	RackLocal  LevelCounters `json:"RACK_LOCAL"`
	OtherLocal LevelCounters `json:"OTHER_LOCAL"`
	// Queued is a gauge: tasks submitted and not yet placed or cancelled.
	Queued int64 `json:"queued"`
}

// Level returns the counters of one locality level (nil for an invalid one).
func (c *Counters) Level(l Locality) *LevelCounters {
	switch l {
	case DataLocal:
		return &c.DataLocal
	case RackLocal:
		return &c.RackLocal
	case OtherLocal:
		return &c.OtherLocal
	}
	return nil
}

// Total sums the three levels.
func (c Counters) Total() LevelCounters {
	t := c.DataLocal
	t.add(c.RackLocal)
	t.add(c.OtherLocal)
	return t
}

// HitRatio is the hit ratio over all levels.
func (c Counters) HitRatio() float64 { return c.Total().HitRatio() }

// DataLocalRatio is DATA_LOCAL placements over all placements; 0 when none.
func (c Counters) DataLocalRatio() float64 {
	t := c.Total().Placed
	if t == 0 {
		return 0
	}
	return float64(c.DataLocal.Placed) / float64(t)
}

// State is the placer's persistent counters, a plain value that round-trips
// through encoding/json. The service saves it (for example to etcd) and a
// new leader Imports it, so a failover loses no counts.
type State struct {
	// Version of the format; StateVersion.
	Version int                 `json:"version"`
	Global  Counters            `json:"global"`
	Jobs    map[string]Counters `json:"jobs"`
}

// StateVersion is the State format this package writes.
const StateVersion = 1

// Export snapshots the counters (global and every remembered job).
func (p *Placer) Export() State {
	s := State{Version: StateVersion, Global: p.global, Jobs: make(map[string]Counters, len(p.jobs))}
	for name, j := range p.jobs {
		s.Jobs[name] = j.c
	}
	return s
}

// Import loads an exported State into a placer that has not placed, queued
// or counted anything yet (else ErrNotEmpty). Tasks that were running at
// export time are not known to this placer, so they are counted Lost (a
// later Complete for them returns ErrUnknownTask); Queued becomes 0. Errors:
// ErrNotEmpty, ErrInvalidState.
func (p *Placer) Import(s State) error {
	if p.tasks.n != 0 || p.global != (Counters{}) || len(p.jobs) != 0 {
		return ErrNotEmpty
	}
	if s.Version != StateVersion {
		return fmt.Errorf("%w: version %d, want %d", ErrInvalidState, s.Version, StateVersion)
	}
	fix := func(c Counters) (Counters, error) {
		c.Queued = 0
		for _, l := range Localities {
			lc := c.Level(l)
			if err := lc.check(); err != nil {
				return c, err
			}
			lc.Lost += lc.Running
			lc.Running = 0
		}
		return c, nil
	}
	g, err := fix(s.Global)
	if err != nil {
		return fmt.Errorf("%w: global: %v", ErrInvalidState, err)
	}
	jobs := make(map[string]Counters, len(s.Jobs))
	for name, c := range s.Jobs {
		if name == "" {
			return fmt.Errorf("%w: empty job name", ErrInvalidState)
		}
		if jobs[name], err = fix(c); err != nil {
			return fmt.Errorf("%w: job %q: %v", ErrInvalidState, name, err)
		}
	}
	p.global = g
	p.exact = false
	names := make([]string, 0, len(jobs))
	for name := range jobs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p.job(name).c = jobs[name]
	}
	return nil
}
