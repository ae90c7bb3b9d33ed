//go:build race

package ring

// raceDetector is true under -race, where the heavy property tests run a
// lighter variant (fewer N, fewer keys): the race detector slows lookups
// tenfold and these tests have no concurrency to check.
const raceDetector = true
