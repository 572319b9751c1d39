package maas

import "testing"

// TestMachineStateOwned: the lab's audit counts a machine as someone's as
// MAAS does: by its owner (kept in rescue mode and testing), or by an
// allocation state. Before, a deployed machine in rescue mode that no
// node claimed was not counted as a leak.
func TestMachineStateOwned(t *testing.T) {
	for _, c := range []struct {
		ms   MachineState
		want bool
	}{
		{MachineState{Status: StatusName(StatusRescueMode), Owner: "slipway"}, true},
		{MachineState{Status: StatusName(StatusTesting), Owner: "slipway"}, true},
		{MachineState{Status: StatusName(StatusDeployed)}, true},
		{MachineState{Status: StatusName(StatusAllocated)}, true},
		{MachineState{Status: StatusName(StatusReady)}, false},
		{MachineState{Status: StatusName(StatusTesting)}, false},
		{MachineState{Status: StatusName(StatusNew)}, false},
	} {
		if got := c.ms.Owned(); got != c.want {
			t.Errorf("%+v: owned %v, want %v", c.ms, got, c.want)
		}
	}
}
