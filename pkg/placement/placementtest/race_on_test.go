//go:build race

package placementtest

// raceEnabled lightens the heaviest tests under the race detector (this
// package is single-threaded: the detector has little to find, and it
// slows the simulator tenfold).
const raceEnabled = true
