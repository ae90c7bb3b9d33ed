package policy

import "math"

// Kinds of candidate policy the tuner simulates.
const (
	kindTinyLFU uint8 = iota // W-TinyLFU with a fixed window (window 100%: exactly LRU)
	kindARC                  // ARC
)

// candidate is one configuration the tuner simulates in a shadow cache.
type candidate struct {
	kind   uint8
	window float64 // W-TinyLFU: the window's share of the capacity
	filter bool    // W-TinyLFU: admission contests use the sketch
	margin int     // W-TinyLFU: the candidate's frequency must exceed the victim's by more than this
}

// isLRU says whether c is LRU (a W-TinyLFU whose window is the whole cache).
func (c candidate) isLRU() bool { return c.kind == kindTinyLFU && c.window >= 1 }

// candidates are the configurations the tuner chooses from, in order of
// preference when two lead by the same margin: Caffeine's 1% window with a
// sticky admission (the candidate's estimated count must exceed the
// victim's by at least two, not one; the start: LFU-like, scan resistant,
// keeps a loop's first keys), LRU, ARC, then the 1% window with Caffeine's
// own admission rule and 10% and 30% windows (a cache under minAllShadows
// keys simulates only the first tinyCandidates). The measurements behind
// the set are in EXPERIMENTS.md.
var candidates = []candidate{
	{kind: kindTinyLFU, window: 0.01, filter: true, margin: 1},
	{kind: kindTinyLFU, window: 1.00, filter: true},
	{kind: kindARC},
	{kind: kindTinyLFU, window: 0.01, filter: true},
	{kind: kindTinyLFU, window: 0.10, filter: true},
	{kind: kindTinyLFU, window: 0.30, filter: true},
}

// The tuner's settings. The measurements behind them are in EXPERIMENTS.md.
var (
	maxShadow      = 2048 // keys per shadow; a larger cache samples its keys
	minAllShadows  = 128  // a smaller cache simulates only the first tinyCandidates candidates
	tinyCandidates = 3
	sampledShare   = 0.8  // a sampling cache's shadows hold at most this share of its capacity
	periodPerKey   = 2.0  // decide every periodPerKey x shadow-capacity sampled accesses
	firstPeriodDiv = 4    // the first decision after size/firstPeriodDiv accesses, doubling up to the period
	scoreDecay     = 0.99 // per decision: the tallies remember about 100 periods
	minGain        = 0.001
	minSigmas      = 2.0
	horizon        = 30.0 // periods a lead is expected to last, weighed against the cost of a switch
	maxProjection  = 4.0  // ... but at most this many times as long as it was measured
	sampledCost    = 0.5  // sampled: a switch costs this many times the sampled keys to load (the live cache loads none)
	typeSwitchCost = 1.0  // sampled: a switch between W-TinyLFU and ARC costs this many times more
	lruSwitchCost  = 0.5  // confirming (see confirm): a switch to LRU costs this many times less
	tieCost        = 0.5  // a tied lead is taken instead of the largest if its switch costs under this share
	earlyDiv       = 4    // sampled: the early shadows hold this many times fewer keys than the shadows
	minEarly       = 64   // ... but at least this many
	confirmShare   = 0.1  // sampled: a sample under this share of the keys needs a switch confirmed by a second decision
	stallGaps      = 8.0  // full sampling: a lead whose wins stopped for this many mean gaps (at the last period's rate) has stalled
	fillDecisions  = 8    // full sampling: in the period after the shadows fill, decide this many times per period too ...
	fillCost       = 0.1  // ... on switches that cost at most this share of the capacity (see fillDecision)
	switchKeep     = 0.5  // full sampling: a scheduled decision's switch keeps this share of the tallies (see follow)
	twinCost       = 2.0  // full sampling: a switch between two candidates of one window costs this many times more (see switchCost)
	newRunShare    = 0.25 // sampled, unconfirmed: a run of misses in every shadow this long (x their size) restarts the schedule (see noteRun)
	runDecisions   = 16   // ... after which the tuner decides this many times, every size/runDecisions sampled accesses
	maxPenalty     = 8.0  // full sampling: switches that keep losing multiply switch costs by up to this (see noteSwitch)
)

// decisionHook, if set (by tests and experiments), sees every decision and
// the candidate it chose, before the switch. Never set in production.
var decisionHook func(t *tuner, best int)

