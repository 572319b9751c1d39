package orchestrator_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// biosOOB is the lab's OOB driver with BIOS settings: it records what it
// was asked to stage.
type biosOOB struct {
	drivers.OOB
	mu     sync.Mutex
	staged map[string]map[string]string // by node
}

func (b *biosOOB) BIOSAttributes(_ context.Context, bmc drivers.BMC) (map[string]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.staged[bmc.Node]), nil
}

func (b *biosOOB) ApplyBIOS(_ context.Context, bmc drivers.BMC, want map[string]string) (drivers.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, bad := want["Refused"]; bad {
		return drivers.Failed("attribute Refused is read-only"), nil
	}
	b.staged[bmc.Node] = maps.Clone(want)
	return drivers.InProgress(0, "staged %d settings", len(want)), nil
}

// TestBIOSSettings: a hardware profile's bios.attributes are staged
// through the OOB driver while the node is prepared, and the step says
// so; a driver that cannot apply them (IPMI), or a BMC that refuses one,
// fails the node naming the profile.
func TestBIOSSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		attrs    map[string]string
		withBIOS bool
		want     record.TaskStatus
		reason   string
	}{
		{"staged", map[string]string{"ProcVirtualization": "Enabled", "SriovGlobalEnable": "true"}, true, record.TaskSucceeded, ""},
		{"driver without BIOS", map[string]string{"ProcVirtualization": "Enabled"}, false, record.TaskFailed, "cannot apply BIOS settings"},
		{"refused", map[string]string{"Refused": "x"}, true, record.TaskFailed, "attribute Refused is read-only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := designtest.Example(t)
			node := d.NodeNames()[0]
			hw := *d.Nodes[node].Spec.Hardware
			hw.BIOS = &design.BIOSSettings{Attributes: tc.attrs}
			d.Nodes[node].Spec.Hardware = &hw
			var drv *biosOOB
			env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) {
				if tc.withBIOS {
					drv = &biosOOB{OOB: c.Drivers.OOB, staged: map[string]map[string]string{}}
					c.Drivers.OOB = drv
				}
			})
			e := engine(t, env)
			run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
			task, res := run(t, e, record.Request{Action: record.ActionPrepareNodes, Requester: "test",
				Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{node}}}}}, tc.want)
			if tc.reason != "" {
				if len(res) != 1 || !strings.Contains(res[0].Reason, tc.reason) || !strings.Contains(res[0].Reason, d.Nodes[node].Spec.HardwareProfile) {
					t.Fatalf("results %+v: want a reason naming %q and the profile", res, tc.reason)
				}
				return
			}
			if got := drv.staged[node]; !maps.Equal(got, tc.attrs) {
				t.Errorf("staged %v on the node's BMC, want %v", got, tc.attrs)
			}
			evs, err := e.Events(t.Context(), 0, 0, task.ID, node)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(evs, func(ev record.Event) bool { return strings.Contains(ev.Message, "bios: staged 2 settings") }) {
				t.Errorf("no event says the BIOS settings were staged")
			}
		})
	}
}
