package sim

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locuscache/locus/pkg/cache/policy"
)

// Cache is one cache under simulation: Access records an access and reports
// whether it hit, admitting the key on a miss if the cache wants it.
type Cache interface {
	Name() string
	Access(key uint64) bool
}

// Names of the simulated policies besides those of policy.ByName.
const (
	NameARC      = "arc"      // hashicorp/golang-lru/arc/v2
	NameWTinyLFU = "wtinylfu" // maypok86/otter/v2 (adaptive W-TinyLFU)
	NameBelady   = "belady"   // the offline optimum (Oracle)
)

// ErrUnknownPolicy is returned for a policy name Run does not know.
var ErrUnknownPolicy = errors.New("unknown policy")

// ErrCapacity is returned for a capacity below 1.
var ErrCapacity = errors.New("capacity must be at least 1")

// PolicyNames lists every name Run accepts, in the order of a report: the
// default policy, the in-process baselines, then the optimum.
func PolicyNames() []string {
	names := []string{policy.DefaultName, "lru", NameARC, NameWTinyLFU, NameBelady}
	for _, n := range policy.Names() {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// NewCache returns the online cache called name with the given capacity.
// policy.ByName names run the real policy code through a PolicyCache;
// "arc" and "wtinylfu" are the library baselines. "belady" is offline: use
// an Oracle.
func NewCache(name string, capacity int, seed uint64) (Cache, error) {
	if capacity < 1 {
		return nil, fmt.Errorf("%w (got %d)", ErrCapacity, capacity)
	}
	switch name {
	case NameARC:
		return newARC(capacity)
	case NameWTinyLFU:
		return newOtter(capacity)
	case NameBelady:
		return nil, fmt.Errorf("%w: %q is offline; use an Oracle", ErrUnknownPolicy, name)
	}
	p, err := policy.ByName(name, capacity, seed)
	if err != nil {
		if errors.Is(err, policy.ErrUnknownPolicy) {
			return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownPolicy, name, strings.Join(PolicyNames(), ", "))
		}
		return nil, err
	}
	return NewPolicyCache(p), nil
}

// PolicyCache drives a policy.Policy with the page cache's protocol: Touch,
// and Insert on a miss (the victims are discarded: there is no storage).
type PolicyCache struct {
	p       policy.Policy
	victims []uint64
}

// NewPolicyCache wraps p.
func NewPolicyCache(p policy.Policy) *PolicyCache {
	return &PolicyCache{p: p, victims: make([]uint64, 0, 16)}
}

// Name returns the policy's name.
func (c *PolicyCache) Name() string { return c.p.Name() }

// Access records one access and reports whether it hit.
func (c *PolicyCache) Access(key uint64) bool {
	if c.p.Touch(key) {
		return true
	}
	c.victims, _ = c.p.Insert(key, c.victims[:0])
	return false
}

// Result is the outcome of replaying one trace through one policy at one
// capacity.
type Result struct {
	Policy   string  `json:"policy"`
	Capacity int     `json:"capacity"`
	Fraction float64 `json:"capacity_frac,omitempty"` // capacity / distinct keys, when asked as a fraction
	Accesses int64   `json:"accesses"`
	Hits     int64   `json:"hits"`
	HitRatio float64 `json:"hit_ratio"`
}

// Replay runs every key of keys through c and counts the hits.
func Replay(keys []uint64, c Cache) (hits int64) {
	for _, k := range keys {
		if c.Access(k) {
			hits++
		}
	}
	return hits
}

// progressChunk is how many accesses a replay runs between two updates of
// the progress count.
const progressChunk = 1 << 18

// Options configure Run.
type Options struct {
	// Policies to replay; empty means PolicyNames().
	Policies []string
	// Capacities in keys. Fractions, if set, add round(f x distinct) each
	// (at least 1).
	Capacities []int
	Fractions  []float64
	// Seed for the policies that take one.
	Seed uint64
	// Extra names further online caches that Policies may name (for
	// experiments with policy variants); they take precedence over the
	// built-in names. With Parallel > 1 a factory is called from several
	// goroutines at once (each call builds its own cache).
	Extra map[string]func(capacity int, seed uint64) (Cache, error)
	// Progress, if not nil, receives a line every ProgressEvery (default
	// 2s) while the replays run: the share of the accesses replayed and
	// the replays done.
	Progress      io.Writer
	ProgressEvery time.Duration
	// Parallel is how many replays run at once (each replay is one policy
	// at one capacity, on its own goroutine; results do not depend on it).
	// 0 or 1: one at a time.
	Parallel int
}

// Size is one capacity of a run, with the fraction it came from (0 if given
// in keys).
type Size struct {
	Capacity int
	Fraction float64
}

// Sizes returns the capacities opts asks for on trace t, in the order given,
// fractions first, each capacity once. It returns ErrCapacity for a capacity below 1 or a
// fraction that is not a positive finite number.
func (o Options) Sizes(t *Trace) ([]Size, error) {
	var sizes []Size
	for _, f := range o.Fractions {
		if !(f > 0) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%w: capacity fraction %v must be positive", ErrCapacity, f)
		}
		// Run replays a capacity above the distinct keys as the distinct
		// keys; the clamp keeps a huge fraction from overflowing int
		// (int of a float beyond MaxInt64 is MinInt64 on amd64).
		c := int(math.Round(min(f*float64(t.Distinct), 1<<50)))
		sizes = append(sizes, Size{Capacity: max(c, 1), Fraction: f})
	}
	for _, c := range o.Capacities {
		if c < 1 {
			return nil, fmt.Errorf("%w (got %d)", ErrCapacity, c)
		}
		sizes = append(sizes, Size{Capacity: c})
	}
	if len(sizes) == 0 {
		return nil, fmt.Errorf("%w: no capacity given", ErrCapacity)
	}
	// Two sizes of one capacity (fractions that round alike) replay once,
	// as the first one asked.
	var uniq []Size
	for _, s := range sizes {
		if !slices.ContainsFunc(uniq, func(u Size) bool { return u.Capacity == s.Capacity }) {
			uniq = append(uniq, s)
		}
	}
	return uniq, nil
}

