package placement_test

// Regression tests from an adversarial review of the placement core's
// accounting (2026-11-30): each failed before its fix.

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/placement"
)

// TestOutcomeOverflowRejected: Complete returns ErrInvalidOutcome for
// byte counts that overflow. Was: Outcome.validate checked only that
// LocalHit+PeerHit+Miss was negative after wrapping. Two counts of MaxInt64 plus 2 wrap to exactly 0, so the
// outcome is accepted with Bytes 0 while LocalHitBytes saturates at
// MaxInt64: the counters then claim MaxInt64 hit bytes out of 0 read (and
// with Bytes set to the wrapped sum, a hit ratio of 1 over 5 bytes).
func TestOutcomeOverflowRejected(t *testing.T) {
	cases := []placement.Outcome{
		{LocalHit: math.MaxInt64, PeerHit: math.MaxInt64, Miss: 2},           // wraps to 0
		{Bytes: 5, LocalHit: math.MaxInt64, PeerHit: math.MaxInt64, Miss: 7}, // wraps to 5
	}
	for i, o := range cases {
		p, err := placement.New(placement.Config{})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Unix(1_000_000, 0)
		if _, err := p.SetNodes([]placement.Node{{ID: "a", Rack: "r1", Slots: 1}}, now); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := p.Submit(placement.Task{Job: "j", ID: "t", Prefer: []string{"a"}}, now); err != nil || !ok {
			t.Fatalf("submit: %v %v", ok, err)
		}
		_, err = p.Complete("j", "t", o)
		if !errors.Is(err, placement.ErrInvalidOutcome) {
			c, _ := p.Counters("j")
			t.Errorf("case %d: Complete(%+v) = %v, want ErrInvalidOutcome (overflow); counters now bytes %d local %d peer %d miss %d, hit ratio %v",
				i, o, err, c.DataLocal.Bytes, c.DataLocal.LocalHitBytes, c.DataLocal.PeerHitBytes, c.DataLocal.MissBytes, c.DataLocal.HitRatio())
		}
	}
}
