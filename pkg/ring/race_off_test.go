//go:build !race

package ring

// raceDetector is true under -race; see race_on_test.go.
const raceDetector = false
