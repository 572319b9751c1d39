package main

// Randomized lifecycle runs (docs/operations.md, "Randomized lifecycle
// runs"): seeded sequences of operations over up to 20 nodes against the
// lab in its own process and serve in its own (killed with SIGKILL now
// and then), every invariant counted from the lab after every step. A
// failure prints the seed, the operations up to the failing step and the
// line that replays them: SLIPWAY_LIFECYCLE_SEED=N (and
// SLIPWAY_LIFECYCLE_OPS=i,j,... for a shortened sequence).

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/labrun"
)

// lrSeeds are make test's sequences: together their ops cover every
// kind (deploy, redeploy, destroy, decommission, cancel, kill -9, an
// overlapping task, retry, resume, rerun, restart-clean, rescue entry,
// test, manual intervention and its release, adopt, release in MAAS and
// adopt, power cycle) but a valid rescue exit, and invalid ops; seed 4
// runs with deployRetries 0. No BMC of theirs is dead (each task on such
// a node waits out real IPMI timeouts).
var lrSeeds = []uint64{4, 11, 17}

// TestLifecycleRandom runs a few short sequences (make test), in
// parallel: each has its lab, serve and environment to itself; with
// SLIPWAY_LIFECYCLE_SEED it replays that seed instead.
func TestLifecycleRandom(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the lab and serve as processes: skipped with -short")
	}
	t.Parallel()
	seeds := lrSeeds
	if s, ok := envSeed(t); ok {
		seeds = []uint64{s}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			runLifecycleSeed(t, seed, lrSpec{nodes: 8 + int(seed%3)*2, ops: 10, scale: 0.003, quiet: 90 * time.Second})
		})
	}
}

// TestLifecycleRandomChaos runs SLIPWAY_LIFECYCLE_RUNS sequences of 15
// operations over 12 to 20 nodes (make chaos), seeds from
// SLIPWAY_LIFECYCLE_SEED (else random) on; SLIPWAY_LIFECYCLE_SHARD=i/n
// runs every n-th of them (make chaos runs shards in parallel).
func TestLifecycleRandomChaos(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("SLIPWAY_LIFECYCLE_RUNS"))
	if runs <= 0 {
		t.Skip("set SLIPWAY_LIFECYCLE_RUNS=N (make chaos runs 200)")
	}
	base, ok := envSeed(t)
	if !ok {
		base = randomSeed()
	}
	shard, of := lrShard(t)
	t.Logf("%d sequences from seed %d, shard %d/%d", runs, base, shard, of)
	for k := shard; k < runs; k += of {
		seed := base + uint64(k)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runLifecycleSeed(t, seed, lrSpec{nodes: 12 + int(seed%9), ops: 15, scale: 0.003, quiet: 120 * time.Second, anyRequest: true})
		})
	}
}

func envSeed(t *testing.T) (uint64, bool) {
	s := os.Getenv("SLIPWAY_LIFECYCLE_SEED")
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 63)
	if err != nil {
		t.Fatalf("SLIPWAY_LIFECYCLE_SEED=%q: %v", s, err)
	}
	return v, true
}

func randomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) >> 24 // room for base+k
}

// lrShard is SLIPWAY_LIFECYCLE_SHARD=i/n (default 0/1).
func lrShard(t *testing.T) (int, int) {
	s := os.Getenv("SLIPWAY_LIFECYCLE_SHARD")
	if s == "" {
		return 0, 1
	}
	var i, n int
	if _, err := fmt.Sscanf(s, "%d/%d", &i, &n); err != nil || n < 1 || i < 0 || i >= n {
		t.Fatalf("SLIPWAY_LIFECYCLE_SHARD=%q: want i/n with 0 <= i < n", s)
	}
	return i, n
}

// runLifecycleSeed runs the seed's sequence (SLIPWAY_LIFECYCLE_OPS keeps
// some of its ops) in t, the seed's subtest, and reports a failure with
// its replay line, shortened by shrink when SLIPWAY_LIFECYCLE_SHRINK is
// set.
func runLifecycleSeed(t *testing.T, seed uint64, spec lrSpec) {
	all := generateOps(seed, lrNames(t, spec.nodes), spec.ops)
	idx := lrKept(t, len(all))
	step, viol := replay(t, seed, spec, all, idx)
	if step < 0 {
		return
	}
	idx = idx[:step+1] // the minimal prefix
	if os.Getenv("SLIPWAY_LIFECYCLE_SHRINK") != "" {
		idx, viol = shrink(t, seed, spec, all, idx, viol)
	}
	t.Errorf("seed %d broke an invariant at op #%d:\n  %s\nreplay: %s\n(timing, the delays of cancel and kill-9 and MAAS's faults, can make a replay differ)\n%s",
		seed, idx[len(idx)-1], strings.Join(viol, "\n  "), replayLine(t, seed, idx), describeOps(pickOps(all, idx), idx))
}

