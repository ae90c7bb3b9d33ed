package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// reviewPhases builds a long trace of phases that favour different
// candidates: Zipf over a hot set, loops a little larger than the cache,
// a sliding recency window, a hot set under a scan, and mixtures of
// recency and frequency whose balance shifts (ARC's ground).
func reviewPhases(capacity int, seed uint64, phases int, perPhase int) []uint64 {
	kinds := make([]int, phases)
	for i := range kinds {
		kinds[i] = i % 6
	}
	return reviewTrace(capacity, seed, kinds, perPhase)
}

// reviewTrace is reviewPhases with the phases' kinds (0 to 5) given.
func reviewTrace(capacity int, seed uint64, kinds []int, perPhase int) []uint64 {
	rng := rand.New(rand.NewPCG(seed, 77))
	var keys []uint64
	base := uint64(1) << 40
	c := float64(capacity)
	for ph, kind := range kinds {
		n := perPhase
		switch kind {
		case 0: // Zipf-like over 4x capacity
			z := rand.NewZipf(rng, 1.1, 1, uint64(4*capacity))
			for i := 0; i < n; i++ {
				keys = append(keys, base+z.Uint64())
			}
		case 1: // loop over 1.3x capacity
			l := uint64(1.3*c) + 1
			for i := 0; i < n; i++ {
				keys = append(keys, base+uint64(i)%l)
			}
		case 2: // sliding recency window with geometric distance
			for i := 0; i < n; i++ {
				d := uint64(rng.ExpFloat64() * c / 3)
				h := uint64(i / 3)
				if h >= d {
					keys = append(keys, base+h-d)
				}
			}
		case 3: // hot set of capacity/2 under a scan
			for i := 0; i < n; i++ {
				if rng.IntN(2) == 0 {
					keys = append(keys, base+rng.Uint64N(uint64(c/2)+1))
				} else {
					keys = append(keys, base+1<<30+uint64(i))
				}
			}
		case 4, 5: // recency burst over a frequency base, shifting balance
			share := 0.2 + 0.6*float64(ph%5)/4
			hot := uint64(math.Max(1, c*0.6))
			for i := 0; i < n; i++ {
				if rng.Float64() < share {
					d := uint64(rng.ExpFloat64() * c / 2)
					h := uint64(i / 2)
					if h >= d {
						keys = append(keys, base+1<<31+h-d)
					}
				} else {
					keys = append(keys, base+uint64(float64(hot)*math.Pow(rng.Float64(), 3)))
				}
			}
		}
		base += 1 << 34
	}
	return keys
}

// reviewCaps are the capacities the review covers: the edges of the tuner's
// regimes (minAllShadows 128, maxShadow 2048, sampled caches above it,
// confirmShare: size < 10% of the capacity from 20,481 keys on).
var reviewCaps = []int{1, 2, 3, 63, 64, 127, 128, 2047, 2048, 2049, 20480, 20481}

// checker drives a Policy and a model of its resident set (the keys
// inserted with ok, minus the victims and the removed keys) and checks the
// contract after every call. log records every decision for the
// determinism test.
type checker struct {
	t       testing.TB
	name    string
	p       Policy
	model   map[uint64]bool
	victims []uint64
	log     []uint64
	op      int
}

func newChecker(t testing.TB, name string, capacity int, seed uint64) *checker {
	p, err := ByName(name, capacity, seed)
	if err != nil {
		t.Fatal(err)
	}
	if p.Cap() != capacity || p.Len() != 0 {
		t.Fatalf("%s: new policy of %d: Cap %d Len %d", name, capacity, p.Cap(), p.Len())
	}
	return &checker{t: t, name: name, p: p, model: map[uint64]bool{}}
}

func (c *checker) fail(format string, a ...any) {
	c.t.Helper()
	c.t.Fatalf("%s cap %d op %d: %s", c.name, c.p.Cap(), c.op, fmt.Sprintf(format, a...))
}

func (c *checker) touch(k uint64) bool {
	c.t.Helper()
	c.op++
	hit := c.p.Touch(k)
	if hit != c.model[k] {
		c.fail("Touch(%d) = %v, model says resident = %v", k, hit, c.model[k])
	}
	if hit {
		c.log = append(c.log, 1)
	} else {
		c.log = append(c.log, 0)
	}
	return hit
}

