//go:build !race

package conntest

// Slack multiplies the memory bounds of the connection tests (3 under
// the race detector, slack_race.go).
const Slack = 1
