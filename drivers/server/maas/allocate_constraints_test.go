package maas

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/sim/lab"
)

// TestIdentifyChoosesByConstraints: a node without a boot MAC whose
// machine is not found chooses one with MAAS's allocate and dry_run (its
// constraints: zone, pool, tags, cpu_count, mem) and claims it while it
// is Ready: the node's hostname and the claim tag. The machine stays
// Ready (commissioning, storage and networking need it so; Deploy
// allocates it); identify again finds it by hostname; no match waits,
// naming the constraints; release takes the claim tag away.
func TestIdentifyChoosesByConstraints(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
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
		t.Fatalf("chose machine %q (%s), want %q, the only one matching", got.MachineID, r.Message, want)
	}
	if !strings.Contains(r.Message, "constraints") {
		t.Errorf("message %q does not say how the machine was found", r.Message)
	}
	mm, err := d.fetchMachine(testCtx(t), want)
	if err != nil {
		t.Fatal(err)
	}
	if mm.StatusName != "Ready" || mm.Hostname != "gpu-a" || !slices.Contains(mm.TagNames, d.claimTag()) || got.Owned {
		t.Errorf("machine %s: %s, hostname %q, tags %v, owned %v; want Ready (not allocated), gpu-a, claimed, not owned",
			want, mm.StatusName, mm.Hostname, mm.TagNames, got.Owned)
	}
	if slices.Contains(got.Tags, d.claimTag()) {
		t.Errorf("the claim tag is among the machine's user tags %v", got.Tags)
	}
	again := identify(t, d, n)
	if again.MachineID != want {
		t.Errorf("identify again: machine %q, want %q", again.MachineID, want)
	}
	if c := count(l, "POST /machines/?op=allocate") - before; c != 1 {
		t.Errorf("%d allocate requests (dry runs), want 1 (identify again finds the machine by hostname)", c)
	}

	none := drivers.Node{NodeRef: drivers.NodeRef{Name: "gpu-b"}, Hostname: "gpu-b",
		Constraints: &drivers.Constraints{Zone: "z2", Tags: []string{"gpu"}, MinCPU: 64}}
	m, res, err := d.IdentifyNode(testCtx(t), none)
	if err != nil || res.Status != drivers.StatusInProgress || m.MachineID != "" || !strings.Contains(res.Message, "cpu_count=64") {
		t.Errorf("no machine left (the only match is claimed): %+v %+v %v, want InProgress naming the constraints", m, res, err)
	}

	// Released (destroyed before deploy): the claim goes, gpu-b gets it.
	mustDone(t, "Release gpu-a", func(ctx context.Context) (drivers.Result, error) {
		return d.Release(ctx, drivers.NodeRef{Name: "gpu-a", MachineID: want}, drivers.EraseNone)
	})
	if b := identify(t, d, none); b.MachineID != want {
		t.Errorf("after release: gpu-b got %q, want %q", b.MachineID, want)
	}
}

// TestIdentifyChoosesDifferentMachines: unpinned nodes identified at the
// same time by one driver never claim the same machine.
func TestIdentifyChoosesDifferentMachines(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	l := startLab(t, lab.Config{Machines: 4})
	d := newTestDriver(t, l, nil)
	for _, m := range l.Machines() {
		m.Hardware.Tags = []string{"pick"}
		n := enlistAndIdentify(t, d, m)
		mustDone(t, "Commission "+m.Name, func(ctx context.Context) (drivers.Result, error) { return d.Commission(ctx, n.NodeRef) })
	}
	const k = 4
	ids := make([]string, k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "pick-" + itoa(i)
			m, r, err := d.IdentifyNode(testCtx(t), drivers.Node{NodeRef: drivers.NodeRef{Name: name}, Hostname: name,
				Constraints: &drivers.Constraints{Tags: []string{"pick"}}})
			if err == nil && r.Status != drivers.StatusDone {
				err = fmt.Errorf("%s: %s", r.Status, r.Message)
			}
			ids[i], errs[i] = m.MachineID, err
		}()
	}
	wg.Wait()
	seen := map[string]int{}
	for i, id := range ids {
		if errs[i] != nil || id == "" {
			t.Fatalf("node %d: machine %q, %v", i, id, errs[i])
		}
		if j, dup := seen[id]; dup {
			t.Errorf("nodes %d and %d both claimed machine %s", j, i, id)
		}
		seen[id] = i
		if s := stateOf(t, d, id); s != "Ready" {
			t.Errorf("machine %s is %s, want Ready", id, s)
		}
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
