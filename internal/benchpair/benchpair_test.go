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
