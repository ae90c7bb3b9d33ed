package mrc

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
)

// Config configures an Estimator. The zero value of a field selects its
// default.
type Config struct {
	// SampleBudget is the most keys the estimator tracks at once (the sample
	// set of fixed-size SHARDS). Memory is about 70 bytes per key plus a
	// fixed 10 KiB histogram. Default 8192 (about 0.6 MiB): a mean absolute
	// error of 0.001 in hit ratio on the shared traces, 0.015 with 1024 keys
	// (see doc.go); more keys lower the variance on caches with more
	// distinct pages.
	SampleBudget int
	// InitialRate is the sampling rate before the budget fills, in (0, 1].
	// Default 1: every key is sampled until the sample set is full, then the
	// rate falls as far as the budget requires.
	InitialRate float64
	// Seed selects the spatial hash: keys are sampled iff
	// hash(key ^ seed) < threshold. Default 0 (a valid seed).
	Seed uint64
}

// DefaultSampleBudget is the default Config.SampleBudget.
const DefaultSampleBudget = 8192

// ErrConfig is returned by New for an impossible configuration.
var ErrConfig = errors.New("mrc: invalid config")

// validate fills defaults and rejects impossible values.
func (c *Config) validate() error {
	if c.SampleBudget == 0 {
		c.SampleBudget = DefaultSampleBudget
	}
	if c.InitialRate == 0 {
		c.InitialRate = 1
	}
	if c.SampleBudget < 1 || c.SampleBudget > 1<<26 {
		return fmt.Errorf("%w: SampleBudget %d not in [1, 2^26]", ErrConfig, c.SampleBudget)
	}
	if !(c.InitialRate > 0 && c.InitialRate <= 1) {
		return fmt.Errorf("%w: InitialRate %v not in (0, 1]", ErrConfig, c.InitialRate)
	}
	return nil
}

// Histogram bins: reuse distances (in keys, scaled to the full key space) are
// counted in log-spaced bins, binsPerOctave per power of two, so a curve
// point is within about 2% of its size: bin b covers [lo(b), lo(b+1)).
const (
	binsPerOctave = 32
	octaves       = 40 // distances up to 2^40 keys
	numBins       = binsPerOctave*octaves + 1
)

// Estimator estimates the LRU miss-ratio curve of an access stream with
// fixed-size SHARDS (Waldspurger et al., FAST 2015). It is not safe for
// concurrent use, but for Skip: the caller serialises Access and the
// queries (the page cache calls Skip first, lock-free, and Access under a
// lock only for the keys Skip leaves to it).
type Estimator struct {
	seed      uint64
	threshold atomic.Uint64 // a key is sampled iff its hash < threshold; it only falls
	budget    int

	// The sample set: each tracked key's last access time, and a max-heap
	// of the tracked hashes so the largest leaves when the set overflows.
	last map[uint64]uint32
	heap []uint64

	// Order statistics over last-access times: tree counts the tracked keys
	// whose last access is at each time; a key's reuse distance is the number
	// of tracked keys accessed after it.
	tree  fenwick
	clock uint32 // next time stamp; compacted when it reaches len(tree)

	// Sampled accesses by reuse distance (distances scaled to the full key
	// space), as counts at the current rate: when the rate falls, existing
	// counts are multiplied by newRate/oldRate (SHARDS fixed size).
	hist     [numBins]float64
	sampled  float64       // sampled accesses at the current rate (hist plus cold misses)
	accesses atomic.Uint64 // every access, sampled or not (Skip counts without the caller's lock)

	scratch []uint64 // compact's buffer: the hash at each time
	used    []bool   // compact's buffer: whether a key is at each time
}

// New returns an Estimator. It returns an error wrapping ErrConfig for an
// invalid configuration.
func New(cfg Config) (*Estimator, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Estimator{
		seed:   cfg.Seed,
		budget: cfg.SampleBudget,
		last:   make(map[uint64]uint32, cfg.SampleBudget+1),
		heap:   make([]uint64, 0, cfg.SampleBudget+1),
		tree:   newFenwick(2*cfg.SampleBudget + 2),
	}
	e.scratch = make([]uint64, e.tree.len())
	e.used = make([]bool, e.tree.len())
	if cfg.InitialRate >= 1 {
		e.threshold.Store(math.MaxUint64)
	} else {
		e.threshold.Store(uint64(cfg.InitialRate * (1 << 63) * 2))
	}
	return e, nil
}

// Rate is the current sampling rate (the share of the key space tracked).
func (e *Estimator) Rate() float64 {
	return float64(e.threshold.Load()) / (1 << 63) / 2
}

