package orchestrator_test

import (
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
)

// TestTransitionCarriesProvisionerWait: a deploy of the example site,
// and each node's transition out of its commission and deploy stages
// says it waited on the provisioner at least as long as the lab's
// machine spent in that phase during the stage (the lab's own timeline:
// a true floor; the create that enlists a machine starts its
// commissioning in the identify stage),
// and no longer than the stage lasted by the events; the configure
// stage, which never waits on the machine, says nothing.
func TestTransitionCarriesProvisionerWait(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	env := startEnv(t, d, nil, nil, nil)
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	task, _ := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test"}, record.TaskSucceeded)
	evs, err := e.Events(t.Context(), 0, 0, task.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	entered := map[string]time.Time{} // node/stage -> when it entered
	checked := 0
	for _, ev := range evs {
		if ev.Kind != "transition" || ev.Node == "" {
			continue
		}
		from, _, _ := strings.Cut(ev.Message, " → ")
		entered[ev.Node+"/"+string(ev.Stage)] = ev.Time
		if !strings.Contains(ev.Message, " → ") {
			continue // the node's start
		}
		took := ev.Time.Sub(entered[ev.Node+"/"+from])
		wait := time.Duration(ev.ProvisionerWait) * time.Millisecond
		phase := map[string]string{"commission": maas.PhaseCommission, "deploy": maas.PhaseDeploy}[from]
		switch {
		case wait > took+time.Millisecond:
			t.Errorf("%s: %s waited %s on the provisioner but lasted %s", ev.Node, from, wait, took)
		case from == string(record.StageConfigure) && wait != 0:
			t.Errorf("%s: configure says it waited %s on the provisioner", ev.Node, wait)
		case phase != "":
			floor := phaseWithin(env.Lab.Machine(ev.Node).Timeline().Phases, phase, entered[ev.Node+"/"+from])
			if floor == 0 || wait < floor {
				t.Errorf("%s: %s waited %s on the provisioner; the lab's machine was in its %s phase %s of the stage's time", ev.Node, from, wait, phase, floor)
			}
			checked++
		}
	}
	if checked != 2*len(d.Nodes) {
		t.Errorf("%d commission and deploy stages checked, want %d", checked, 2*len(d.Nodes))
	}
}

// phaseWithin is how long the last phase named name lasted after
// since (a commissioning that began in the stage before counts from the
// stage's start), in whole milliseconds as the events give waits.
func phaseWithin(phases []maas.Phase, name string, since time.Time) time.Duration {
	var d time.Duration
	for _, p := range phases {
		if p.Name == name {
			d = p.End.Sub(latest(p.Start, since)).Truncate(time.Millisecond)
		}
	}
	return d
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
