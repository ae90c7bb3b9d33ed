package sim

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunValidates(t *testing.T) {
	tr := &Trace{Name: "t", Keys: hashed(1, 2, 3, 1), Distinct: 3}
	tests := []struct {
		name string
		opts Options
		err  error
	}{
		{"no capacity", Options{}, ErrCapacity},
		{"zero capacity", Options{Capacities: []int{0}}, ErrCapacity},
		{"negative fraction", Options{Fractions: []float64{-0.1}}, ErrCapacity},
		{"zero fraction", Options{Fractions: []float64{0}}, ErrCapacity},
		{"unknown policy", Options{Capacities: []int{2}, Policies: []string{"lfu"}}, ErrUnknownPolicy},
	}
	for _, tc := range tests {
		if _, err := Run(tr, tc.opts); !errors.Is(err, tc.err) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.err)
		}
	}
}

func TestRunResults(t *testing.T) {
	// 0 1 2 0 1 2 ...: LRU with capacity 1 or 2 never hits, with 3 it hits
	// every access after the first round; the optimum keeps 1 (or 2) keys
	// for good and bypasses the rest: 9 (or 18) hits.
	var keys []uint64
	for i := 0; i < 30; i++ {
		keys = append(keys, HashKey(uint64(i%3)))
	}
	tr := &Trace{Name: "cycle", Keys: keys, Distinct: 3}
	rs, err := Run(tr, Options{Policies: []string{"lru", NameBelady}, Capacities: []int{2, 3}, Fractions: []float64{0.01}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"lru@1": 0, "belady@1": 9, "lru@2": 0, "belady@2": 18, "lru@3": 27, "belady@3": 27}
	if len(rs) != len(want) {
		t.Fatalf("got %d results, want %d", len(rs), len(want))
	}
	for _, r := range rs {
		key := r.Policy + "@" + string(rune('0'+r.Capacity))
		if r.Hits != want[key] || r.Accesses != 30 {
			t.Errorf("%s: %d hits of %d, want %d of 30", key, r.Hits, r.Accesses, want[key])
		}
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, "locus", rs); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "belady") || !strings.Contains(out, "90.00%") {
		t.Errorf("table:\n%s", out)
	}
}

func TestPolicyNames(t *testing.T) {
	names := PolicyNames()
	for _, want := range []string{"locus", "lru", "arc", "wtinylfu", "belady"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("PolicyNames() = %v, missing %q", names, want)
		}
	}
	for _, n := range names {
		if n == NameBelady {
			continue
		}
		c, err := NewCache(n, 1, 1)
		if err != nil {
			t.Fatalf("NewCache(%q, 1): %v", n, err)
		}
		// Capacity 1: the second access to the same key hits in every cache.
		c.Access(5)
		if !c.Access(5) {
			t.Errorf("%s with capacity 1 missed a repeated key", n)
		}
	}
}

func TestRunReportsProgress(t *testing.T) {
	tr := &Trace{Name: "p", Keys: hashed(1, 2, 3, 1, 2, 3), Distinct: 3}
	var buf bytes.Buffer
	_, err := Run(tr, Options{Policies: []string{"lru", NameBelady}, Capacities: []int{1, 2}, Progress: &buf, ProgressEvery: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "cache-sim: p: ") || !strings.Contains(buf.String(), "replays done") {
		t.Errorf("progress output %q", buf.String())
	}
}

// TestRunParallelSameResults: replays on several goroutines give the same
// results, in the same order, as one at a time (the deterministic
// policies; otter seeds itself at random).
func TestRunParallelSameResults(t *testing.T) {
	tr := SynthPhases(300, 4000, 3, 9)
	opts := Options{Policies: []string{"locus", "lru", NameARC, NameBelady}, Fractions: []float64{0.05, 0.25}, Capacities: []int{7}, Seed: 3}
	one, err := Run(tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{2, 3, 16} {
		opts.Parallel = p
		got, err := Run(tr, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(one) {
			t.Fatalf("parallel %d: %d results, want %d", p, len(got), len(one))
		}
		for i := range one {
			if got[i] != one[i] {
				t.Errorf("parallel %d, result %d: got %+v, want %+v", p, i, got[i], one[i])
			}
		}
	}
	opts.Policies = []string{"lru", "lfu"}
	if _, err := Run(tr, opts); !errors.Is(err, ErrUnknownPolicy) {
		t.Errorf("unknown policy with parallel replays: got %v, want ErrUnknownPolicy", err)
	}
	// A cache that fails to build at one capacity, inside a worker: Run
	// returns that error, and the replays not yet started are skipped.
	errBuild := errors.New("no cache at this size")
	var built atomic.Int32
	opts.Policies = []string{"flaky"}
	opts.Capacities, opts.Fractions = []int{1, 2, 3, 4, 5, 6, 7, 8}, nil
	opts.Parallel = 2
	opts.Extra = map[string]func(int, uint64) (Cache, error){
		"flaky": func(capacity int, seed uint64) (Cache, error) {
			if built.Add(1); capacity == 3 { // not 1: Run builds every name at 1 to validate it

				return nil, errBuild
			}
			return NewCache("lru", capacity, seed)
		},
	}
	if _, err := Run(tr, opts); !errors.Is(err, errBuild) {
		t.Errorf("a cache that fails to build: got %v, want its error", err)
	}
	if n := built.Load(); n > 6 { // 1 to validate, capacities 1 to 3, at most 2 more in flight; 9 without the skip
		t.Errorf("%d caches built after the first replay failed, want the rest skipped", n)
	}
}

// A capacity far above the trace's distinct keys is replayed with caches no
// larger than those keys (they never evict either way): the result reports
// the capacity asked for, with the same hits, and nothing of that size is
// allocated.
func TestRunHugeCapacityOnASmallTrace(t *testing.T) {
	tr, err := Read(strings.NewReader("1\n2\n1\n3\n2\n1\n"), FormatKeys, "small")
	if err != nil {
		t.Fatal(err)
	}
	const huge = 1 << 24 // about 400 MB of nodes per cache if allocated
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := Run(tr, Options{Capacities: []int{huge, 3}, Policies: PolicyNames()})
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("replays at capacity %d allocated %d MB", huge, grew>>20)
	}
	for _, r := range res {
		if r.Hits != 3 {
			t.Errorf("%s at %d: %d hits, want 3 (every reuse)", r.Policy, r.Capacity, r.Hits)
		}
	}
	if res[0].Capacity != huge {
		t.Errorf("reported capacity %d, want %d", res[0].Capacity, huge)
	}
}

// TestSizesHugeFraction: a huge (finite, positive) fraction gives a huge
// capacity, not 1. Was: int(math.Round(f*distinct)) of a value beyond
// MaxInt64 is MinInt64 on amd64, which max(c, 1) made capacity 1.
func TestSizesHugeFraction(t *testing.T) {
	tr := &Trace{Name: "t", Keys: []uint64{1, 2, 1}, Distinct: 2}
	sizes, err := Options{Fractions: []float64{1e300, 0.5}}.Sizes(tr)
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 2 || sizes[0].Capacity < tr.Distinct || sizes[1].Capacity != 1 {
		t.Errorf("fractions 1e300 and 0.5 of %d distinct keys gave %+v, want a capacity of at least %d, then 1", tr.Distinct, sizes, tr.Distinct)
	}
}