func (c *checker) insert(k uint64) {
	c.t.Helper()
	c.op++
	resident := c.model[k]
	var ok bool
	c.victims, ok = c.p.Insert(k, c.victims[:0])
	if resident && (!ok || len(c.victims) != 0) {
		c.fail("Insert(resident %d) = %v, %v; want no victims, true", k, c.victims, ok)
	}
	for i, v := range c.victims {
		switch {
		case v == k:
			c.fail("Insert(%d) returned the key itself as a victim (victims %v, ok %v)", k, c.victims, ok)
		case !c.model[v]:
			c.fail("Insert(%d) evicted %d, not resident or returned twice (victims %v)", k, v, c.victims[:i+1])
		}
		delete(c.model, v)
	}
	if ok {
		c.model[k] = true
	}
	c.log = append(c.log, k, uint64(len(c.victims)))
	c.log = append(c.log, c.victims...)
	c.checkLen()
}

func (c *checker) remove(k uint64) {
	c.t.Helper()
	c.op++
	c.p.Remove(k)
	delete(c.model, k)
	c.checkLen()
}

func (c *checker) checkLen() {
	c.t.Helper()
	if n := c.p.Len(); n != len(c.model) || n > c.p.Cap() {
		c.fail("Len = %d, model %d, Cap %d", n, len(c.model), c.p.Cap())
	}
}

// access is one request of the page cache's protocol.
func (c *checker) access(k uint64) {
	c.t.Helper()
	if !c.touch(k) {
		c.insert(k)
	}
}

// final checks that every key of the model is resident (Touch, so it ends
// the run).
func (c *checker) final() {
	c.t.Helper()
	for k := range c.model {
		if !c.p.Touch(k) {
			c.fail("resident key %d not found at the end", k)
		}
	}
}

// randomOps drives c with a mix of the protocol (skewed and uniform keys,
// one-hit scans), a Touch whose fetch fails (no Insert), an Insert without
// a Touch (a warm restart re-indexing its pages), a re-Insert of a
// resident key, and Remove of resident and unknown keys.
func randomOps(c *checker, rng *rand.Rand, steps int) {
	capacity := c.p.Cap()
	universe := uint64(3*capacity + 5)
	for i := 0; i < steps; i++ {
		var k uint64
		switch r := rng.IntN(100); {
		case r < 45:
			k = uint64(rng.ExpFloat64()*float64(capacity)/2) % universe
		case r < 90:
			k = rng.Uint64N(universe)
		default:
			k = universe + uint64(i)
		}
		switch r := rng.IntN(200); {
		case r < 3:
			c.remove(k)
		case r < 4:
			c.remove(^k) // never inserted
		case r < 7:
			c.touch(k) // the fetch failed: no Insert
		case r < 10:
			c.insert(k) // without a Touch
		case r < 12:
			if c.touch(k) {
				c.insert(k) // a resident key: a no-op
			}
		default:
			c.access(k)
		}
	}
}

// TestPolicyContractAgainstModel checks the Policy contract (policy.go) for every
// policy ByName builds at every review capacity, against the resident-set
// model, over a random mix of every call the interface allows.
func TestPolicyContractAgainstModel(t *testing.T) {
	for _, name := range Names() {
		for _, capacity := range reviewCaps {
			t.Run(fmt.Sprintf("%s/%d", name, capacity), func(t *testing.T) {
				steps := max(5000, 8*capacity)
				if testing.Short() {
					steps = min(steps, 30000)
				}
				c := newChecker(t, name, capacity, uint64(capacity))
				randomOps(c, rand.New(rand.NewPCG(uint64(capacity), 3)), steps)
				c.final()
			})
		}
	}
}

// modeLog records the default policy's live configuration after every
// call: the candidate its tuner follows, and for a sampling tuner the live
// cache's mode and window.
type modeLog struct {
	cands       map[int]bool
	modeChanges int // live cache W-TinyLFU <-> ARC
	toARC       int
	winChanges  int // live W-TinyLFU window target changes
	lastMode    uint8
	lastWin     int
}

func (m *modeLog) note(p Policy) {
	tu := tunerOf(p)
	if tu == nil {
		return
	}
	m.cands[tu.cur] = true
	if sp, ok := p.(*sampledPolicy); ok {
		if sp.live.mode != m.lastMode {
			m.modeChanges++
			if sp.live.mode == modeARC {
				m.toARC++
			}
			m.lastMode = sp.live.mode
		}
		if sp.live.mode == modeTinyLFU && sp.live.tl.windowMax != m.lastWin {
			if m.lastWin != 0 {
				m.winChanges++
			}
			m.lastWin = sp.live.tl.windowMax
		}
	}
}

// TestTunerSwitchesKeepContract drives the default policy through
// long phased traces (Zipf, loops over 1.3x the capacity, sliding
// recency, a hot set under a scan, recency/frequency mixtures) that make
// its tuner switch candidates, with Removes and Inserts without a Touch
// mixed in, and checks the contract at every call. The sampled capacities
// (2049 and up) must see the live cache become ARC, and 2049 come back to
// W-TinyLFU (20,480 keys would need millions of accesses for the return).
func TestTunerSwitchesKeepContract(t *testing.T) {
	tunerSwitches(t, reviewCaps[:9])
}