// shadow is a policy the tuner can simulate and the live cache can follow.
type shadow interface {
	Policy
	contains(key uint64) bool
	// missing counts the keys s holds that other does not.
	missing(other shadow) int
}

func newShadow(c candidate, capacity int, seed uint64, freq *sketch) shadow {
	if c.kind == kindARC {
		return newARC(capacity, seed)
	}
	s := newTinyLFU(capacity, seed, c.window)
	s.filter = c.filter
	s.margin = c.margin
	s.freq, s.counts = freq, false
	return s
}

// tuner chooses the live cache's configuration by miniature simulation
// (Waldspurger et al., "Cache Modeling and Optimization using Miniature
// Simulations", USENIX ATC 2017; Caffeine's MiniSim climber). It replays a
// spatially hashed sample of the keys (all keys when the cache holds at most
// maxShadow) through one shadow cache per candidate, each with capacity
// scaled to the sample, and tallies, for every pair of shadows, the
// accesses that hit one and missed the other (decayed by scoreDecay per
// decision). At each decision (after size/firstPeriodDiv sampled accesses,
// the interval doubling up to periodPerKey x size) it moves the live cache
// to the shadow that leads the current one most, if the lead is
//
//   - real: at least minSigmas standard deviations of a paired sign test
//     (McNemar: the lead over the square root of the accesses the two
//     disagree on), and at least minGain of the sampled accesses;
//   - worth its cost: a switch costs about one miss per key the new shadow
//     holds and the current one does not (the live cache does not store
//     them), so the lead's rate projected over horizon decision periods
//     (but over at most maxProjection times the accesses it was measured
//     on) must exceed that count.
//
// Both tests matter: without the cost test the tuner chases short phases
// and every switch costs hits; without the significance test it switches
// on noise. A full-sampling tuner also defers a lead that has stalled
// (stalled): it follows that shadow at its next win before the next
// decision, not at the decision.
type tuner struct {
	full      bool   // every key is sampled
	threshold uint64 // otherwise, a key is sampled iff hash(key ^ seed) < threshold
	seed      uint64

	cands   []candidate // the candidates simulated
	shadows []shadow    // one per candidate
	wins    []float64   // wins[i*k+j]: decayed accesses that hit shadow i and missed shadow j
	acc     float64     // decayed sampled accesses
	victims []uint64    // scratch for the shadows' Insert
	costs   []float64   // scratch for choose
	freq    *sketch     // the W-TinyLFU shadows' shared frequency sketch

	stall    stallNotes // the stall test's record (full sampling)
	deferred int        // a stalled lead's shadow, followed as soon as it wins again; -1 if none

	// Switch regret (full sampling; see noteSwitch): after a switch away
	// from shadow evalFrom, the live cache's hits (evalLive) against
	// evalFrom's (evalPrev) until the live cache has more (the switch
	// paid) or the next switch comes first (it lost). penalty multiplies
	// the cost of every switch: doubled by a lost switch, up to
	// maxPenalty, halved by one that paid, down to 1.
	penalty  float64
	evalOn   bool
	evalFrom int
	evalLive int
	evalPrev int
	lastHits uint64 // the shadows the last replayed access hit

	// What the current shadow did with the last access (full sampling).
	curVictims []uint64 // the keys it evicted
	curHolds   bool     // it holds the key afterwards

	n      int  // sampled accesses since the last decision
	next   int  // sampled accesses until the next decision (grows to period)
	period int  // sampled accesses between decisions
	cur    int  // index of the candidate the live cache follows
	filled bool // the shadows have been full (they hold the same keys until then)
	fillAt int  // full sampling: stall.clock when the shadows filled

	// A sampling tuner that needs no confirmation restarts its schedule
	// of decisions after a new working set's first run of misses (see
	// noteRun).
	missRun int  // sampled accesses every shadow has missed in a row
	runSeen bool // the schedule restarted for the current run
	runLeft int  // quick decisions left after the restart (see noteRun)

	// A tuner that samples under confirmShare of the keys switches only
	// to a candidate that two decisions in a row choose: its decisions
	// are hundreds of thousands of accesses apart, the few events in one
	// period (a scan, a burst) move its small sample's ranking, and a
	// switch between W-TinyLFU windows costs the live cache several times
	// its price (the seventh round in EXPERIMENTS.md). A switch to LRU is the
	// exception, taken at once (the tenth round).
	confirm bool
	pending int // the candidate the last decision chose but did not take; -1 if none

	// A sampling tuner's early shadows: the candidates at a quarter of the
	// shadows' size, over the same sample, until the shadows fill (then
	// nil). They fill first, so by the time the shadows (and the live
	// cache) fill and start to disagree, the early shadows have ranked
	// the candidates at a smaller size: the live cache starts from the
	// one that leads there, a switch that costs nothing yet, since until
	// the live cache is full every candidate holds the same keys.
	early []shadow
	ewins []float64 // as wins, for the early shadows
	eacc  float64   // sampled accesses the early shadows saw
}

