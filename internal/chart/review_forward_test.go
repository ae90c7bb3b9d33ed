package chart_test

// Was (found by a review): locus.validateForward refuses non-forwarding followers only with
// scheduler.replicas > 1. But with etcd the Deployment is a RollingUpdate
// with maxSurge 1 and maxUnavailable 0 whatever the replica count, so a
// single etcd-backed scheduler with forwardToLeader false (or null: the
// daemon's default, false) is updated by starting a second pod next to
// the leader. That pod is a follower that does not forward, so its
// /readyz is 503 by design (pkg/scheduler/scheduler.go Ready): the new pod
// never becomes ready, the old leader is never removed (maxUnavailable 0),
// and every upgrade hangs (helm --wait never returns) - the exact hang the
// check exists to prevent.

import (
	"strconv"
	"testing"
)

func TestSingleEtcdSchedulerNonForwardingRollout(t *testing.T) {
	bin := findHelm(t)
	for _, fwd := range []string{"false", "null"} {
		t.Run("forwardToLeader="+fwd, func(t *testing.T) {
			out, err := helm(t, bin, "template", "locus", ".", "--namespace", "lake",
				"--set", "scheduler.replicas=1",
				"--set", "scheduler.etcd.endpoints={http://etcd:2379}",
				"--set", "scheduler.forwardToLeader="+fwd)
			if err != nil {
				return // refused: fine
			}
			m := parseManifests(t, out)
			d := m.one(t, "Deployment")
			c := d.container(t, "scheduler")
			forwards := false
			if v, ok := c.flag("forward-to-leader"); ok {
				forwards, _ = strconv.ParseBool(v)
			}
			if forwards {
				return
			}
			spec, _ := d.raw["spec"].(map[string]any)
			strat, _ := spec["strategy"].(map[string]any)
			ru, _ := strat["rollingUpdate"].(map[string]any)
			if strat["type"] == "RollingUpdate" && reviewToString(ru["maxUnavailable"]) == "0" {
				t.Errorf("scheduler: 1 etcd-backed replica that does not forward (args %v) is rolled with maxSurge %v, maxUnavailable 0: the surge pod is a non-forwarding follower, never ready (/readyz 503), so the rollout never completes",
					c.Args, ru["maxSurge"])
			}
		})
	}
}

func reviewToString(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case string:
		return x
	}
	return ""
}
