package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Synthetic traces: generators with fixed seeds for workloads the default
// policy was not tuned on (the shared traces were). Each returns the same
// trace every time; keys are hashed with HashKey like a trace file's.

// zipfSampler draws ranks 0..n-1 with P(rank r) proportional to
// 1/(r+1)^s, for any s >= 0 (math/rand's Zipf needs s > 1), by inverting
// the cumulative distribution.
type zipfSampler struct {
	cdf []float64
	rng *rand.Rand
}

func newZipfSampler(n int, s float64, rng *rand.Rand) *zipfSampler {
	cdf := make([]float64, n)
	sum := 0.0
	for r := range cdf {
		sum += 1 / math.Pow(float64(r+1), s)
		cdf[r] = sum
	}
	for r := range cdf {
		cdf[r] /= sum
	}
	return &zipfSampler{cdf: cdf, rng: rng}
}

func (z *zipfSampler) next() int {
	return min(sort.SearchFloat64s(z.cdf, z.rng.Float64()), len(z.cdf)-1)
}

// synthBuilder accumulates accesses to integer keys (hashed at the end).
type synthBuilder struct {
	keys []uint64
	seen map[uint64]struct{}
}

func (b *synthBuilder) add(k uint64) {
	h := HashKey(k)
	b.keys = append(b.keys, h)
	b.seen[h] = struct{}{}
}

func (b *synthBuilder) trace(name string) *Trace {
	return &Trace{Name: name, Keys: b.keys, Distinct: len(b.seen)}
}

func newSynthBuilder(n int) *synthBuilder {
	return &synthBuilder{keys: make([]uint64, 0, n), seen: make(map[uint64]struct{})}
}

// Key spaces: each generator part draws from its own range so parts never
// share keys by accident.
const (
	spaceHot  = 0
	spaceScan = 1 << 40
	spaceOnce = 2 << 40
)

// SynthZipf is a stationary Zipf(s) stream over n keys: the frequency
// workload where LFU-like admission wins.
func SynthZipf(s float64, n, accesses int, seed uint64) *Trace {
	rng := rand.New(rand.NewPCG(seed, 1))
	z := newZipfSampler(n, s, rng)
	b := newSynthBuilder(accesses)
	for range accesses {
		b.add(spaceHot + uint64(z.next()))
	}
	return b.trace(fmt.Sprintf("synth-zipf-%.1f", s))
}

// SynthZipfScans is a query-engine-like stream: Zipf(0.9) point reads over
// hot keys, and every period accesses a sequential scan of scanLen keys
// never read before (a large columnar file read once) that must not flush
// the hot set.
func SynthZipfScans(hot, period, scanLen, accesses int, seed uint64) *Trace {
	rng := rand.New(rand.NewPCG(seed, 2))
	z := newZipfSampler(hot, 0.9, rng)
	b := newSynthBuilder(accesses)
	scanKey := uint64(spaceScan)
	for i := 0; len(b.keys) < accesses; i++ {
		if i > 0 && i%period == 0 {
			for range scanLen {
				b.add(scanKey)
				scanKey++
			}
		}
		b.add(spaceHot + uint64(z.next()))
	}
	b.keys = b.keys[:accesses]
	return b.trace("synth-zipf-scans")
}

// SynthLoop repeats a loop over loopLen keys, with one access in
// 1/oneHitShare to a key never seen again mixed in: the distinct keys grow
// so that the cache sizes of the acceptance grid (1 to 50% of the distinct
// keys) include caches a little smaller than the loop, where LRU hits
// nothing and a frequency filter keeps part of the loop.
func SynthLoop(loopLen, passes, oneHitEvery int, seed uint64) *Trace {
	rng := rand.New(rand.NewPCG(seed, 3))
	b := newSynthBuilder(loopLen * passes * (oneHitEvery + 1) / oneHitEvery)
	once := uint64(spaceOnce)
	for range passes {
		for k := range loopLen {
			b.add(spaceHot + uint64(k))
			if rng.IntN(oneHitEvery) == 0 {
				b.add(once)
				once++
			}
		}
	}
	return b.trace("synth-loop")
}

// SynthPhases changes its working set every phaseLen accesses: each phase
// is Zipf(0.9) over its own set of setSize keys, half of them shared with
// the previous phase. Recency and fast adaptation win.
func SynthPhases(setSize, phaseLen, phases int, seed uint64) *Trace {
	rng := rand.New(rand.NewPCG(seed, 4))
	z := newZipfSampler(setSize, 0.9, rng)
	b := newSynthBuilder(phaseLen * phases)
	for p := range phases {
		base := uint64(p * setSize / 2)
		perm := rng.Perm(setSize) // the popularity order changes too
		for range phaseLen {
			b.add(spaceHot + base + uint64(perm[z.next()]))
		}
	}
	return b.trace("synth-phases")
}

