//go:build !race

package introspection

// memSlack multiplies the memory bounds of the connection tests (3 under
// the race detector, memslack_race_test.go).
const memSlack = 1
