package client

import (
	"math"
	"testing"
	"time"
)

// TestWaitMSHugeWait: a locality wait too long for the API is never sent
// as a negative wait_ms, which the scheduler reads as "do not wait"
// (NoWait): the opposite of what the caller asked. A huge wait stays huge
// (the scheduler then refuses it above --max-wait, a visible error). Was:
// waitMS added 999999 ns before dividing, so time.Duration(math.MaxInt64),
// the usual "forever", wrapped to about -9.2e12 ms.
func TestWaitMSHugeWait(t *testing.T) {
	for _, w := range []time.Duration{math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 - 500*time.Microsecond} {
		if got := waitMS(w); got <= 0 {
			t.Errorf("waitMS(%d) = %d, want a positive wait_ms (a negative one means NoWait)", int64(w), got)
		}
	}
}

func TestTwiceSaturates(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{0, 0}, {time.Second, 2 * time.Second}, {math.MaxInt64 / 2, math.MaxInt64 - 1}, {math.MaxInt64/2 + 1, math.MaxInt64}, {math.MaxInt64, math.MaxInt64},
	} {
		if got := twice(tc.in); got != tc.want {
			t.Errorf("twice(%d) = %d, want %d", int64(tc.in), int64(got), int64(tc.want))
		}
	}
}