func newTuner(capacity int, seed uint64) *tuner {
	t := &tuner{seed: mix64(seed ^ 0x74756e6572), victims: make([]uint64, 0, 8), curVictims: make([]uint64, 0, 8), pending: -1, deferred: -1, penalty: 1}
	size := capacity
	if capacity <= maxShadow {
		t.full = true
	} else {
		// Shadows of at most sampledShare x capacity keys: a cache a little
		// larger than maxShadow would otherwise pay for six full-size
		// shadows and a full-size live cache.
		size = min(maxShadow, int(sampledShare*float64(capacity)))
		t.threshold = uint64(float64(size) / float64(capacity) * (1 << 63) * 2)
		t.confirm = float64(size) < confirmShare*float64(capacity)
	}
	// The sketch counts every sampled access whatever the window, so the
	// shadows share one, counted here once per access.
	t.freq = newSketch(size, mix64(seed^0x736b65746368))
	for i, c := range candidates {
		if capacity < minAllShadows && i >= tinyCandidates {
			continue // a tiny cache: its fixed cost per shadow dominates
		}
		t.cands = append(t.cands, c)
		t.shadows = append(t.shadows, newShadow(c, size, mix64(seed+uint64(i)+1), t.freq))
	}
	t.wins = make([]float64, len(t.shadows)*len(t.shadows))
	t.stall = stallNotes{last: make([]int, len(t.wins)), period: make([]float64, len(t.wins))}
	if !t.full {
		esize := max(minEarly, size/earlyDiv)
		for i, c := range t.cands {
			t.early = append(t.early, newShadow(c, esize, mix64(seed+uint64(i)+0x65617279), t.freq))
		}
		t.ewins = make([]float64, len(t.early)*len(t.early))
	}
	t.period = max(16, int(periodPerKey*float64(size)))
	t.next = max(16, min(t.period, size/firstPeriodDiv))
	return t
}

// sampled reports whether the tuner replays key.
func (t *tuner) sampled(key uint64) bool {
	return t.full || mix64(key^t.seed) < t.threshold
}

