package orchestrator_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// TestSweepDrift: after a clean deploy the sweep finds nothing; a machine
// released behind the engine's back is reported as drift (and as an
// event), not as a leak; adopting the node takes the provisioner's state
// and the drift is gone.
func TestSweepDrift(t *testing.T) {
	t.Parallel()
	const node = "r02-cmp01"
	d := designtest.Example(t)
	env, e := prepared(t, d, nil)
	deployAll(t, e)
	rep, err := e.Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Owned != len(d.Nodes) || len(rep.Leaks) != 0 || len(rep.Drift) != 0 {
		t.Fatalf("sweep after a clean deploy: %d owned, leaks %v, drift %v", rep.Owned, rep.Leaks, rep.Drift)
	}

	id := nodeRecord(t, e, node).MachineID
	res, err := env.Drivers.Server.Release(t.Context(), drivers.NodeRef{Name: node, MachineID: id}, drivers.EraseNone)
	if err != nil || res.Status == drivers.StatusFailed {
		t.Fatalf("release %s behind the engine's back: %+v, %v", id, res, err)
	}
	rep, err = e.Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Drift) != 1 {
		t.Fatalf("drift %v, want exactly %s", rep.Drift, node)
	}
	got := rep.Drift[0]
	if !slices.Contains([]string{"Releasing", "Ready"}, got.Observed) {
		t.Errorf("drift observed %q, want Releasing or Ready", got.Observed)
	}
	got.Observed = ""
	if diff := cmp.Diff(record.Drift{Node: node, MachineID: id, Stage: record.StageDeployed}, got); diff != "" {
		t.Errorf("drift (-want +got):\n%s", diff)
	}
	if len(rep.Leaks) != 0 {
		t.Errorf("a released machine reported as a leak: %v", rep.Leaks)
	}
	evs, err := e.Events(t.Context(), 0, 0, "", node)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(ev record.Event) bool { return ev.Kind == "drift" && ev.Level == "warn" }) {
		t.Errorf("no drift event for %s", node)
	}
	// The sweep only reports: the record still says deployed.
	if rec := nodeRecord(t, e, node); rec.Stage != record.StageDeployed || rec.MachineID != id {
		t.Errorf("the sweep changed the record: %s, machine %q", rec.Stage, rec.MachineID)
	}

	// Once the release has finished, adopt takes the machine as it is.
	eventually(t, 30*time.Second, "the machine to be Ready", func() bool {
		ms, err := env.Drivers.Server.Status(t.Context(), []drivers.NodeRef{{Name: node, MachineID: id}})
		return err == nil && len(ms) == 1 && ms[0].State == "Ready"
	})
	rec, err := e.Adopt(t.Context(), node, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Stage != record.StageReady || rec.MachineID != id || rec.Observed != "Ready" {
		t.Errorf("adopted as %s, machine %q (%q), want ready, %s", rec.Stage, rec.MachineID, rec.Observed, id)
	}
	rep, err = e.Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Drift) != 0 || len(rep.Leaks) != 0 || rep.Owned != len(d.Nodes)-1 {
		t.Errorf("sweep after adopt: %d owned, leaks %v, drift %v", rep.Owned, rep.Leaks, rep.Drift)
	}
}

// TestSweepReleasesLeaks: with the release-leaks policy, a sweep by an
// engine that has no record of machines it owns releases each of them
// once; without it, it only reports them.
func TestSweepReleasesLeaks(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	env, e := prepared(t, d, nil)
	two := record.Filter{Sets: []design.NodeFilter{{Names: []string{"r01-cmp01", "r02-gpu02"}}}}
	run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: two, Requester: "test"}, record.TaskSucceeded)
	ids := machines(t, e)
	e.Close()

	fresh := func(release bool) *orchestrator.Engine { // not started: the sweep is called directly
		return emptyStoreEngine(t, env, func(c *orchestrator.Config) { c.ReleaseLeaks = release })
	}
	rep, err := fresh(false).Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Leaks) != 2 || len(rep.Released) != 0 {
		t.Fatalf("report-only sweep: leaks %v, released %v", rep.Leaks, rep.Released)
	}
	if lc := lifecycle(env); lc["r01-cmp01"].Releases+lc["r02-gpu02"].Releases != 0 {
		t.Fatalf("a report-only sweep released machines: %+v", lc)
	}

	rep, err = fresh(true).Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ids["r01-cmp01"], ids["r02-gpu02"]}
	slices.Sort(want)
	slices.Sort(rep.Released)
	if diff := cmp.Diff(want, rep.Released); diff != "" {
		t.Errorf("released leaks (-want +got):\n%s", diff)
	}
	lc := lifecycle(env)
	for _, n := range []string{"r01-cmp01", "r02-gpu02"} {
		if lc[n].Releases != 1 {
			t.Errorf("%s: released %d times, want once", n, lc[n].Releases)
		}
	}
	eventually(t, 30*time.Second, "the leaked machines to be released", func() bool {
		owned, err := env.Drivers.Server.Owned(t.Context())
		return err == nil && len(owned) == 0
	})
}

// emptyStoreEngine is a new engine (not started) on the lab of env with an
// empty memory store holding only the design revision: it has no record
// of the machines env's engine deployed (a lost or restored database).
// edit, when not nil, changes its configuration.
func emptyStoreEngine(t *testing.T, env *labrun.Env, edit func(*orchestrator.Config)) *orchestrator.Engine {
	t.Helper()
	store := memory.New()
	rev, err := env.Store.Revision(t.Context(), env.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.PutRevision(t.Context(), rev); err != nil {
		t.Fatal(err)
	}
	cfg := env.Config()
	cfg.Store = store
	if edit != nil {
		edit(&cfg)
	}
	e, err := orchestrator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
