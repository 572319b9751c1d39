package maas

import (
	"context"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/sim/lab"
)

// TestIdentifyAllocatesByConstraints: a node without a boot MAC whose
// machine is not found is given one by MAAS's allocate with its
// constraints (zone, pool, tags, cpu_count, mem), marked for the node;
// identify again finds the same machine; no match waits.
func TestIdentifyAllocatesByConstraints(t *testing.T) {
	l := startLab(t, lab.Config{Machines: 3})
	d := newTestDriver(t, l, nil)
	ms := l.Machines()
	for i, m := range ms {
		m.Hardware.Zone, m.Hardware.Pool, m.Hardware.CPUs, m.Hardware.MemoryMiB = "z1", "compute", 32, 65536
		if i == 1 { // the only one that matches
			m.Hardware.Zone, m.Hardware.Tags, m.Hardware.CPUs, m.Hardware.MemoryMiB = "z2", []string{"gpu"}, 128, 1048576
		}
		if i == 2 { // in z2 but too small
			m.Hardware.Zone, m.Hardware.Tags = "z2", []string{"gpu"}
		}
		n := enlistAndIdentify(t, d, m)
		mustDone(t, "Commission "+m.Name, func(ctx context.Context) (drivers.Result, error) { return d.Commission(ctx, n.NodeRef) })
	}
	want := identify(t, d, drivers.Node{NodeRef: drivers.NodeRef{Name: ms[1].Name}, Hostname: ms[1].Name}).MachineID

	before := count(l, "POST /machines/?op=allocate")
	n := drivers.Node{NodeRef: drivers.NodeRef{Name: "gpu-a"}, Hostname: "gpu-a",
		Constraints: &drivers.Constraints{Zone: "z2", Pool: "compute", Tags: []string{"gpu"}, MinCPU: 64, MinMemoryMiB: 512 * 1024}}
	var got drivers.Machine
	r := mustDone(t, "IdentifyNode gpu-a", func(ctx context.Context) (r drivers.Result, err error) {
		got, r, err = d.IdentifyNode(ctx, n)
		return r, err
	})
	if got.MachineID != want {
		t.Fatalf("allocated machine %q (%s), want %q, the only one matching", got.MachineID, r.Message, want)
	}
	if !strings.Contains(r.Message, "constraints") {
		t.Errorf("message %q does not say how the machine was found", r.Message)
	}
	if got.OwnerNode != "gpu-a" || stateOf(t, d, want) != "Allocated" {
		t.Errorf("machine %+v in %s: want Allocated, marked for gpu-a", got, stateOf(t, d, want))
	}
	again := identify(t, d, n)
	if again.MachineID != want {
		t.Errorf("identify again: machine %q, want %q", again.MachineID, want)
	}
	if c := count(l, "POST /machines/?op=allocate") - before; c != 1 {
		t.Errorf("%d allocations, want 1 (identify again finds the machine)", c)
	}

	none := drivers.Node{NodeRef: drivers.NodeRef{Name: "gpu-b"}, Hostname: "gpu-b",
		Constraints: &drivers.Constraints{Zone: "z2", Tags: []string{"gpu"}, MinCPU: 64}}
	m, res, err := d.IdentifyNode(testCtx(t), none)
	if err != nil || res.Status != drivers.StatusInProgress || m.MachineID != "" || !strings.Contains(res.Message, "cpu_count=64") {
		t.Errorf("no machine left: %+v %+v %v, want InProgress naming the constraints", m, res, err)
	}
}

func TestConstraintParams(t *testing.T) {
	p := constraintParams(&drivers.Constraints{Zone: "z", Pool: "p", Tags: []string{"a", "", "b"}, MinCPU: 8, MinMemoryMiB: 4096})
	if got := p.Encode(); got != "cpu_count=8&mem=4096&pool=p&tags=a&tags=b&zone=z" {
		t.Errorf("params %s", got)
	}
	if s := describeConstraints(&drivers.Constraints{}); s != "any machine" {
		t.Errorf("describe %q", s)
	}
}