// access replays a sampled key through the shadows and, at the end of a
// period, decides. It reports whether the live cache must follow another
// candidate (t.cur changed).
func (t *tuner) access(key uint64) bool {
	t.freq.increment(key)
	t.curVictims = t.curVictims[:0]
	var hits uint64
	for i, s := range t.shadows {
		if s.Touch(key) {
			hits |= 1 << i
			if i == t.cur {
				t.curHolds = true
			}
			continue
		}
		var ok bool
		t.victims, ok = s.Insert(key, t.victims[:0])
		if i == t.cur {
			t.curHolds = ok
			for _, v := range t.victims {
				if v == key {
					t.curHolds = false
				}
			}
			t.curVictims = append(t.curVictims, t.victims...)
		}
	}
	var notes *stallNotes
	if t.full {
		notes = &t.stall
		notes.clock++
	}
	tally(t.wins, hits, len(t.shadows), notes)
	t.lastHits = hits
	t.acc++
	t.noteRun(hits)
	switched := false
	if t.full {
		if d := t.deferred; d >= 0 && hits&(1<<d) != 0 && hits&(1<<t.cur) == 0 {
			// The stalled lead grows again: follow it now.
			t.noteSwitch()
			t.cur, t.curHolds, switched, t.deferred = d, true, true, -1
			if decisionHook != nil {
				decisionHook(t, d)
			}
		}
	}
	if t.early != nil {
		t.victims = replay(t.early, key, t.ewins, t.victims)
		t.eacc++
	}
	if !t.filled && t.shadows[0].Len() >= t.shadows[0].Cap() {
		// The shadows are full: from now on they disagree. A sampling
		// cache starts from the candidate its early shadows rank first
		// and restarts its schedule of decisions here (it may have
		// reached a long period while the shadows were filling, telling
		// them apart on nothing); a full-sampling one fills as early
		// as its schedule starts anyway.
		t.filled = true
		t.fillAt = t.stall.clock
		if !t.full {
			if best := t.earlyChoice(); best != t.cur {
				t.cur = best
				t.curHolds = t.shadows[best].contains(key)
				switched = true
			}
			t.early, t.ewins = nil, nil
			t.n, t.next = 0, max(16, min(t.period, t.shadows[0].Cap()/firstPeriodDiv))
		}
	}
	if t.n++; t.n < t.next {
		if t.full && t.filled && t.stall.clock-t.fillAt <= t.period && t.fillDecision(key) {
			switched = true
		}
		return switched
	}
	t.n = 0
	span := float64(t.next)
	t.next = min(t.period, 2*t.next)
	if t.runLeft > 0 {
		// A quick decision after a new run (noteRun): its lead is
		// projected over a full period, as a fill decision's is, since
		// the lead is new and the short span would understate it.
		t.runLeft--
		span = float64(t.period)
		t.next = t.runNext()
	}
	best := t.confirmed(t.choose(span))
	if decisionHook != nil {
		decisionHook(t, best)
	}
	for i := range t.wins {
		t.wins[i] *= scoreDecay
		t.stall.period[i] = 0
	}
	t.acc *= scoreDecay
	if best != t.cur {
		t.follow(best, key)
		switched = true
		if t.runLeft > 0 {
			t.runLeft, t.next = 0, t.runNext()
		}
	}
	return switched
}

// follow makes a scheduled decision's choice, candidate i, the one the
// live cache follows; key is the access just replayed. A full-sampling
// tuner keeps switchKeep of its tallies there: the leads built before the
// switch measured the workload the decision says has changed, and held at
// full weight they keep the tuner on the new candidate long after the
// workload turns against it (at sprite 5% ARC's lead from the tenth of the
// trace where it led held the live cache on ARC for 20,000 accesses after
// the 10% and 30% windows led it by 2 points). Dropping them all made the
// tuner flip between candidates on short phases (small-db 25%). The
// thirteenth round in EXPERIMENTS.md has the measurements. A sampling tuner keeps
// its tallies whole: its decisions are far apart and its sample small.
// The switches a decision defers (stalled) or a fill decision takes keep
// them whole too: the first continues a decision, and the second comes
// while the tallies are young (clearing there measured worse).
func (t *tuner) follow(i int, key uint64) {
	if t.full {
		t.noteSwitch()
	}
	t.cur, t.curHolds = i, t.shadows[i].contains(key)
	if !t.full {
		return
	}
	for j := range t.wins {
		t.wins[j] *= switchKeep
	}
	t.acc *= switchKeep
}

// noteRun restarts the schedule of decisions when every shadow has missed
// newRunShare of the shadows' size in a row (hits: the shadows the access
// hit), once per such run, in a sampling tuner that needs no confirmation.
// Such a run is a new working set's first pass (a loop after a Zipf part,
// say): each shadow has loaded the same new keys, the ones that keep them
// lead from the next pass on, and a decision a long period away (2 x the
// shadows' size in sampled accesses) would come passes later (the twelfth
// round in EXPERIMENTS.md). The restart decides runDecisions times, every
// size/runDecisions sampled accesses, before the schedule doubles from
// size/firstPeriodDiv again (the fourteenth round): at small-concat 25%
// the loop's second pass gives LRU a real lead within a tenth of the
// pass, and the schedule's decisions after the restart, a quarter and
// three quarters of the size on, switched a pass later than the quick
// ones. The tallies stay whole: halving them at every restart (a large
// scan restarts too) made the tuner flip at synth-db 5%. A full-sampling
// tuner restarting there decided on a scan's leads (the eleventh round),
// and a confirming one (sampling under a tenth of the keys) gained
// nothing.
func (t *tuner) noteRun(hits uint64) {
	if t.full || t.confirm || !t.filled {
		return
	}
	if hits != 0 {
		t.missRun, t.runSeen = 0, false
		return
	}
	t.missRun++
	size := t.shadows[0].Cap()
	if t.runSeen || float64(t.missRun) < newRunShare*float64(size) {
		return
	}
	t.runSeen = true
	t.n, t.runLeft = 0, runDecisions
	t.next = t.runNext()
}

