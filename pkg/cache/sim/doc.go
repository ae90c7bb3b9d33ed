// Package sim replays cache traces through the page cache's policies and
// baselines and reports hit ratios: the engine behind `locusctl cache-sim`
// and the acceptance test of the default policy.
//
// A Trace is read from one of three text formats (Format: keys, lirs, arc),
// plain or gzip (detected by the magic bytes). Every trace key is hashed with
// HashKey (xxhash64 of its decimal form), as the page cache hashes page keys,
// so policies see well-mixed 64-bit keys.
//
// Run replays a trace through each named Cache at each capacity, each
// replay on one goroutine, Options.Parallel of them at once (the results do
// not depend on it; every cache is built and used by one goroutine):
//
//   - policy.ByName names (locus, the default; lru) run the real policy code
//     through PolicyCache, with the page cache's Touch/Insert protocol;
//   - "arc" is github.com/hashicorp/golang-lru/arc/v2 (v2.0.7);
//   - "wtinylfu" is github.com/maypok86/otter/v2 (v2.4.0) with a fixed
//     MaximumSize and a synchronous Executor; its hashes are seeded at random
//     inside the library, so its hit ratios vary by a few hundredths of a
//     point (up to a point or two on the smallest caches) between runs;
//   - "belady" is the offline optimum (Oracle): evict the key needed
//     farthest in the future, and bypass a key needed later than every
//     resident one. It bounds every policy from above.
//
// The acceptance test (acceptance_test.go) replays the 14 traces in
// testdata/traces (copied from the shared traces, with their README and
// licence) and holds the default policy to the criterion;
// testdata/results.md is its table.
//
// SyntheticTraces (synth.go) generates a held-out set with fixed seeds: Zipf
// at skews 0.6, 0.9 and 1.2, Zipf with periodic large one-time scans (a
// query engine reading columnar files), a loop a little larger than the
// mid-size caches, phase-changing working sets, alternating recency and
// frequency phases, and a one-hit-wonder heavy web-like stream. The policy
// was not tuned on them; TestSyntheticBar holds it within 1 point of the
// best baseline there, and testdata/synthetic.md is its table.
package sim