// replayLine is the command that runs the seed's ops idx again, with
// the sizes of the test that drew them (t is the seed's subtest).
func replayLine(t *testing.T, seed uint64, idx []int) string {
	top, _, _ := strings.Cut(t.Name(), "/")
	runs := ""
	if top == "TestLifecycleRandomChaos" {
		runs = "SLIPWAY_LIFECYCLE_RUNS=1 "
	}
	return fmt.Sprintf("%sSLIPWAY_LIFECYCLE_SEED=%d SLIPWAY_LIFECYCLE_OPS=%s go test -count=1 -v -run '^%s$' ./cmd/orchestrator",
		runs, seed, joinInts(idx), top)
}

// lrNames are the node names of the generated site of n nodes (the
// site written once to a scratch directory: the ops are drawn before
// the run's lab starts).
func lrNames(t *testing.T, n int) []string {
	d, err := labrun.Generated(t.Context(), filepath.Join(t.TempDir(), "names"), n)
	if err != nil {
		t.Fatal(err)
	}
	return d.NodeNames()
}

// lrKept are the op indices SLIPWAY_LIFECYCLE_OPS keeps (all by default).
func lrKept(t *testing.T, n int) []int {
	var idx []int
	s := os.Getenv("SLIPWAY_LIFECYCLE_OPS")
	if s == "" {
		for i := range n {
			idx = append(idx, i)
		}
		return idx
	}
	for f := range strings.SplitSeq(s, ",") {
		i, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || i < 0 || i >= n {
			t.Fatalf("SLIPWAY_LIFECYCLE_OPS=%q: %q is not an op index below %d", s, f, n)
		}
		idx = append(idx, i)
	}
	return idx
}

func pickOps(all []lrOp, idx []int) []lrOp {
	out := make([]lrOp, len(idx))
	for i, k := range idx {
		out[i] = all[k]
	}
	return out
}

func joinInts(idx []int) string {
	s := make([]string, len(idx))
	for i, k := range idx {
		s[i] = strconv.Itoa(k)
	}
	return strings.Join(s, ",")
}

// replay runs the ops idx picks in a fresh lab and serve; it returns the
// position in idx of the failing step (-1: none) and what broke.
func replay(t *testing.T, seed uint64, spec lrSpec, all []lrOp, idx []int) (int, []string) {
	step, viol := -1, []string(nil)
	t.Run(fmt.Sprintf("ops=%d", len(idx)), func(t *testing.T) {
		begun := time.Now()
		r := startLRRun(t, seed, spec)
		t.Logf("seed %d: %d nodes, %d ops:\n%s", seed, spec.nodes, len(idx), describeOps(pickOps(all, idx), idx))
		step, viol = r.runSteps(pickOps(all, idx))
		c := r.counts
		t.Logf("seed %d: %d ops run, %d mutating calls (%d refused), %d kill -9 of serve, %d invariant checks over %d lab events (%d releases, %d deploy starts), %s",
			seed, c.ops, len(r.calls), c.refused, c.kills, c.checks, c.events, c.releases, c.deploys, time.Since(begun).Round(time.Second))
		if step >= 0 {
			t.Logf("serve's log, its end:\n%s", r.srv.logTail())
		}
	})
	return step, viol
}

// shrink drops ops one at a time, latest first, keeping a drop when the
// shorter sequence still breaks an invariant (at most 10 replays); it
// returns the ops kept and what the last failing replay broke.
func shrink(t *testing.T, seed uint64, spec lrSpec, all []lrOp, idx []int, viol []string) ([]int, []string) {
	tries := 0
	for i := len(idx) - 2; i >= 0 && tries < 10; i-- {
		cand := append(append([]int(nil), idx[:i]...), idx[i+1:]...)
		tries++
		if step, v := replay(t, seed, spec, all, cand); step >= 0 {
			idx, viol = cand[:step+1], v
			i = min(i, len(idx)-1)
		}
	}
	return idx, viol
}
