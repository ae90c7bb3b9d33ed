//go:build race

package cache_test

// raceEnabled: the race detector slows memory-heavy loops tenfold, so
// timing assertions are off and the big tests shrink.
const raceEnabled = true