// Accesses is the number of accesses seen.
func (e *Estimator) Accesses() uint64 { return e.accesses.Load() }

// hash is the spatial hash (SplitMix64's finaliser of key ^ seed): keys
// arrive already hashed by the page cache, the mix keeps sampling uniform
// even for keys that are not.
func (e *Estimator) hash(key uint64) uint64 { return splitmix(key ^ e.seed) }

// splitmix is SplitMix64's finaliser.
func splitmix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Access records one access to key. Unsampled keys cost a hash and a
// compare; a sampled key costs O(log SampleBudget).
func (e *Estimator) Access(key uint64) {
	if !e.Skip(key) {
		e.accesses.Add(1)
		e.sample(e.hash(key))
	}
}

// Skip records an access to a key outside the sample and reports true; for
// a key in the sample it records nothing and reports false, and the caller
// then calls Access. Unlike the other methods, Skip is safe to call from
// many goroutines at once, and concurrently with any method: the
// threshold only falls, so a key Skip finds outside the sample stays
// outside. Most keys are outside (all but about SampleBudget of the
// distinct keys), so a caller that calls Skip first takes its lock for
// few accesses.
func (e *Estimator) Skip(key uint64) bool {
	// A threshold of MaxUint64 is rate 1: every key, the top hash too.
	if t := e.threshold.Load(); e.hash(key) < t || t == math.MaxUint64 {
		return false
	}
	e.accesses.Add(1)
	return true
}

func (e *Estimator) sample(h uint64) {
	e.sampled++
	if t, ok := e.last[h]; ok {
		// Reuse: the distance is the number of tracked keys touched since,
		// scaled by 1/rate to the full key space.
		d := e.tree.sumFrom(t + 1)
		e.tree.add(t, -1)
		delete(e.last, h) // re-added below; a compaction meanwhile must not count it twice
		e.hist[binOf(float64(d)/e.Rate())]++
	} else {
		e.heapPush(h) // a cold miss: infinite distance, no bin
	}
	if e.clock == uint32(e.tree.len()) {
		e.compact()
	}
	e.last[h] = e.clock
	e.tree.add(e.clock, 1)
	e.clock++
	for len(e.heap) > e.budget {
		e.shrink()
	}
}

// shrink drops the tracked key with the largest hash and lowers the
// threshold to it, rescaling the histogram to the new rate (SHARDS fixed
// size).
func (e *Estimator) shrink() {
	top := e.heapPop()
	oldRate := e.Rate()
	e.threshold.Store(min(top, math.MaxUint64-1)) // MaxUint64 would mean every key
	if t, ok := e.last[top]; ok {
		e.tree.add(t, -1)
		delete(e.last, top)
	}
	ratio := e.Rate() / oldRate
	for i := range e.hist {
		e.hist[i] *= ratio
	}
	e.sampled *= ratio
}

// compact renumbers the last-access times 0..n-1 in order when the clock
// reaches the end of the tree.
func (e *Estimator) compact() {
	// Occupancy apart from the hash: every hash is a key's, MaxUint64 too
	// (at rate 1), so no hash value can mark a free time.
	byTime, used := e.scratch, e.used
	clear(used)
	for h, t := range e.last {
		byTime[t], used[t] = h, true
	}
	e.tree.reset()
	e.clock = 0
	for t, h := range byTime {
		if used[t] {
			e.last[h] = e.clock
			e.tree.add(e.clock, 1)
			e.clock++
		}
	}
}

// HitRatio estimates the hit ratio of an LRU cache of the given size (in
// keys, i.e. pages) over the accesses seen so far: the share of accesses
// whose reuse distance is below size. It returns 0 before the first sampled
// access or for size < 1.
//
// The estimate applies the SHARDS_adj correction: the difference between
// the accesses expected in the sample (accesses x rate) and those counted
// is credited to the smallest distances, which removes most of the bias a
// few very popular sampled (or unsampled) keys cause.
func (e *Estimator) HitRatio(size int) float64 {
	if size < 1 || e.sampled == 0 {
		return 0
	}
	total := float64(e.accesses.Load())
	rate := e.Rate()
	adj := total - e.sampled/rate // expected minus counted, at full scale
	hits := e.hitsBelow(float64(size), 1/rate) / rate
	if hits+adj < 0 {
		adj = -hits
	}
	r := (hits + adj) / total
	return min(max(r, 0), 1)
}

