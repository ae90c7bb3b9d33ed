//go:build !race

package placementtest

const raceEnabled = false
