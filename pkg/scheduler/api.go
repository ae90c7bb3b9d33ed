package scheduler

import (
	"time"
	"unicode/utf8"

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

// checkName validates a name given outside a request body (the job of GET
// /v1/jobs/{job}) as schedapi's Validate methods check names in bodies.
func checkName(what, s string) error {
	switch {
	case s == "":
		return badRequest("empty %s", what)
	case len(s) > schedapi.MaxNameLen:
		return badRequest("%s is %d bytes, the limit is %d", what, len(s), schedapi.MaxNameLen)
	case !utf8.ValidString(s):
		return badRequest("%s is not valid UTF-8", what)
	}
	return nil
}

// stripBad removes the "bad request: " prefix of a nested validation error.
func stripBad(err error) string {
	s := err.Error()
	const p = "bad request: "
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
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