// Run replays t through every requested policy (each once) at every
// requested size (each capacity once) and returns the results ordered by
// size, then by policy in the order asked.
func Run(t *Trace, opts Options) ([]Result, error) {
	var names []string
	for _, n := range opts.Policies {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		names = PolicyNames()
	}
	sizes, err := opts.Sizes(t)
	if err != nil {
		return nil, err
	}
	// Validate every name before the first (possibly long) replay.
	for _, n := range names {
		if n == NameBelady {
			continue
		}
		if _, err := opts.newCache(n, 1); err != nil {
			return nil, err
		}
	}
	every := opts.ProgressEvery
	if every <= 0 {
		every = 2 * time.Second
	}
	var oracle *Oracle
	for _, n := range names {
		if n == NameBelady {
			// Read-only: shared by the replays.
			if len(t.ids) == len(t.Keys) && t.Distinct > 0 {
				oracle = oracleOfIDs(t.ids, t.Distinct)
			} else {
				oracle = NewOracle(t.Keys)
			}
			break
		}
	}
	type job struct {
		i    int
		name string
		size Size
	}
	var jobs []job
	for _, s := range sizes {
		for _, n := range names {
			jobs = append(jobs, job{len(jobs), n, s})
		}
	}
	results := make([]Result, len(jobs))
	errs := make([]error, len(jobs))
	var (
		done       atomic.Int64 // replays finished
		replayed   atomic.Int64 // accesses replayed, for the progress lines
		start      = time.Now()
		next       = make(chan job)
		wg         sync.WaitGroup
		workers    = min(max(1, opts.Parallel), len(jobs))
		failed     atomic.Bool // a replay failed: skip the rest
		replayOnce = func(j job) {
			if failed.Load() {
				return
			}
			var hits int64
			if j.name == NameBelady {
				hits = oracle.Hits(j.size.Capacity)
			} else {
				// A cache at least as large as the trace's distinct keys
				// never evicts: every policy hits the same accesses, so
				// it is built no larger (a huge --capacity on a small
				// trace would otherwise allocate for nothing).
				c, err := opts.newCache(j.name, min(j.size.Capacity, max(t.Distinct, 1)))
				if err != nil {
					errs[j.i] = err
					failed.Store(true)
					return
				}
				for keys := t.Keys; len(keys) > 0; {
					n := min(len(keys), progressChunk)
					hits += Replay(keys[:n], c)
					replayed.Add(int64(n))
					keys = keys[n:]
				}
			}
			results[j.i] = Result{
				Policy:   j.name,
				Capacity: j.size.Capacity,
				Fraction: j.size.Fraction,
				Accesses: int64(len(t.Keys)),
				Hits:     hits,
				HitRatio: float64(hits) / float64(len(t.Keys)),
			}
			if j.name == NameBelady {
				replayed.Add(int64(len(t.Keys)))
			}
			done.Add(1)
		}
	)
	report := func() {
		total := float64(len(jobs)) * float64(len(t.Keys))
		fmt.Fprintf(opts.Progress, "cache-sim: %s: %.0f%% of the accesses replayed, %d/%d replays done, %s elapsed\n",
			t.Name, 100*float64(replayed.Load())/total, done.Load(), len(jobs), time.Since(start).Round(time.Second))
	}
	stop := make(chan struct{})
	var reporter sync.WaitGroup
	if opts.Progress != nil {
		reporter.Add(1)
		go func() {
			defer reporter.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					report()
				}
			}
		}()
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				replayOnce(j)
			}
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	close(stop)
	reporter.Wait()
	if opts.Progress != nil && time.Since(start) >= every {
		report() // the last word of a run long enough to have reported
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return results, nil
}

func (o Options) newCache(name string, capacity int) (Cache, error) {
	if f, ok := o.Extra[name]; ok {
		return f(capacity, o.Seed)
	}
	return NewCache(name, capacity, o.Seed)
}