// runNext is the number of sampled accesses to the next decision after a
// restart (noteRun): size/runDecisions while quick decisions are left,
// then size/firstPeriodDiv, from which the schedule doubles as after the
// fill.
func (t *tuner) runNext() int {
	size := t.shadows[0].Cap()
	if t.runLeft > 0 {
		return max(16, min(t.period, size/runDecisions))
	}
	return max(16, min(t.period, size/firstPeriodDiv))
}

// stallNotes records, for the stall test, when each shadow last hit an
// access another missed and how often it did in the current period,
// indexed as the tallies.
type stallNotes struct {
	clock  int       // sampled accesses so far
	last   []int     // last[i*k+j]: clock at the last access that hit shadow i and missed j
	period []float64 // period[i*k+j]: such accesses in the current period
}

// tally adds an access to the pairwise tallies of k shadows: every shadow
// whose bit is set in hits hit it and beat every shadow whose bit is not.
// It records each such win in notes too, unless notes is nil.
func tally(wins []float64, hits uint64, k int, notes *stallNotes) {
	if all := uint64(1)<<k - 1; hits == 0 || hits == all {
		return
	}
	for i := 0; i < k; i++ {
		if hits&(1<<i) == 0 {
			continue
		}
		for j := 0; j < k; j++ {
			if hits&(1<<j) == 0 {
				wins[i*k+j]++
				if notes != nil {
					notes.last[i*k+j] = notes.clock
					notes.period[i*k+j]++
				}
			}
		}
	}
}

// replay gives key to every shadow in shadows (a hit, or an Insert) and
// tallies the access in wins. victims is scratch space, returned for reuse.
func replay(shadows []shadow, key uint64, wins []float64, victims []uint64) []uint64 {
	var hits uint64
	for i, s := range shadows {
		if s.Touch(key) {
			hits |= 1 << i
			continue
		}
		victims, _ = s.Insert(key, victims[:0])
	}
	tally(wins, hits, len(shadows), nil)
	return victims
}

// realLead returns shadow i's lead over shadow j in the tallies wins of k
// shadows over acc accesses, and whether it is real: at least minGain of
// the accesses and minSigmas standard deviations of the paired sign test.
func realLead(wins []float64, k, i, j int, acc float64) (float64, bool) {
	gain := wins[i*k+j] - wins[j*k+i]
	return gain, gain > minGain*acc && gain > minSigmas*math.Sqrt(wins[i*k+j]+wins[j*k+i])
}

// earlyChoice returns the candidate whose early shadow has the largest real
// lead over the current one's, the current one if none has.
func (t *tuner) earlyChoice() int {
	k := len(t.early)
	best, lead := t.cur, 0.0
	for i := 0; i < k; i++ {
		if gain, ok := realLead(t.ewins, k, i, t.cur, t.eacc); i != t.cur && ok && gain > lead {
			best, lead = i, gain
		}
	}
	return best
}

// choose returns the candidate to follow after a period of span sampled
// accesses: the shadow with the largest lead over the current one among
// those whose lead is real (at least minGain of the sampled accesses and
// minSigmas standard deviations of the paired sign test) and pays for the
// switch (the lead projected over horizon periods, at most maxProjection
// times as long as it was measured, exceeds switchCost); the current one if
// none qualifies. The shadow with the largest lead is often the farthest
// from the current one, the dearest to switch to: when it does not pay yet,
// a nearer one whose smaller real lead does is taken now rather than
// nothing (the third round tested only the largest lead and waited). And
// when another qualifying shadow costs under tieCost of the largest lead's
// switch and the largest lead's shadow does not beat it for real (the same
// paired test, between the two), the cheapest such shadow is taken: their
// leads are tied, and the dearer switch would cost more for nothing (the
// eighth round in EXPERIMENTS.md). A chosen shadow whose lead has stalled (stalled)
// is not taken at the decision but deferred: access follows it at its next
// win, if one comes before the next decision.
func (t *tuner) choose(span float64) int {
	return t.pick(span, span, math.Inf(1), false)
}

