package benchpair

import (
	"testing"
	"time"
)

// BenchmarkAlternate checks the attribution: x sleeps twice as long as y,
// so x's share of the time is about twice y's whatever the order.
func BenchmarkAlternate(b *testing.B) {
	tx, ty := Alternate(b,
		func(*testing.B) { time.Sleep(2 * time.Millisecond) },
		func(*testing.B) { time.Sleep(time.Millisecond) })
	if r := tx.Seconds() / ty.Seconds(); r < 1.5 || r > 2.5 {
		b.Fatalf("x/y = %.2f, want about 2 (tx %v, ty %v)", r, tx, ty)
	}
}

func TestAlternateOrder(t *testing.T) {
	var order []string
	testing.Benchmark(func(b *testing.B) {
		order = order[:0]
		Alternate(b, func(*testing.B) { order = append(order, "x") }, func(*testing.B) { order = append(order, "y") })
	})
	for i := 0; i+3 < len(order); i += 4 {
		if got := order[i] + order[i+1] + order[i+2] + order[i+3]; got != "xyyx" {
			t.Fatalf("order %v at %d, want x y then y x", order[i:i+4], i)
		}
	}
}

// TestRatesReports checks Rates' metrics: both rates and other over base,
// here a body twice as fast as the base.
func TestRatesReports(t *testing.T) {
	r := testing.Benchmark(func(b *testing.B) {
		Rates(b, 1e6, "slow", func(*testing.B) { time.Sleep(2 * time.Millisecond) }, "fast", func(*testing.B) { time.Sleep(time.Millisecond) })
	})
	for _, k := range []string{"slow-MB/s", "fast-MB/s", "fast/slow"} {
		if _, ok := r.Extra[k]; !ok {
			t.Fatalf("metrics %v: %q missing", r.Extra, k)
		}
	}
	if q := r.Extra["fast/slow"]; q < 1.5 || q > 2.5 {
		t.Fatalf("fast/slow = %.2f, want about 2", q)
	}
}
