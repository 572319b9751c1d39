package orchestrator_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// deadOOB is an OOB driver whose BMCs never answer, as a Redfish service
// that is down while the BMC's IPMI still answers.
type deadOOB struct{ calls atomic.Int64 }

func (d *deadOOB) fail(b drivers.BMC) error {
	d.calls.Add(1)
	return drivers.Errorf(drivers.Transient, "BMC %s:%d: connection refused", b.Address, b.Port)
}

func (d *deadOOB) Probe(_ context.Context, b drivers.BMC) (drivers.BMCInfo, error) {
	d.calls.Add(1)
	return drivers.BMCInfo{}, nil // not reachable
}
func (d *deadOOB) PowerStatus(_ context.Context, b drivers.BMC) (drivers.PowerState, error) {
	return "", d.fail(b)
}
func (d *deadOOB) PowerOn(_ context.Context, b drivers.BMC) (drivers.Result, error) {
	return drivers.Result{}, d.fail(b)
}
func (d *deadOOB) PowerOff(_ context.Context, b drivers.BMC) (drivers.Result, error) {
	return drivers.Result{}, d.fail(b)
}
func (d *deadOOB) PowerCycle(_ context.Context, b drivers.BMC) (drivers.Result, error) {
	return drivers.Result{}, d.fail(b)
}
func (d *deadOOB) SetBootDevice(_ context.Context, b drivers.BMC, _ drivers.BootDevice) (drivers.Result, error) {
	return drivers.Result{}, d.fail(b)
}

// TestOOBFallback: a node whose hardware profile is managed over redfish
// with ipmi as its fallback deploys when the redfish service does not
// answer: the engine probes both, uses the BMC's IPMI, and says so in an
// event. Without the fallback the same node fails.
func TestOOBFallback(t *testing.T) {
	t.Parallel()
	for _, withFallback := range []bool{true, false} {
		d := designtest.Example(t)
		node := d.NodeNames()[0]
		hw := *d.Nodes[node].Spec.Hardware
		hw.OOB.Type, hw.OOB.Port = "redfish", 443
		if withFallback {
			hw.OOB.Fallback = &design.OOBFallback{Type: "ipmi"}
		}
		d.Nodes[node].Spec.Hardware = &hw
		dead := &deadOOB{}
		env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) {
			c.Drivers.OOBByType = map[string]drivers.OOB{"redfish": dead}
			c.Retry.Attempts = 2
		})
		e := engine(t, env)
		run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
		want := record.TaskFailed
		if withFallback {
			want = record.TaskSucceeded
		}
		task, _ := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test",
			Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{node}}}}}, want)
		evs, err := e.Events(t.Context(), 0, 0, task.ID, node)
		if err != nil {
			t.Fatal(err)
		}
		fellBack := false
		for _, ev := range evs {
			if ev.Kind == "oob-fallback" && strings.Contains(ev.Message, "over redfish") && strings.Contains(ev.Message, "fallback, ipmi on port") {
				fellBack = true
			}
		}
		if fellBack != withFallback || dead.calls.Load() == 0 {
			t.Errorf("fallback %v: a fallback event %v, %d calls to the dead redfish driver", withFallback, fellBack, dead.calls.Load())
		}
	}
}
