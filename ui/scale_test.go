package ui_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
)

// TestSiteViewFollowsARollout: the site view of a generated 1,000-node
// design loads every tile, then follows the nodes deploying through three
// stages (3,000 events written to the state in ten waves a stage, as an
// engine would) and ends showing each node deployed, its deploy task done;
// the page's frame intervals while it does are reported. It is
// TestSiteViewAt10000Nodes at a tenth of the size: the same code path,
// in make test.
func TestSiteViewFollowsARollout(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a browser following 1,000 nodes: skipped with -short")
	}
	siteViewRollout(t, 1000)
}

// TestSiteViewAt10000Nodes is the dashboard's frame-time benchmark (make
// bench-ui sets SLIPWAY_UI_FRAME_BUDGET): TestSiteViewFollowsARollout at
// 10,000 nodes and 30,000 events, whose frame intervals' 95th percentile
// must stay under 50 ms on a machine doing nothing else. make test runs
// the 1,000-node test instead (this one took 2 to 3 minutes there, and
// a performance target is a benchmark's, not a timed unit test's).
func TestSiteViewAt10000Nodes(t *testing.T) {
	if os.Getenv("SLIPWAY_UI_FRAME_BUDGET") == "" {
		t.Skip("the 10,000-node frame benchmark: make bench-ui runs it; TestSiteViewFollowsARollout covers the view at 1,000 nodes")
	}
	siteViewRollout(t, 10000)
}

// siteViewRollout serves n generated nodes, signs in, moves them through
// commission, deploy and deployed in waves of n/10 every 100 ms and waits
// for every tile to show deployed; with SLIPWAY_UI_FRAME_BUDGET set, the
// 95th percentile frame interval must be under 50 ms.
func siteViewRollout(t *testing.T, n int) {
	srv := serveSeeded(t, n) // lifecycle_test.go

	b := newBrowser(t)
	begun := time.Now()
	b.signIn(t, srv.URL, srv.Token, n)
	t.Logf("%d tiles shown %s after sign-in began", n, time.Since(begun).Round(time.Millisecond))
	eval[any](t, b, `(() => { const f = window.slipwayFrames = []; let last = performance.now();
		const tick = (now) => { f.push(now - last); last = now; if (f.length < 100000) requestAnimationFrame(tick); }; requestAnimationFrame(tick); return 0; })()`)
	names := srv.Names
	moved := time.Now()
	wave := n / 10
	for _, stage := range []record.Stage{record.StageCommission, record.StageDeploy, record.StageDeployed} {
		for i := 0; i < n; i += wave {
			writeWave(t, srv.Store, names[i:min(i+wave, n)], stage)
			time.Sleep(100 * time.Millisecond)
		}
	}
	b.run(t, "every tile deployed", 2*time.Minute,
		poll(fmt.Sprintf(`document.querySelectorAll('#sites .tile.lc-deployed:not(.lt-running)').length === %d`, n), 2*time.Minute))
	t.Logf("%d events over %d nodes shown %s after the first was written", 3*n, n, time.Since(moved).Round(time.Millisecond))
	frames := eval[[]float64](t, b, `window.slipwayFrames.slice(1)`)
	if len(frames) < 20 {
		t.Fatalf("only %d frames measured", len(frames))
	}
	slices.Sort(frames)
	p50, p95, worst := frames[len(frames)/2], frames[len(frames)*95/100], frames[len(frames)-1]
	t.Logf("frame intervals while tiles changed: %d frames, median %.1f ms, 95th percentile %.1f ms, worst %.1f ms", len(frames), p50, p95, worst)
	if os.Getenv("SLIPWAY_UI_FRAME_BUDGET") != "" && p95 > 50 {
		t.Errorf("the 95th percentile frame interval is %.1f ms (want under 50 ms)", p95)
	}
}

// writeWave moves the nodes to stage as the engine would: each node's
// record and an event naming it, in one write.
func writeWave(t *testing.T, st statestore.Store, names []string, stage record.Stage) {
	t.Helper()
	ops := make([]statestore.Op, 0, 2*len(names))
	now := time.Now().UTC()
	for _, name := range names {
		outcome := record.OutcomeRunning
		if stage == record.StageDeployed {
			outcome = record.OutcomeSucceeded
		}
		lc, _ := record.LifecycleAt(record.ActionDeployNodes, stage, outcome)
		rec, _ := json.Marshal(record.NodeRecord{Name: name, Lifecycle: lc, Action: record.ActionDeployNodes, Stage: stage, Outcome: outcome, Updated: now})
		ev, _ := json.Marshal(record.Event{Time: now, Node: name, Stage: stage, Level: "info", Kind: "transition", Message: "moved to " + string(stage)})
		ops = append(ops, statestore.Put("nodes", name, rec), statestore.Append("events", ev))
	}
	if _, err := st.Write(t.Context(), ops...); err != nil {
		t.Fatal(err)
	}
}