// TestLiveTypeSwitches is TestTunerSwitchesKeepContract at the
// sampled capacities, where the live cache changes type.
func TestLiveTypeSwitches(t *testing.T) {
	tunerSwitches(t, reviewCaps[9:])
}

func tunerSwitches(t *testing.T, caps []int) {
	for _, capacity := range caps {
		t.Run(fmt.Sprint(capacity), func(t *testing.T) {
			perPhase := 12*capacity + 20000
			if capacity <= maxShadow {
				perPhase = 6*capacity + 8000
			}
			kinds := []int{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}
			if capacity > 10000 {
				// Sliding recency (LRU leads), a hot set under a scan,
				// then Zipf: the live cache goes LRU, then ARC.
				perPhase, kinds = 6*capacity, []int{2, 3, 0}
			}
			if testing.Short() {
				perPhase = min(perPhase, 4*capacity+2000)
			}
			c := newChecker(t, DefaultName, capacity, 5)
			m := &modeLog{cands: map[int]bool{}}
			rng := rand.New(rand.NewPCG(uint64(capacity), 9))
			for i, k := range reviewTrace(capacity, uint64(capacity), kinds, perPhase) {
				switch r := rng.IntN(1000); {
				case r < 3:
					c.remove(k)
				case r < 5:
					c.insert(k + 1<<60) // a warm restart's page
				default:
					c.access(k)
				}
				if i&63 == 0 {
					m.note(c.p)
				}
			}
			c.final()
			t.Logf("cap %d: %d calls, candidates followed %v, live type changes %d (to ARC %d), window changes %d",
				capacity, c.op, m.cands, m.modeChanges, m.toARC, m.winChanges)
			if capacity >= 128 && len(m.cands) < 2 {
				t.Errorf("the tuner never switched (followed %v)", m.cands)
			}
			if testing.Short() {
				return
			}
			if capacity > maxShadow && m.toARC < 1 {
				t.Errorf("the live cache never became ARC (type changes %d)", m.modeChanges)
			}
			if capacity == maxShadow+1 && m.modeChanges < 2 {
				t.Errorf("the live cache changed type %d times (to ARC %d): want W-TinyLFU -> ARC -> W-TinyLFU", m.modeChanges, m.toARC)
			}
		})
	}
}

// TestSameSeedSameDecisions: two runs of every policy with the same
// seed and the same calls (Removes and Inserts without a Touch included)
// make the same decisions: the same hits, victims and admissions.
func TestSameSeedSameDecisions(t *testing.T) {
	for _, name := range Names() {
		for _, capacity := range []int{1, 3, 64, 128, 2048, 2049, 20481} {
			steps := max(5000, 2*capacity)
			run := func(seed uint64) []uint64 {
				c := newChecker(t, name, capacity, seed)
				randomOps(c, rand.New(rand.NewPCG(11, uint64(capacity))), steps)
				for _, k := range reviewPhases(capacity, 3, 6, capacity+2000) {
					c.access(k)
				}
				return c.log
			}
			for _, seed := range []uint64{0, 7} {
				if a, b := run(seed), run(seed); !slices.Equal(a, b) {
					t.Errorf("%s cap %d seed %d: two runs decided differently", name, capacity, seed)
				}
			}
		}
	}
}

// FuzzPolicy decodes bytes into calls on a policy of a review
// capacity (the byte stream picks the policy, the capacity and the seed)
// and checks the contract after each. Run briefly:
//
//	go test -run '^$' -fuzz FuzzPolicy -fuzztime 20s ./pkg/cache/policy
func FuzzPolicy(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{1, 3, 9, 0x41, 0x42, 0x81, 0xc1, 0x41, 0x02, 0x03})
	f.Add([]byte{0, 7, 2, 1, 1, 2, 2, 3, 3, 0x81, 0xc3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	names := Names()
	caps := reviewCaps[:10] // up to 2049: fast to build
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 {
			return
		}
		name := names[int(data[0])%len(names)]
		capacity := caps[int(data[1])%len(caps)]
		c := newChecker(t, name, capacity, uint64(data[2]))
		universe := uint64(2*capacity + 3)
		for i, b := range data[3:] {
			// The low 6 bits pick a key (spread over the universe), the
			// high 2 the call.
			k := uint64(b&63) * universe / 64
			if capacity < 32 {
				k = uint64(b&63) % universe
			}
			switch b >> 6 {
			case 0, 1:
				c.access(k)
			case 2:
				if i%2 == 0 {
					c.remove(k)
				} else {
					c.touch(k)
				}
			default:
				c.insert(k)
			}
		}
		c.final()
	})
}
