package scheduler

import (
	"time"

	"github.com/locuscache/locus/pkg/placement"
	"github.com/locuscache/locus/pkg/schedapi"
)

// The JSON API's messages, their validation and codec live in pkg/schedapi
// (shared with the clients); this file converts between them and the
// placement core.

// outcomeOf is a completed task's cache outcome as the placer counts it.
func outcomeOf(t *schedapi.CompleteTask) placement.Outcome {
	return placement.Outcome{
		Bytes: t.Bytes, LocalHit: t.LocalHitBytes, PeerHit: t.PeerHitBytes, Miss: t.MissBytes,
		Duration: time.Duration(t.DurationMS) * time.Millisecond,
	}
}

// countersFrom converts the placer's counters to the API's.
func countersFrom(job string, c placement.Counters) schedapi.JobCounters {
	lv := func(l placement.LevelCounters) schedapi.LocalityStats {
		return schedapi.LocalityStats{
			Placed: l.Placed, Running: l.Running, Completed: l.Completed, Lost: l.Lost,
			Bytes: l.Bytes, LocalHitBytes: l.LocalHitBytes, PeerHitBytes: l.PeerHitBytes, MissBytes: l.MissBytes,
			TaskTimeMS: l.TaskTime.Milliseconds(), HitRatio: l.HitRatio(), LocalHitRatio: l.LocalHitRatio(),
		}
	}
	t := c.Total()
	return schedapi.JobCounters{
		Job:             job,
		DataLocalTasks:  c.DataLocal.Placed,
		RackLocalTasks:  c.RackLocal.Placed,
		OtherLocalTasks: c.OtherLocal.Placed,
		HitRatio:        t.HitRatio(),
		HitRatioByLocality: schedapi.ByLocality[float64]{
			DataLocal: c.DataLocal.HitRatio(), RackLocal: c.RackLocal.HitRatio(), OtherLocal: c.OtherLocal.HitRatio(),
		},
		DataLocalRatio: c.DataLocalRatio(),
		Running:        t.Running,
		Completed:      t.Completed,
		Lost:           t.Lost,
		Queued:         c.Queued,
		Bytes:          t.Bytes,
		LocalHitBytes:  t.LocalHitBytes,
		PeerHitBytes:   t.PeerHitBytes,
		MissBytes:      t.MissBytes,
		ByLocality: schedapi.ByLocality[schedapi.LocalityStats]{
			DataLocal: lv(c.DataLocal), RackLocal: lv(c.RackLocal), OtherLocal: lv(c.OtherLocal),
		},
	}
}
