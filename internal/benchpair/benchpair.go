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

// Rates runs base and other as Alternate does, each moving bytes per run,
// and reports both rates ("<baseName>-MB/s", "<name>-MB/s") and other's
// rate over base's ("<name>/<baseName>"), the figure to quote.
func Rates(b *testing.B, bytes int64, baseName string, base func(*testing.B), name string, other func(*testing.B)) {
	b.SetBytes(2 * bytes)
	tb, to := Alternate(b, base, other)
	n := float64(b.N) * float64(bytes) / 1e6
	b.ReportMetric(n/tb.Seconds(), baseName+"-MB/s")
	b.ReportMetric(n/to.Seconds(), name+"-MB/s")
	b.ReportMetric(tb.Seconds()/to.Seconds(), name+"/"+baseName)
}