// Curve returns HitRatio for each size.
func (e *Estimator) Curve(sizes []int) []float64 {
	out := make([]float64, len(sizes))
	for i, s := range sizes {
		out[i] = e.HitRatio(s)
	}
	return out
}

// hitsBelow sums the scaled accesses with distance < size. Distances are
// multiples of unit (1/rate: whole keys at rate 1), so inside the bin that
// holds size the bin's accesses are taken as spread evenly over the
// multiples it covers: a bin narrower than unit holds one distance at most,
// below size or not (a linear interpolation would count part of the bin of
// distance size itself, as a hit). A bin that covers no multiple (its
// counts moved there when the rate fell) is interpolated linearly.
func (e *Estimator) hitsBelow(size, unit float64) float64 {
	b := binOf(size)
	var s float64
	for i := 0; i < b; i++ {
		s += e.hist[i]
	}
	lo, hi := binLow(b), binLow(b+1)
	first, end := math.Ceil(lo/unit), math.Ceil(hi/unit) // the multiples k*unit in [lo, hi): k in [first, end)
	switch {
	case end > first:
		below := min(math.Ceil(size/unit), end) - first // k*unit < size iff k < ceil(size/unit)
		s += e.hist[b] * max(below, 0) / (end - first)
	case hi > lo:
		s += e.hist[b] * min(max((size-lo)/(hi-lo), 0), 1)
	}
	return s
}

// binOf maps a distance (in keys, >= 0) to its bin: distance 0 has bin 0;
// otherwise binsPerOctave bins per power of two.
func binOf(d float64) int {
	if d < 1 {
		return 0
	}
	exp := math.Log2(d + 1)
	b := int(exp * binsPerOctave)
	return min(b, numBins-1)
}

// binLow is the smallest distance of bin b (the inverse of binOf).
func binLow(b int) float64 {
	if b <= 0 {
		return 0
	}
	return math.Exp2(float64(b)/binsPerOctave) - 1
}

// fenwick is a binary indexed tree of int32 counts over positions 0..n-1.
type fenwick struct{ t []int32 }

func newFenwick(n int) fenwick { return fenwick{t: make([]int32, n+1)} }

func (f *fenwick) len() int { return len(f.t) - 1 }
func (f *fenwick) reset()   { clear(f.t) }

func (f *fenwick) add(pos uint32, v int32) {
	for i := int(pos) + 1; i < len(f.t); i += i & -i {
		f.t[i] += v
	}
}

// prefix is the sum over positions < n.
func (f *fenwick) prefix(n int) int32 {
	var s int32
	for i := n; i > 0; i &= i - 1 {
		s += f.t[i]
	}
	return s
}

// sumFrom is the sum over positions >= pos.
func (f *fenwick) sumFrom(pos uint32) int32 {
	return f.prefix(f.len()) - f.prefix(int(pos))
}

func (e *Estimator) heapPush(h uint64) {
	e.heap = append(e.heap, h)
	i := len(e.heap) - 1
	for i > 0 {
		p := (i - 1) / 2
		if e.heap[p] >= e.heap[i] {
			break
		}
		e.heap[p], e.heap[i] = e.heap[i], e.heap[p]
		i = p
	}
}

func (e *Estimator) heapPop() uint64 {
	top := e.heap[0]
	n := len(e.heap) - 1
	e.heap[0] = e.heap[n]
	e.heap = e.heap[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && e.heap[r] > e.heap[l] {
			c = r
		}
		if e.heap[i] >= e.heap[c] {
			break
		}
		e.heap[i], e.heap[c] = e.heap[c], e.heap[i]
		i = c
	}
	return top
}

// SizingFactors are the cache sizes, relative to the current one, that
// Sizing reports: what the node would hit at a quarter, half, the same,
// double and four times its size.
var SizingFactors = []float64{0.25, 0.5, 1, 2, 4}

// Point is one point of a sizing curve.
type Point struct {
	Factor   float64 // size relative to the current size
	Size     int     // in pages
	HitRatio float64 // estimated LRU hit ratio at Size
}

// Sizing returns the estimated LRU hit ratio at each of SizingFactors times
// current (in pages; a size rounds to at least 1).
func (e *Estimator) Sizing(current int) []Point {
	pts := make([]Point, len(SizingFactors))
	for i, f := range SizingFactors {
		s := 1
		if x := f*float64(current) + 0.5; x >= math.MaxInt {
			s = math.MaxInt
		} else if x >= 1 {
			s = int(x)
		}
		pts[i] = Point{Factor: f, Size: s, HitRatio: e.HitRatio(s)}
	}
	return pts
}
