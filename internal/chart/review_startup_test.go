package chart_test

// Was (found by a review): the scheduler answers HTTP only once it has
// reached etcd (--etcd-dial-timeout) and joined the gossip (pkg/scheduler
// lifecycle.go start: the listener is bound first, but served after
// joinGossip, which retries for --join-timeout). The chart sets
// --join-timeout=2m so that a scheduler started before any cache node
// waits for one ("covers DNS for the headless Service catching up with a
// new pod"), but the only probe gating liveness was the liveness probe
// itself: /healthz from 5s on, every 10s, killed after 6 failures, about
// 55s in. A scheduler started alone (a fresh install, or the cache nodes
// restarting) was killed and restarted with a growing back-off long before
// its join timeout; /healthz during the join does not answer at all (curl
// -m 5 on a scheduler joining a dead seed: timeout).

import (
	"testing"
	"time"
)

// probeSettings is the timing part of a probe.
type probeSettings struct {
	InitialDelaySeconds float64 `json:"initialDelaySeconds"`
	PeriodSeconds       float64 `json:"periodSeconds"`
	FailureThreshold    float64 `json:"failureThreshold"`
	HTTPGet             any     `json:"httpGet"`
}

// killedAfter is how long kubelet lets a probe fail before it restarts the
// container: the first check at initialDelaySeconds, the last of
// failureThreshold consecutive failures periodSeconds apart (Kubernetes'
// defaults: 10s, 3).
func (p probeSettings) killedAfter() time.Duration {
	period, threshold := p.PeriodSeconds, p.FailureThreshold
	if period == 0 {
		period = 10
	}
	if threshold == 0 {
		threshold = 3
	}
	return time.Duration((p.InitialDelaySeconds + (threshold-1)*period) * float64(time.Second))
}

func TestSchedulerProbesOutlastStart(t *testing.T) {
	bin := findHelm(t)
	for _, tc := range []struct {
		name string
		file string
		set  []string
	}{
		{name: "defaults"},
		{name: "ha", file: "ha.yaml"},
		{name: "all-flags", file: "all-flags.yaml"},
		{name: "joinTimeout 5m", set: []string{"scheduler.joinTimeout=5m"}},
		{name: "extraArgs join-timeout", set: []string{"scheduler.extraArgs={--join-timeout=4m}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sets []string
			for _, s := range tc.set {
				sets = append(sets, "--set", s)
			}
			m := render(t, bin, tc.file, sets...)
			d := m.one(t, "Deployment")
			c := d.container(t, "scheduler")
			// What the scheduler may take before it serves HTTP.
			need := 30 * time.Second // --join-timeout's default
			if v, ok := c.flag("join-timeout"); ok {
				var err error
				if need, err = time.ParseDuration(v); err != nil {
					t.Fatalf("--join-timeout=%s: %v", v, err)
				}
			}
			if _, etcd := c.flag("etcd-endpoints"); etcd {
				dial := 5 * time.Second // --etcd-dial-timeout's default
				if v, ok := c.flag("etcd-dial-timeout"); ok {
					var err error
					if dial, err = time.ParseDuration(v); err != nil {
						t.Fatalf("--etcd-dial-timeout=%s: %v", v, err)
					}
				}
				need += dial
			}

			spec := d.raw["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			raw := asList(spec["containers"])[0]
			var gate probeSettings
			what := "livenessProbe"
			if sp, ok := raw["startupProbe"]; ok {
				what = "startupProbe" // liveness is checked once it succeeded
				gate = decodeProbe(t, sp)
			} else {
				gate = decodeProbe(t, raw["livenessProbe"])
			}
			if gate.HTTPGet == nil {
				return // a TCP check (mTLS) passes once the listener is bound, before the join
			}
			if got := gate.killedAfter(); got <= need {
				t.Errorf("scheduler: its %s restarts it after %v of failures, but it serves HTTP only after up to %v (--join-timeout, plus --etcd-dial-timeout with etcd)", what, got, need)
			}
		})
	}
}

func decodeProbe(t *testing.T, v any) probeSettings {
	t.Helper()
	m, _ := v.(map[string]any)
	if m == nil {
		t.Fatalf("probe %v is not an object", v)
	}
	var p probeSettings
	p.InitialDelaySeconds, _ = m["initialDelaySeconds"].(float64)
	p.PeriodSeconds, _ = m["periodSeconds"].(float64)
	p.FailureThreshold, _ = m["failureThreshold"].(float64)
	p.HTTPGet = m["httpGet"]
	return p
}
