package mrc

import (
	"fmt"
	"math"
	"slices"
)

// Sim is the part of a cache policy that a miniature simulation drives
// (package policy's Policy satisfies it): Touch records an access and
// reports a hit, Insert offers a key Touch reported missing and appends the
// keys it evicts to victims.
type Sim interface {
	Touch(key uint64) bool
	Insert(key uint64, victims []uint64) ([]uint64, bool)
}

// MiniConfig configures a Mini. Capacity and New are required; the zero
// value of every other field selects its default.
type MiniConfig struct {
	// Capacity is the simulated cache's own capacity in keys (pages): the
	// size the Factors multiply.
	Capacity int
	// Factors are the sizes simulated, as multiples of Capacity, each in
	// (0, 64]. Default 0.25, 0.5, 2 and 4 (the page cache's Stats.Sizing).
	// Capacity itself (factor 1) is always simulated too: Calibrated
	// anchors the curve there.
	Factors []float64
	// SampleBudget is the capacity in keys of the largest miniature cache.
	// The sampling rate is SampleBudget / (largest factor x Capacity), at
	// most 1 and at most MaxRate, so the smallest miniature at the default
	// factors holds a sixteenth of it. Default 4096 (DefaultMiniBudget).
	// Memory is the policy's own per key times the sum of the miniatures'
	// sizes (about 2x SampleBudget at the default factors); the cost of a
	// sampled access is one access per miniature.
	SampleBudget int
	// MaxRate caps the sampling rate, and so the share of accesses that
	// pay for a replay through every miniature (several microseconds at
	// the default budget): a small cache would otherwise sample every key.
	// The cap gives way where it would leave the largest miniature under
	// 256 keys (the smallest under 16 at the default factors). In (0, 1];
	// default 1/32 (DefaultMaxRate). The price in accuracy: on the shared
	// traces the default's anchored error is 0.013, MaxRate 1's 0.0004
	// (doc.go).
	MaxRate float64
	// New builds the policy under study at a miniature's capacity (at
	// least 1). Required.
	New func(capacity int) (Sim, error)
	// Seed selects the spatial hash (a key is sampled iff hash(key, seed) <
	// rate x 2^64). Default 0 (a valid seed).
	Seed uint64
}

// DefaultMiniBudget is the default MiniConfig.SampleBudget.
const DefaultMiniBudget = 4096

// DefaultMaxRate is the default MiniConfig.MaxRate.
const DefaultMaxRate = 1.0 / 32

// minLargestMini is the size of the largest miniature below which
// MaxRate gives way.
const minLargestMini = 256

// maxFactor bounds MiniConfig.Factors: sizes far above the cache's own
// would leave the smaller miniatures a handful of keys at a fixed budget.
const maxFactor = 64

func (c *MiniConfig) validate() error {
	if c.Capacity < 1 {
		return fmt.Errorf("%w: Capacity %d, want at least 1", ErrConfig, c.Capacity)
	}
	if c.New == nil {
		return fmt.Errorf("%w: New is required", ErrConfig)
	}
	if c.SampleBudget == 0 {
		c.SampleBudget = DefaultMiniBudget
	}
	if c.SampleBudget < 1 || c.SampleBudget > 1<<26 {
		return fmt.Errorf("%w: SampleBudget %d not in [1, 2^26]", ErrConfig, c.SampleBudget)
	}
	if c.MaxRate == 0 {
		c.MaxRate = DefaultMaxRate
	}
	if !(c.MaxRate > 0 && c.MaxRate <= 1) {
		return fmt.Errorf("%w: MaxRate %v not in (0, 1]", ErrConfig, c.MaxRate)
	}
	if len(c.Factors) == 0 {
		c.Factors = []float64{0.25, 0.5, 2, 4}
	}
	for _, f := range c.Factors {
		if !(f > 0 && f <= maxFactor) {
			return fmt.Errorf("%w: factor %v not in (0, %d]", ErrConfig, f, maxFactor)
		}
	}
	return nil
}

// Mini estimates the hit ratio of a cache policy at other sizes by
// miniature simulation (Waldspurger, Saemundsson, Ahmad and Park, "Cache
// Modeling and Optimization using Miniature Simulations", USENIX ATC 2017):
// the keys whose spatial hash falls under a rate R are replayed through
// one instance of the policy per size, each R times that size. Unlike the
// SHARDS Estimator, which models LRU, it answers for the policy the cache
// runs (scan resistance, admission, adaptation included), at the price of
// a policy access per miniature on each sampled key.
//
// A Mini is not safe for concurrent use: the caller serialises Access and
// the queries, as for Estimator.
type Mini struct {
	seed      uint64
	threshold uint64 // a key is sampled iff miniHash(key) < threshold
	rate      float64

	sims    []miniSim // by ascending size
	own     int       // index in sims of factor 1 (the cache's own size)
	victims []uint64  // scratch for Insert

	sampled  uint64 // sampled accesses
	accesses uint64 // every access
}

type miniSim struct {
	factor float64
	size   int // the full-scale size it stands for, in keys
	mini   int // its own capacity, about rate x size
	p      Sim
	hits   uint64
}