// pick is choose with the stall test over the last stallSpan accesses,
// only switches that cost at most maxCost, and, with cheaperTies, equal
// leads (within rounding: the tallies decay) going to the cheaper switch
// (fillDecision: leads just after the fill are small counts, often equal).
func (t *tuner) pick(span, stallSpan, maxCost float64, cheaperTies bool) int {
	k := len(t.shadows)
	// cost[i] is the switch's cost if shadow i qualifies, else -1.
	cost := t.costs[:0]
	best, lead := t.cur, 0.0
	t.deferred = -1
	for i := 0; i < k; i++ {
		cost = append(cost, -1)
		if i == t.cur {
			continue
		}
		gain, ok := realLead(t.wins, k, i, t.cur, t.acc)
		if !ok {
			continue
		}
		if c := t.switchCost(i); c <= maxCost && gain*min(horizon*span/t.acc, maxProjection) > c {
			cost[i] = c
			tie := cheaperTies && best != t.cur && math.Abs(gain-lead) <= 1e-9*lead
			if (gain > lead && !tie) || (tie && c < cost[best]) {
				best, lead = i, gain
			}
		}
	}
	t.costs = cost
	if best == t.cur {
		return best
	}
	cheapest, least := best, tieCost*cost[best]
	for i, c := range cost {
		if c < 0 || c >= least || i == best {
			continue
		}
		if _, beaten := realLead(t.wins, k, best, i, t.acc); !beaten {
			cheapest, least = i, c
		}
	}
	if t.stalled(cheapest, stallSpan) {
		t.deferred = cheapest
		return t.cur
	}
	return cheapest
}

// fillDecision is a full-sampling tuner's extra decision in the period
// after its shadows fill (access calls it for the accesses up to a period
// after the fill), taken at every period/fillDecisions accesses since the
// last scheduled decision, between the scheduled ones (whose tallies it
// leaves undecayed). Just after the fill the shadows still hold nearly the
// same keys, so a switch is cheap, and every access it waits makes it
// dearer: at cpp 25% the leads appear within 150 accesses of the fill, 8
// accesses to none, and the scheduled decision that takes them comes 275
// accesses later, when the keys to load have grown up to threefold (the
// eleventh round in EXPERIMENTS.md). It considers only switches that cost at most
// fillCost of the capacity, projects a lead over the full period's
// horizon, and gives equal leads to the cheaper switch. A lead a scheduled
// decision deferred (stalled) stays deferred unless this decision switches
// or defers another. It reports whether the live cache must follow another
// candidate; key is the access just replayed.
func (t *tuner) fillDecision(key uint64) bool {
	if t.n%max(1, t.period/fillDecisions) != 0 {
		return false
	}
	deferred := t.deferred
	best := t.pick(float64(t.period), float64(t.n), fillCost*float64(t.shadows[0].Cap()), true)
	if best == t.cur && t.deferred < 0 {
		t.deferred = deferred
	}
	if decisionHook != nil {
		decisionHook(t, best)
	}
	if best == t.cur {
		return false
	}
	t.noteSwitch()
	t.cur, t.curHolds = best, t.shadows[best].contains(key)
	return true
}

// noteSwitch is called by a full-sampling tuner before it switches (any
// kind of switch): it ends the evaluation of the last switch, if still
// under way, as lost (the live cache never had more hits than the shadow
// it left: the new shadow's lead did not pay for loading its keys before
// the workload turned again) and doubles the penalty on switch costs; and
// it starts this switch's evaluation. A switch that paid (noteLive) halves
// the penalty. So a tuner whose switches keep losing, chasing the leads of
// a workload's alternating phases, stops switching on them: at zigzag 20%
// (400 keys, a size the acceptance grid does not hold) all the candidates
// reach 17 to 19% alone, and the tuner switched fourteen times, each
// switch losing, and reached 14.76% (18.29% with the penalty; the
// fifteenth round in EXPERIMENTS.md).
func (t *tuner) noteSwitch() {
	if t.evalOn && t.evalLive <= t.evalPrev {
		t.penalty = min(maxPenalty, t.penalty*2)
	}
	t.evalOn, t.evalFrom, t.evalLive, t.evalPrev = true, t.cur, 0, 0
}

