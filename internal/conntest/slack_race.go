//go:build race

package conntest

// Slack multiplies the memory bounds of the connection tests: the race
// detector's instrumentation makes goroutines' stacks and the runtime's
// own allocations larger and slower to return; every other assertion of
// those tests holds as without it.
const Slack = 3