// NewMini returns a Mini. It returns an error wrapping ErrConfig for an
// invalid configuration, or New's error.
func NewMini(cfg MiniConfig) (*Mini, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	factors := append(slices.Clone(cfg.Factors), 1)
	slices.Sort(factors)
	factors = slices.Compact(factors)
	largest := factors[len(factors)-1] * float64(cfg.Capacity)
	rate := min(1, float64(cfg.SampleBudget)/largest)
	if rate > cfg.MaxRate {
		rate = min(rate, max(cfg.MaxRate, minLargestMini/largest))
	}
	m := &Mini{seed: cfg.Seed, rate: rate}
	if m.rate >= 1 {
		m.threshold = math.MaxUint64
	} else {
		m.threshold = uint64(m.rate * (1 << 63) * 2)
	}
	for _, f := range factors {
		size := max(1, int(min(f*float64(cfg.Capacity)+0.5, math.MaxInt/2)))
		mini := max(1, int(float64(size)*m.rate+0.5))
		p, err := cfg.New(mini)
		if err != nil {
			return nil, fmt.Errorf("mrc: cannot build the policy at %d keys: %w", mini, err)
		}
		if f == 1 {
			m.own = len(m.sims)
		}
		m.sims = append(m.sims, miniSim{factor: f, size: size, mini: mini, p: p})
	}
	return m, nil
}

// miniHash is the spatial hash. It premultiplies by an odd constant before
// SplitMix64's finaliser, so that it is not the hash a policy under study
// samples its own shadows with (package policy mixes key ^ seed the same
// way): a miniature fed only keys of small hash would otherwise sample
// all or none of them.
func (m *Mini) miniHash(key uint64) uint64 {
	return splitmix((key ^ m.seed) * 0xd6e8feb86659fd93)
}

// Access records one access to key: a sampled key is replayed through
// every miniature.
func (m *Mini) Access(key uint64) {
	m.accesses++
	if !m.Sampled(key) {
		return
	}
	m.sampled++
	for i := range m.sims {
		s := &m.sims[i]
		if s.p.Touch(key) {
			s.hits++
			continue
		}
		m.victims, _ = s.p.Insert(key, m.victims[:0])
	}
}

// Warm replays key through the miniatures, if sampled, without counting
// it: for a cache that restarts with pages cached (a warm restart), so
// that its miniatures start from about what it holds instead of cold (a
// cold start would read as a gap at every size, and the anchoring would
// push the whole curve up by it). Call it for the cached pages, oldest
// first, before any Access.
func (m *Mini) Warm(key uint64) {
	if !m.Sampled(key) {
		return
	}
	for i := range m.sims {
		s := &m.sims[i]
		if !s.p.Touch(key) {
			m.victims, _ = s.p.Insert(key, m.victims[:0])
		}
	}
}

// Rate is the sampling rate (the share of the key space replayed).
func (m *Mini) Rate() float64 { return m.rate }

// Accesses is the number of accesses seen (see Sampled).
func (m *Mini) Accesses() uint64 { return m.accesses }

// Replayed is the number of accesses replayed through the miniatures.
func (m *Mini) Replayed() uint64 { return m.sampled }

// Sampled reports whether Access would replay key. It reads nothing that
// Access writes, so a caller may call it without the lock that serialises
// Access, and call Access only for the keys it reports (Accesses then
// counts only those; the estimates do not use it).
func (m *Mini) Sampled(key uint64) bool {
	return m.threshold == math.MaxUint64 || m.miniHash(key) < m.threshold
}

// HitRatio estimates the hit ratio at size keys: the simulated ratio at
// the simulated size nearest below and above, interpolated linearly in the
// logarithm of the size, and the nearest simulated size's outside their
// range. It is 0 before any sampled access.
func (m *Mini) HitRatio(size int) float64 {
	if m.sampled == 0 || size < 1 {
		return 0
	}
	ratio := func(s *miniSim) float64 { return float64(s.hits) / float64(m.sampled) }
	i, found := slices.BinarySearchFunc(m.sims, size, func(s miniSim, size int) int { return s.size - size })
	switch {
	case found:
		return ratio(&m.sims[i])
	case i == 0:
		return ratio(&m.sims[0])
	case i == len(m.sims):
		return ratio(&m.sims[i-1])
	}
	lo, hi := &m.sims[i-1], &m.sims[i]
	w := math.Log(float64(size)/float64(lo.size)) / math.Log(float64(hi.size)/float64(lo.size))
	return ratio(lo) + w*(ratio(hi)-ratio(lo))
}

// Sizing returns the estimate at each simulated factor (factor 1
// included), by ascending size (Point.Size is the full-scale size the
// miniature stands for). It is every miniature's own ratio; see
// Calibrated.
func (m *Mini) Sizing() []Point {
	pts := make([]Point, len(m.sims))
	for i := range m.sims {
		s := &m.sims[i]
		pts[i] = Point{Factor: s.factor, Size: s.size, HitRatio: m.HitRatio(s.size)}
	}
	return pts
}

// Calibrated returns Sizing's points shifted by the difference between
// measured, the hit ratio the cache has at its own size over the same
// accesses, and the miniature of that size's, clamped to [0, 1]: the
// miniatures answer how much a change of size buys, the cache what its
// size gets. A policy whose behaviour depends on its absolute size (the
// default policy samples its own candidates above 2,048 keys, and its
// miniatures hold at most SampleBudget keys) is off by about the same at
// every size of a miniature, and the anchoring cancels most of that:
// on the large synthetic traces the mean absolute error falls from 0.031
// to 0.010 (doc.go). Before any sampled access, and for a measured
// ratio that is not in [0, 1], it returns Sizing's points.
func (m *Mini) Calibrated(measured float64) []Point {
	pts := m.Sizing()
	if m.sampled == 0 || !(measured >= 0 && measured <= 1) {
		return pts
	}
	shift := measured - pts[m.own].HitRatio
	for i := range pts {
		pts[i].HitRatio = min(max(pts[i].HitRatio+shift, 0), 1)
	}
	return pts
}