// SynthMixed alternates a recency phase (a sliding window: the next access
// is to a recent key, at a geometric distance from the head, which advances
// steadily) and a frequency phase (Zipf(1.0) over a fixed hot set), each
// phaseLen accesses: the tuner must move between LRU-like and LFU-like
// settings.
func SynthMixed(hot, phaseLen, phases int, seed uint64) *Trace {
	rng := rand.New(rand.NewPCG(seed, 5))
	z := newZipfSampler(hot, 1.0, rng)
	b := newSynthBuilder(phaseLen * phases)
	head := uint64(spaceScan)
	for p := range phases {
		for i := range phaseLen {
			if p%2 == 0 {
				b.add(spaceHot + uint64(z.next()))
				continue
			}
			if i%3 == 0 {
				head++
			}
			d := uint64(rng.ExpFloat64() * float64(hot) / 8)
			b.add(head - min(d, head-spaceScan))
		}
	}
	return b.trace("synth-mixed")
}

// SynthOneHit is a web-like stream heavy in one-hit wonders: a share
// oneHit of the accesses go to keys never requested again, the rest to
// Zipf(0.8) over hot keys. Admission control (not letting the one-hit keys
// displace the hot ones) wins.
func SynthOneHit(hot int, oneHit float64, accesses int, seed uint64) *Trace {
	rng := rand.New(rand.NewPCG(seed, 6))
	z := newZipfSampler(hot, 0.8, rng)
	b := newSynthBuilder(accesses)
	once := uint64(spaceOnce)
	for range accesses {
		if rng.Float64() < oneHit {
			b.add(once)
			once++
		} else {
			b.add(spaceHot + uint64(z.next()))
		}
	}
	return b.trace("synth-one-hit")
}

// SynthStack is LRU's home ground, a stack-distance model: each access is a
// new key with probability newShare, else a re-reference of the key at a
// depth of the LRU stack drawn from an exponential distribution with mean
// meanDepth (0 is the most recent key). Recency alone predicts reuse; a
// frequency filter only delays the keys that matter.
func SynthStack(newShare, meanDepth float64, accesses int, seed uint64) *Trace {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := newSynthBuilder(accesses)
	var stack []uint64 // most recent last
	next := uint64(spaceHot)
	for range accesses {
		var k uint64
		if len(stack) == 0 || rng.Float64() < newShare {
			k, next = next, next+1
		} else {
			d := min(int(rng.ExpFloat64()*meanDepth), len(stack)-1)
			i := len(stack) - 1 - d
			k = stack[i]
			stack = append(stack[:i], stack[i+1:]...)
		}
		stack = append(stack, k)
		b.add(k)
	}
	return b.trace("synth-stack")
}

// SyntheticTraces returns the synthetic set the acceptance tests check
// besides the shared traces, each generated with its fixed seed: Zipf at
// skews 0.6, 0.9 and 1.2; Zipf with periodic large scans; a loop a little
// larger than the mid-size caches; phase-changing working sets; alternating
// recency and frequency phases; a one-hit-wonder heavy web-like stream; and
// an LRU stack-distance stream. About 1.5 million accesses in all.
func SyntheticTraces() []*Trace {
	return []*Trace{
		SynthZipf(0.6, 20000, 150000, 11),
		SynthZipf(0.9, 20000, 150000, 12),
		SynthZipf(1.2, 20000, 150000, 13),
		SynthZipfScans(8000, 15000, 12000, 200000, 14),
		SynthLoop(3000, 40, 6, 15),
		SynthPhases(6000, 30000, 6, 16),
		SynthMixed(4000, 25000, 8, 17),
		SynthOneHit(15000, 0.5, 150000, 18),
		SynthStack(0.3, 1000, 150000, 19),
	}
}

