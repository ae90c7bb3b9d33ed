// Package benchpair runs two benchmark bodies in alternation, so that a
// shared, noisy machine slows both alike and their ratio, taken in one run,
// means something where their absolute rates do not.
package benchpair

import (
	"testing"
	"time"
)

// Alternate runs x and y once each per iteration of b's loop, swapping
// their order every iteration, and returns the time each took in all.
func Alternate(b *testing.B, x, y func(*testing.B)) (tx, ty time.Duration) {
	for i := 0; b.Loop(); i++ {
		first, second := x, y
		if i%2 == 1 {
			first, second = y, x
		}
		t0 := time.Now()
		first(b)
		t1 := time.Now()
		second(b)
		d1, d2 := t1.Sub(t0), time.Since(t1)
		if i%2 == 1 {
			d1, d2 = d2, d1
		}
		tx, ty = tx+d1, ty+d2
	}
	return tx, ty
}
