//go:build !race

package tether_test

// raceEnabled: the race detector is on (race_on_test.go).
const raceEnabled = false
