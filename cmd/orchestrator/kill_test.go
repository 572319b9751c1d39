package main

import (
	"testing"
	"time"
)

// TestKill9Resume is the short real-kill test (make test): the built
// binary deploys 40 generated nodes into the lab process under the fault
// mix of faultMix, is killed with SIGKILL three times at random instants
// while MAAS calls are in flight, and `orchestrator wait` resumes the task
// each time. From the lab's state: every node Deployed or failed with a
// reason, no machine leaked, no duplicate deploy (chaos_test.go). The
// seed is logged; SLIPWAY_CHAOS_SEED replays it.
func TestKill9Resume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and deploys 40 nodes: skipped with -short")
	}
	t.Parallel()
	start := time.Now()
	res := runChaos(t, chaosSpec{nodes: 40, kills: 3, scale: 0.01, earliest: 300 * time.Millisecond, spread: 2500 * time.Millisecond, budget: 3 * time.Minute})
	t.Logf("seed %d, %d nodes: %d deployed, %d failed (%d scripted to fail), %d leaked, %d duplicate deploys; %s; wall %s",
		res.seed, res.nodes, res.deployed, res.failed, res.scripted, res.leaks, res.dupDeploys, res.faulted, time.Since(start).Round(time.Second))
}
