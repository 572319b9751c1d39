//go:build !race

package introspection

// raceOn: see race_on_test.go.
const raceOn = false
