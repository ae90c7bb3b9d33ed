package chart_test

// Regression tests from a review of the chart's name and forwarding
// checks: each failed before its fix.

import (
	"strconv"
	"strings"
	"testing"
)

// schedulerForwards renders the chart with an HA scheduler (2 replicas,
// etcd) plus extra --set/--set-string arguments, and returns whether the
// render failed and, if not, whether the scheduler would really forward:
// the last --forward-to-leader in its args, parsed as the daemon's flag
// package parses it, or the daemon's default (false) without one.
func schedulerForwards(t *testing.T, bin string, extra ...string) (refused bool, forwards bool, args []string) {
	t.Helper()
	cmd := append([]string{"template", "locus", ".",
		"--set", "scheduler.replicas=2", "--set", "scheduler.etcd.endpoints={http://etcd:2379}"}, extra...)
	out, err := helm(t, bin, cmd...)
	if err != nil {
		if !strings.Contains(out, "Keep forwardToLeader true") {
			t.Fatalf("%v: refused, but not by the forwardToLeader check: %v", extra, err)
		}
		return true, false, nil
	}
	m := parseManifests(t, out)
	c := m.one(t, "Deployment").container(t, "scheduler")
	v, ok := c.flag("forward-to-leader")
	if !ok {
		return false, false, c.Args // cmd/scheduler: BoolVar(..., "forward-to-leader", false, ...)
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		t.Fatalf("%v: --forward-to-leader=%s does not parse as a bool: %v", extra, v, err)
	}
	return false, b, c.Args
}

// TestNonForwardingHARefused: every way of ending up with HA
// schedulers that do not forward must be refused, not just the literal
// boolean false.
//
// Was: only (toString forwardToLeader) == "false" was refused. An unset
// value (null in a values file, or --set scheduler.forwardToLeader=null)
// renders no --forward-to-leader, and the daemon's default is false; the
// strings "False"/"0" (--set-string, or a quoted value) render
// --forward-to-leader=False/0, which the flag package parses as false;
// scheduler.extraArgs={--forward-to-leader=false} comes after the chart's
// flag and wins (the grace check already honours extraArgs this way).
// All four render 2 non-forwarding followers: the hang the check is there
// to prevent.
// Fixed: locus.validateForward judges the flag the daemon gets (unset:
// the daemon's default, false; extraArgs last) and refuses each.
func TestNonForwardingHARefused(t *testing.T) {
	bin := findHelm(t)
	for _, extra := range [][]string{
		{"--set", "scheduler.forwardToLeader=null"},
		{"--set-string", "scheduler.forwardToLeader=False"},
		{"--set", "scheduler.forwardToLeader=0"},
		{"--set", "scheduler.extraArgs={--forward-to-leader=false}"},
	} {
		refused, forwards, args := schedulerForwards(t, bin, extra...)
		if !refused && !forwards {
			t.Errorf("%v: rendered 2 scheduler replicas that do not forward to the leader (%s); want the forwardToLeader refusal", extra, forwardArgs(args))
		}
	}
}

// TestForwardingHAFromExtraArgsRenders: the check must judge the
// flag the daemon actually gets.
//
// Was: forwardToLeader=false with scheduler.extraArgs={--forward-to-leader=true}
// is refused, although extraArgs come last and the scheduler forwards
// (the same override locus.validateGrace honours for the timeouts).
// Fixed: it renders (locus.validateForward reads extraArgs last).
func TestForwardingHAFromExtraArgsRenders(t *testing.T) {
	bin := findHelm(t)
	extra := []string{"--set", "scheduler.forwardToLeader=false", "--set", "scheduler.extraArgs={--forward-to-leader=true}"}
	refused, forwards, args := schedulerForwards(t, bin, extra...)
	if refused {
		t.Fatalf("%v: refused, but the scheduler would forward (extraArgs win)", extra)
	}
	if !forwards {
		t.Fatalf("%v: scheduler does not forward (%s)", extra, forwardArgs(args))
	}
}

// TestLongFullnameOverrideNamesDistinct: a fullnameOverride the
// DNS-1035 check accepts must not give two objects of one kind the same
// name.
//
// Was: a fullnameOverride of 62 characters or more (it is truncated to
// 63 and accepted) makes both ServiceMonitors "<prefix>-cachenode" and
// "<prefix>-scheduler" truncate to the same 63-character name, so the
// install fails on the second one (already exists) after the check let
// it through.
// Fixed: locus.fullname keeps at most 42 characters, so every suffixed
// name fits whole in 63.
func TestLongFullnameOverrideNamesDistinct(t *testing.T) {
	bin := findHelm(t)
	long := strings.Repeat("a", 70)
	args := append([]string{"template", "locus", "."}, valuesArgs(t, "servicemonitor.yaml")...)
	args = append(args, "--set", "fullnameOverride="+long)
	out, err := helm(t, bin, args...)
	if err != nil {
		return // refused: acceptable
	}
	m := parseManifests(t, out)
	seen := map[string]bool{}
	for _, o := range m.objs {
		key := o.Kind + "/" + o.Metadata.Name
		if seen[key] {
			t.Errorf("two %s objects named %q", o.Kind, o.Metadata.Name)
		}
		seen[key] = true
	}
}

// forwardArgs lists the --forward-to-leader arguments, for messages.
func forwardArgs(args []string) string {
	var f []string
	for _, a := range args {
		if strings.HasPrefix(a, "--forward-to-leader") {
			f = append(f, a)
		}
	}
	if len(f) == 0 {
		return "no --forward-to-leader: the daemon's default, false"
	}
	return strings.Join(f, " ")
}