// noteLive records whether the live cache hit the access just replayed
// (full sampling): the switch under evaluation has paid once the live
// cache has had more hits since it than the shadow it left.
func (t *tuner) noteLive(hit bool) {
	if !t.evalOn {
		return
	}
	if hit {
		t.evalLive++
	}
	if t.lastHits&(1<<t.evalFrom) != 0 {
		t.evalPrev++
	}
	if t.evalLive > t.evalPrev {
		t.penalty = max(1, t.penalty/2)
		t.evalOn = false
	}
}

// stalled reports whether shadow i's lead over the current one has stopped
// growing (full sampling only): in the last period of span accesses it won
// at some rate, and since its last win stallGaps mean gaps at that rate
// have passed (or it won nothing in the period). Under a steady rate such a
// gap has a chance of e^-stallGaps. A lead built in a burst that has ended
// is often one the current shadow is about to make up: on a zigzag's first
// reversal LRU hits the pass's last keys at once while the sticky window
// hits the keys it kept from the pass's start only at the reversal's end
// (the ninth round in EXPERIMENTS.md).
func (t *tuner) stalled(i int, span float64) bool {
	if !t.full {
		return false
	}
	k := len(t.shadows)
	w := t.stall.period[i*k+t.cur]
	return w == 0 || w/span*float64(t.stall.clock-t.stall.last[i*k+t.cur]) > stallGaps
}

// confirmed returns the candidate to follow when a decision chose best: best
// itself, unless the tuner needs a switch confirmed (confirm), best is not
// LRU, and the last decision did not choose best too, in which case the
// current one. A switch to LRU is not confirmed: after a change of workload
// the W-TinyLFU candidates hold the dead workload's keys until their sketch
// ages, LRU leads, and each period of waiting costs the live cache that
// lead (the measurements are in EXPERIMENTS.md, tenth round).
func (t *tuner) confirmed(best int) int {
	if !t.confirm || best == t.cur || t.cands[best].isLRU() {
		t.pending = -1
		return best
	}
	if t.pending != best {
		t.pending = best
		return t.cur
	}
	t.pending = -1
	return best
}

// switchCost is the cost, in sampled misses, of following shadow best
// instead of the current one: about one miss per key best holds that the
// current shadow does not (the live cache does not hold them), more for a
// change of type in a sampled cache (the live cache is rebuilt without the
// new type's history), less for a switch to LRU in a confirming tuner
// (after a change of workload the keys LRU holds and the followed shadow
// does not are the new workload's, which the live cache loads at once;
// the tenth round in EXPERIMENTS.md), and more between twins in a full-sampling
// tuner (twinCost); all times the penalty of a full-sampling tuner whose
// switches have been losing (noteSwitch).
func (t *tuner) switchCost(best int) float64 {
	c := float64(t.shadows[best].missing(t.shadows[t.cur]))
	if !t.full {
		c *= sampledCost
		if t.cands[best].kind != t.cands[t.cur].kind {
			c *= typeSwitchCost
		}
		if t.confirm && t.cands[best].isLRU() {
			c *= lruSwitchCost
		}
	} else if a, b := t.cands[best], t.cands[t.cur]; a.kind == kindTinyLFU && b.kind == kindTinyLFU && a.window == b.window {
		// Twins: the same window, another admission rule (the sticky
		// 1% window and the plain one). They hold nearly the same keys,
		// so the switch is priced low, but their leads turn with the
		// workload's phases more than any other pair's, and a switch
		// taken on one phase's lead lost hits in the next at multi2 25%
		// and multi1 10% (the thirteenth round in EXPERIMENTS.md).
		c *= twinCost
	}
	return c * t.penalty // 1 unless switches have been losing (noteSwitch)
}

// arcTarget is the ARC shadow's target size for T1 as a share of its
// capacity (0 if there is no ARC shadow).
func (t *tuner) arcTarget() float64 {
	for _, s := range t.shadows {
		if a, ok := s.(*arcPolicy); ok {
			return float64(a.p) / float64(a.c)
		}
	}
	return 0
}

// remove drops key from every shadow, early ones included (an
// invalidation).
func (t *tuner) remove(key uint64) {
	for _, s := range t.shadows {
		s.Remove(key)
	}
	for _, s := range t.early {
		s.Remove(key)
	}
}
