package orchestrator

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// The Site's lifecycle.timeouts name the engine's stages: every stage a
// workflow waits in can be given a timeout, and no other name is
// accepted (design.TimeoutStages is the design package's copy).
func TestTimeoutStagesAreTheWorkflowStages(t *testing.T) {
	var waits []record.Stage
	paths := [][]record.Stage{taskSequence(record.Task{Action: record.ActionDecommissionNodes, Options: &record.TaskOptions{Delete: true}})}
	for _, a := range record.Actions {
		paths = append(paths, sequence(a))
	}
	for _, p := range paths {
		for _, s := range p[:max(len(p)-1, 0)] { // the last stage is terminal: nothing waits there
			if !slices.Contains(waits, s) {
				waits = append(waits, s)
			}
		}
	}
	for _, s := range waits {
		if !slices.Contains(design.TimeoutStages, string(s)) {
			t.Errorf("stage %s of a workflow cannot be given a timeout in the Site (design.TimeoutStages)", s)
		}
	}
	for _, s := range designTimeoutStages() {
		if !slices.Contains(waits, s) {
			t.Errorf("the Site accepts a timeout for %q, which no workflow waits in", s)
		}
	}
}

// A decommission's path follows its options; the other lifecycle
// actions have one path each, ending at their goal.
func TestLifecyclePaths(t *testing.T) {
	for _, tc := range []struct {
		task record.Task
		want []record.Stage
	}{
		{record.Task{Action: record.ActionDecommissionNodes}, []record.Stage{record.StageReleasing, record.StageReleased}},
		{record.Task{Action: record.ActionDecommissionNodes, Options: &record.TaskOptions{Erase: "quick"}}, []record.Stage{record.StageReleasing, record.StageReleased}},
		{record.Task{Action: record.ActionDecommissionNodes, Options: &record.TaskOptions{Delete: true}}, []record.Stage{record.StageReleasing, record.StageDeleting, record.StageDeleted}},
		{record.Task{Action: record.ActionRescueEnter}, []record.Stage{record.StageRescue, record.StageRescueMode}},
		{record.Task{Action: record.ActionRescueExit}, []record.Stage{record.StageRescueExit, record.StageDeployed}},
		{record.Task{Action: record.ActionTestNodes}, []record.Stage{record.StageTesting, record.StageTested}},
		{record.Task{Action: record.ActionDestroyNodes, Options: &record.TaskOptions{Erase: "secure"}}, []record.Stage{record.StageReleasing, record.StageReleased}},
	} {
		if got := taskSequence(tc.task); !slices.Equal(got, tc.want) {
			t.Errorf("%s %+v: path %v, want %v", tc.task.Action, tc.task.Options, got, tc.want)
		}
	}
	for _, a := range []record.Action{record.ActionRescueEnter, record.ActionRescueExit, record.ActionTestNodes} {
		if restartReleases(a) {
			t.Errorf("restart-clean of %s releases the machine", a)
		}
	}
	if !restartReleases(record.ActionDecommissionNodes) {
		t.Errorf("restart-clean of %s does not start from its release", record.ActionDecommissionNodes)
	}
}

// The erase policy of a release: the task's option, then the node's (or
// its profile's, resolved into the node), then the Site's, then the
// engine's configured default; a redeploy's release keeps the disks.
func TestErasePolicyOrder(t *testing.T) {
	d := &design.Design{Site: &design.Site{}}
	n := &design.Node{}
	r := &nodeRun{e: &Engine{cfg: Config{Erase: drivers.EraseSecure}}, run: &taskRun{task: record.Task{}}, d: d, n: n,
		rec: record.NodeRecord{Action: record.ActionDecommissionNodes}}
	check := func(what string, want drivers.Erase) {
		t.Helper()
		if got := r.erasePolicy(t.Context()); got != want {
			t.Errorf("%s: erase %q, want %q", what, got, want)
		}
	}
	check("engine default", drivers.EraseSecure)
	d.Site.Spec.Lifecycle.Erase = design.EraseQuick
	check("the Site's", drivers.EraseQuick)
	r.e.cfg.SiteProfiles = fixedProfile{SiteProfile{Name: "gpu", Erase: "secure"}}
	check("the site profile's over the Site's", drivers.EraseSecure)
	n.Spec.Erase = design.EraseNone
	check("the node's", drivers.EraseNone)
	r.run.task.Options = &record.TaskOptions{Erase: "secure"}
	check("the task's option", drivers.EraseSecure)
	r.rec.Action = record.ActionRedeployNodes
	check("a redeploy's release", drivers.EraseNone)
}

// A GPU missing from a profile that names its GPUs' slots is named by the
// design's slot, without looking for another node of the profile.
func TestMissingGPUFromTheDesign(t *testing.T) {
	exp := &design.HardwareExpect{GPUs: &design.ExpectGPUs{Count: 2, Model: "H100", Addresses: []string{"0000:18:00.0", "0000:2A:00.0"}}}
	inv := drivers.Inventory{GPUs: []drivers.PCIDevice{{Address: "0000:18:00.0", Model: "GH100 [H100 SXM5 80GB]"}}}
	r := &nodeRun{} // no engine, design or store: the design's slots are enough
	peer := r.peerGPUs(t.Context(), exp, inv)
	got := AsBuiltMismatches(exp, nil, inv, peer)
	if len(got) != 1 || !strings.Contains(got[0], "expected 2 x GPU matching H100, found 1: missing 0000:2a:00.0") {
		t.Errorf("mismatches %q, want the slot 0000:2a:00.0 named", got)
	}
}

// fixedProfile answers p as every site's profile of every name.
type fixedProfile struct{ p SiteProfile }

func (f fixedProfile) SiteProfile(context.Context, string, string) (SiteProfile, bool, error) {
	return f.p, true, nil
}
