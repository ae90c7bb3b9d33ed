// Regression tests for bugs a review found (2026-12-01): each test's
// comment describes the bug as it was before the fix.
package main

import (
	"bytes"
	"testing"
)

// TestRingSimulateHugeReplicas: --replicas is only checked to be
// at least 1; with --racks it sizes a slice (make([]ring.Node, 0,
// p.replicas)) before anything caps it at the node count, so a large
// value panics (makeslice: cap out of range) or, around 1e9, dies with
// "fatal error: out of memory". Expected: exit 2 with a usage error, or
// the value capped at the node count.
func TestRingSimulateHugeReplicas(t *testing.T) {
	noEnv(t)
	var out, errOut bytes.Buffer
	rc, panicked := func() (rc int, p any) {
		defer func() { p = recover() }()
		return run([]string{"ring", "simulate", "--nodes", "3", "--keys", "10", "--racks", "2",
			"--replicas", "100000000000000"}, &out, &errOut), nil
	}()
	if panicked != nil {
		t.Fatalf("locusctl ring simulate --replicas 1e14 --racks 2 panicked: %v", panicked)
	}
	if rc != 0 && rc != 2 {
		t.Fatalf("exit %d, want 0 or 2: %s", rc, errOut.String())
	}
}
