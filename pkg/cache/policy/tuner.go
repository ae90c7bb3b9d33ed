package policy

import "math"

// The tuner's settings. The measurements behind them are in doc.go and
// pkg/cache/sim/testdata/README.md.
var tunerWindows = [...]float64{0.01, 0.03, 0.10, 0.30, 0.60, 0.99}

const (
	initialWindow = 0    // index into tunerWindows: start as Caffeine does, with a 1% window
	maxShadow     = 2048 // keys per shadow; a larger cache samples its keys
	periodPerKey  = 2    // decide every periodPerKey x shadow-capacity sampled accesses
	scoreDecay    = 0.99 // per decision: the scores remember about 100 periods
	minGain       = 0.001
	minSigmas     = 1.0
)

// tuner sets the window of the default policy by miniature simulation
// (Waldspurger et al., "Cache Modeling and Optimization using Miniature
// Simulations", USENIX ATC 2017; Caffeine's MiniSim climber). It replays a
// spatially hashed sample of the keys (all keys when the cache holds at most
// maxShadow) through one shadow W-TinyLFU per candidate window size, each
// with capacity scaled to the sample, and every period moves the live cache
// to the shadow with the most recent hits (adopting its state when every key
// is sampled, else taking its window size), when that shadow leads the current
// one clearly: by at least minGain of the (decayed) sampled accesses and by
// minSigmas standard deviations (the square root of the smaller of the two
// shadows' summed hits and summed misses). The hysteresis matters: every
// switch costs the live cache hits while its queues move.
type tuner struct {
	full      bool   // every key is sampled
	threshold uint64 // otherwise, a key is sampled iff hash(key ^ seed) < threshold
	seed      uint64

	shadows []*tinyLFU
	scores  []float64 // decayed hits per shadow
	acc     float64   // decayed sampled accesses
	victims []uint64  // scratch for the shadows' Insert
	keys    []uint64  // scratch for adopt (full sampling only)
	freq    *sketch   // the shadows' shared frequency sketch

	n      int // sampled accesses since the last decision
	period int // sampled accesses between decisions
	cur    int // index of the window the live cache uses
}

func newTuner(capacity int, seed uint64) *tuner {
	t := &tuner{seed: mix64(seed ^ 0x74756e6572), victims: make([]uint64, 0, 4), cur: initialWindow}
	size := capacity
	if capacity <= maxShadow {
		t.full = true
		t.keys = make([]uint64, 0, capacity+1)
	} else {
		size = maxShadow
		t.threshold = uint64(float64(size) / float64(capacity) * (1 << 63) * 2)
	}
	// The sketch counts every sampled access whatever the window, so the
	// shadows share one, counted here once per access.
	t.freq = newSketch(size, mix64(seed^0x736b65746368))
	for i, f := range tunerWindows {
		s := newTinyLFU(size, mix64(seed+uint64(i)+1), f)
		s.freq, s.counts = t.freq, false
		t.shadows = append(t.shadows, s)
	}
	t.scores = make([]float64, len(t.shadows))
	t.period = max(16, periodPerKey*size)
	return t
}

// access replays key through the shadows if it is sampled and, at the end of
// a period, retunes live.
func (t *tuner) access(live *tinyLFU, key uint64) {
	if !t.full && mix64(key^t.seed) >= t.threshold {
		return
	}
	t.freq.increment(key)
	for i, s := range t.shadows {
		if s.Touch(key) {
			t.scores[i]++
		} else {
			t.victims, _ = s.Insert(key, t.victims[:0])
		}
	}
	t.acc++
	if t.n++; t.n < t.period {
		return
	}
	t.n = 0
	best := t.cur
	for i, sc := range t.scores {
		if sc > t.scores[best] {
			best = i
		}
	}
	gain := t.scores[best] - t.scores[t.cur]
	if best != t.cur && gain > minGain*t.acc && gain > minSigmas*math.Sqrt(min(t.scores[best]+t.scores[t.cur], 2*t.acc-t.scores[best]-t.scores[t.cur])) {
		t.cur = best
		if !t.full || !live.adopt(t.shadows[best], t.keys) {
			live.setWindow(tunerWindows[best])
		}
	}
	for i := range t.scores {
		t.scores[i] *= scoreDecay
	}
	t.acc *= scoreDecay
}