// SmallSyntheticTraces returns a held-out set of small traces, added in
// the eleventh round after the policy had been measured on the shared and
// synthetic sets: the same generators as SyntheticTraces and
// LargeSyntheticTraces with other seeds and sizes, so that at 1 to 50% of
// their keys most caches replay every key (49 to 4,835 keys), as the
// shared traces' do. About 0.6 million accesses in all; TestSeedSweep
// replays them when asked (-sweep-small).
func SmallSyntheticTraces() []*Trace {
	return []*Trace{
		named(SynthZipf(0.7, 4000, 60000, 101), "small-zipf-0.7"),
		named(SynthZipf(1.0, 6000, 60000, 102), "small-zipf-1.0"),
		named(SynthZipfScans(2000, 5000, 3000, 60000, 103), "small-zipf-scans"),
		named(SynthLoop(1500, 30, 5, 104), "small-loop-1500"),
		named(SynthLoop(800, 40, 10, 105), "small-loop-800"),
		named(SynthPhases(1500, 8000, 6, 106), "small-phases"),
		named(SynthMixed(1200, 8000, 6, 107), "small-mixed"),
		named(SynthOneHit(3000, 0.4, 60000, 108), "small-one-hit"),
		named(SynthStack(0.2, 300, 60000, 109), "small-stack"),
		named(SynthDB(2000, 6000, 3000, 80000, 110), "small-db"),
		SynthConcat("small-concat",
			SynthZipf(0.9, 3000, 20000, 111),
			SynthLoop(1000, 15, 7, 112),
			SynthStack(0.2, 200, 20000, 113)),
	}
}

// SynthDB is a database-server-like stream: Zipf(1.0) point reads over hot
// keys, interrupted on average every scanEvery accesses by a sequential
// scan of 5,000 to 35,000 keys starting anywhere in a cold table of cold
// keys. Unlike SynthZipfScans the cold keys come back (later scans overlap
// earlier ones), so the cache must keep the hot set and may keep the most
// scanned part of the table.
func SynthDB(hot, cold, scanEvery, accesses int, seed uint64) *Trace {
	rng := rand.New(rand.NewPCG(seed, 8))
	z := newZipfSampler(hot, 1.0, rng)
	b := newSynthBuilder(accesses)
	for len(b.keys) < accesses {
		if rng.IntN(scanEvery) == 0 {
			n := 5000 + rng.IntN(30000)
			start := uint64(rng.IntN(cold))
			for j := range uint64(n) {
				b.add(spaceScan + (start+j)%uint64(cold))
			}
			continue
		}
		b.add(spaceHot + uint64(z.next()))
	}
	b.keys = b.keys[:accesses]
	return b.trace("synth-db")
}

// SynthConcat plays traces one after another, like the ConCat trace of the
// ARC study (Megiddo and Modha: fourteen workstation traces end to end):
// each part's keys are moved away from the others' (XOR of the hashed keys
// with a constant per part: a bijection within the part, and two parts
// share a key only by a 2^-64 chance per pair, so Distinct is the parts'
// sum), so every boundary is a complete change of working set and access
// pattern.
func SynthConcat(name string, parts ...*Trace) *Trace {
	n := 0
	for _, p := range parts {
		n += len(p.Keys)
	}
	tr := &Trace{Name: name, Keys: make([]uint64, 0, n)}
	for i, p := range parts {
		salt := uint64(i) * 0x9e3779b97f4a7c15
		for _, k := range p.Keys {
			tr.Keys = append(tr.Keys, k^salt)
		}
		tr.Distinct += p.Distinct
	}
	return tr
}

// LargeSyntheticTraces returns a second held-out set at the scale of the
// block traces of the ARC and UMass studies (hundreds of thousands of
// distinct keys, 1.5 to 6 million accesses): caches of 2,249 to 782,196
// keys, where the default policy samples its keys (above 2,048) and its
// tuner decides on a small sample. A database-like stream (SynthDB); a
// low-skew Zipf over a million keys (a search engine's index blocks); an
// LRU stack-distance stream (OLTP-like); Zipf with 30% one-hit wonders
// (a CDN); ten shifting Zipf working sets; and four such workloads end to
// end (SynthConcat; added in the eighth round, after the others had been
// measured: a shift of workload at a large cache's pace). About 19.5
// million accesses in all: TestLargeSyntheticBar replays them only when
// asked (-large).
func LargeSyntheticTraces() []*Trace {
	return []*Trace{
		SynthDB(100_000, 300_000, 40_000, 3_000_000, 21),
		named(SynthZipf(0.8, 1_000_000, 3_000_000, 22), "synth-large-zipf-0.8"),
		named(SynthStack(0.15, 4000, 1_500_000, 23), "synth-large-stack"),
		named(SynthOneHit(500_000, 0.3, 3_000_000, 24), "synth-large-one-hit"),
		named(SynthPhases(50_000, 300_000, 10, 25), "synth-large-phases"),
		SynthConcat("synth-large-concat",
			SynthDB(100_000, 300_000, 40_000, 1_500_000, 31),
			SynthZipf(0.8, 500_000, 1_500_000, 32),
			SynthOneHit(250_000, 0.3, 1_500_000, 33),
			SynthStack(0.15, 4000, 1_500_000, 34)),
	}
}

// named renames tr (a generator names its trace after itself).
func named(tr *Trace, name string) *Trace {
	tr.Name = name
	return tr
}
