//go:build race

package tether_test

// raceEnabled: the race detector is on; its shadow memory needs more
// address space than a scenario's `ulimit -v` may leave.
const raceEnabled = true
