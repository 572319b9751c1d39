package orchestrator_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/statestore"
)

// machineTags reads a machine's tags from the lab's MAAS, behind the
// engine's back.
func machineTags(t *testing.T, env *labrun.Env, id string) []string {
	t.Helper()
	raw, err := env.MAASCall(t.Context(), "GET", "/machines/"+id+"/", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Tags []string `json:"tag_names"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m.Tags
}

// TestAsBuiltAgainstTheLab: the example's two 8-GPU nodes are built wrong
// in the lab (one lacks a GPU; the other has its data cables swapped, a
// slow link and old firmware):
// they fail at as-built, each naming what differs, while every other
// node deploys and machines with the Site's hardware facts get their
// tags. accept-hardware and retry deploy the GPU node as it is, the other
// still fails; accepting a node whose check passed is refused.
func TestAsBuiltAgainstTheLab(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	short, swapped := "r01-gpu01", "r02-gpu01"
	for _, n := range []string{short, swapped} {
		if h := d.Nodes[n].Spec.Hardware; h == nil || h.Expect == nil || h.Expect.GPUs == nil || h.Expect.GPUs.Count != 8 || !h.Expect.LLDP {
			t.Fatalf("the example's %s no longer expects 8 GPUs and LLDP", n)
		}
	}
	// A hardware tag every lab machine has (25G NICs), one only the full
	// GPU nodes have (the example's).
	d.Site.Spec.HardwareTags = append(d.Site.Spec.HardwareTags, design.HardwareTag{Name: "nic-25g", NICSpeedMinMbps: 25000})
	faults := &maas.Faults{Machines: map[string]maas.MachineFaults{
		short:   {MissingGPUs: 1},
		swapped: {SwapCables: []string{"data0", "data1"}, NICSpeedMbps: map[string]int{"data0": 10000}, Firmware: &maas.FirmwareFault{BIOS: "1.0"}},
	}}
	env, e := prepared(t, d, faults)
	task, res := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test"}, record.TaskPartiallySucceeded)
	byNode := map[string]record.NodeResult{}
	for _, r := range res {
		byNode[r.Node] = r
		switch r.Node {
		case short, swapped:
			if r.Outcome != record.OutcomeFailed || r.Stage != record.StageAsBuilt {
				t.Errorf("%s: %s at %s (%s), want failed at as-built", r.Node, r.Outcome, r.Stage, r.Reason)
			}
		default:
			if r.Outcome != record.OutcomeSucceeded || r.Stage != record.StageDeployed {
				t.Errorf("%s: %s at %s (%s), want deployed", r.Node, r.Outcome, r.Stage, r.Reason)
			}
		}
	}
	if r := byNode[short].Reason; !strings.Contains(r, "expected 8 x GPU matching H100, found 7") || !strings.Contains(r, "accept-hardware "+short) {
		t.Errorf("%s: reason %q does not name the GPUs found and the way out", short, r)
	}
	for _, want := range []string{"data0 cabled to leaf-r02:Ethernet13, expected leaf-r02:Ethernet12", "data1 cabled to leaf-r02:Ethernet12, expected leaf-r02:Ethernet13",
		"data0 at 10000 Mb/s, expected at least 25000", "BIOS 1.0 below 2.1.0"} {
		if r := byNode[swapped].Reason; !strings.Contains(r, want) {
			t.Errorf("%s: reason %q lacks %q", swapped, r, want)
		}
	}
	if strings.Contains(byNode[swapped].Reason, "GPU") {
		t.Errorf("%s: its GPUs are all there, yet: %s", swapped, byNode[swapped].Reason)
	}
	evs, err := e.Events(t.Context(), 0, 0, task.ID, short)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(ev record.Event) bool {
		return ev.Kind == "as-built" && ev.Stage == record.StageAsBuilt && ev.Level == "error" && strings.Contains(ev.Message, "found 7")
	}) {
		t.Errorf("no as-built event for %s among %d", short, len(evs))
	}
	// Deployed machines carry the hardware tags their inventory has.
	ids := machines(t, e)
	for _, n := range []string{"r01-cmp01", "r02-gpu02"} {
		if tags := machineTags(t, env, ids[n]); !slices.Contains(tags, "nic-25g") || slices.Contains(tags, "gpu-h100x8") {
			t.Errorf("%s: machine tags %v, want nic-25g and not gpu-h100x8", n, tags)
		}
	}
	// A node whose check passed has nothing to accept.
	if _, err := e.AcceptHardware(t.Context(), "r01-cmp01", "test"); !errors.Is(err, orchestrator.ErrConflict) {
		t.Errorf("accept-hardware of a node as built: %v, want a conflict", err)
	}

	// Retried without an acceptance, the GPU node fails again, now naming
	// the missing GPU from its peer's layout (the other node of the
	// profile has all 8).
	res2 := applyVerb(t, e, task.ID, record.VerbRetry, record.TaskPartiallySucceeded)
	if r := res2[short].Reason; res2[short].Stage != record.StageAsBuilt || !strings.Contains(r, "expected 8 x GPU matching H100, found 7: missing 0000:db:00.0") {
		t.Errorf("%s after a retry: %s at %s: %s", short, res2[short].Outcome, res2[short].Stage, r)
	}

	ab, err := e.AcceptHardware(t.Context(), short, "test")
	if err != nil {
		t.Fatal(err)
	}
	if ab.Accepted == nil || ab.Accepted.Inventory != ab.Inventory || len(ab.Accepted.Mismatches) != 1 || ab.Accepted.By != "test" {
		t.Fatalf("acceptance %+v", ab)
	}
	res3 := applyVerb(t, e, task.ID, record.VerbRetry, record.TaskPartiallySucceeded)
	if r := res3[short]; r.Outcome != record.OutcomeSucceeded || r.Stage != record.StageDeployed {
		t.Errorf("%s after accept-hardware and retry: %s at %s (%s)", short, r.Outcome, r.Stage, r.Reason)
	}
	if r := res3[swapped]; r.Outcome != record.OutcomeFailed || r.Stage != record.StageAsBuilt {
		t.Errorf("%s (not accepted) after a retry: %s at %s (%s)", swapped, r.Outcome, r.Stage, r.Reason)
	}
	evs, err = e.Events(t.Context(), 0, 0, "", short)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(ev record.Event) bool {
		return ev.Kind == "as-built" && ev.Level == "warn" && strings.Contains(ev.Message, "accepted as built by test")
	}) {
		t.Errorf("no event of the accepted check for %s", short)
	}
	// Accepted with 7 GPUs, the machine is not tagged as an 8-GPU one.
	if tags := machineTags(t, env, machines(t, e)[short]); slices.Contains(tags, "gpu-h100x8") || !slices.Contains(tags, "nic-25g") {
		t.Errorf("%s: machine tags %v", short, tags)
	}
	audit(t, env, e, len(d.Nodes)-1)
	// Hardware tags are no design tags: reconciliation sees no tags drift
	// on the machines that carry them.
	if _, err := e.Reconcile(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	drift, err := e.Drift(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, dr := range drift {
		if dr.Kind == record.DriftTags {
			t.Errorf("tags drift on %s: expected %s, observed %s", dr.Node, dr.Expected, dr.Observed)
		}
	}
}

// TestAllocationByConstraintsAgainstTheLab: a GPU node prepared in the
// lab leaves a commissioned machine tagged gpu-h100x8 (a hardware tag of
// the example's Site). A design revision that drops it and adds a node
// that is not pinned (no boot MAC, no BMC) but asks for that tag deploys
// the new node on that machine: MAAS's allocate matched its constraints.
func TestAllocationByConstraintsAgainstTheLab(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	const gpu, any = "r01-gpu01", "r01-any01"
	env, e := prepared(t, d, nil)
	run(t, e, record.Request{Action: record.ActionPrepareNodes, Requester: "test",
		Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{gpu}}}}}, record.TaskSucceeded)
	id := machines(t, e)[gpu]
	if tags := machineTags(t, env, id); !slices.Contains(tags, "gpu-h100x8") {
		t.Fatalf("prepared %s: machine %s tags %v, want gpu-h100x8", gpu, id, tags)
	}
	// What the pinned node gets configured: deployed, read from the lab's
	// MAAS, destroyed, and the machine's configuration put back to MAAS's
	// defaults behind the engine's back: the new node must configure it.
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test",
		Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{gpu}}}}}, record.TaskSucceeded)
	want := labConfig(t, env, id)
	run(t, e, record.Request{Action: record.ActionDestroyNodes, Requester: "test",
		Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{gpu}}}}}, record.TaskSucceeded)
	if _, err := env.MAASCall(t.Context(), "POST", "/machines/"+id+"/", "restore_default_configuration", nil); err != nil {
		t.Fatal(err)
	}
	if got := labConfig(t, env, id); got == want {
		t.Fatalf("restore_default_configuration left the configuration as configured:\n%s", got)
	}

	d2 := designtest.Example(t)
	n := *d2.Nodes[gpu]
	delete(d2.Nodes, gpu)
	n.Metadata.Name = any
	n.Spec.OOB.Address = ""
	n.Spec.Constraints = &design.Constraints{Tags: []string{"gpu-h100x8"}, MinCPU: 64}
	d2.Nodes[any] = &n
	raw, rev, err := d2.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.PutRevision(t.Context(), statestore.Revision{ID: rev, Design: raw, Counts: d2.Counts(), Roots: []string{"(test)"}}); err != nil {
		t.Fatal(err)
	}
	task, res := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Revision: rev,
		Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{any}}}}}, record.TaskSucceeded)
	if len(res) != 1 || res[0].Stage != record.StageDeployed {
		t.Fatalf("results %+v", res)
	}
	if got := nodeRecord(t, e, any).MachineID; got != id {
		t.Errorf("%s deployed on machine %q, want %q (the only one tagged gpu-h100x8)", any, got, id)
	}
	evs, err := e.Events(t.Context(), 0, 0, task.ID, any)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(ev record.Event) bool { return strings.Contains(ev.Message, "allocation by constraints") }) {
		t.Errorf("no event says how %s's machine was found", any)
	}
	// From the lab's MAAS: the machine has the design's networking and
	// storage, as the pinned node had (it was chosen while Ready and
	// configured before deploy allocated it).
	if got := labConfig(t, env, id); got != want {
		t.Errorf("machine %s deployed for %s is not configured as the design says:\n got: %s\nwant: %s", id, any, got, want)
	}
	if tags := machineTags(t, env, id); !slices.ContainsFunc(tags, func(s string) bool { return strings.HasPrefix(s, "slipway-claimed-") }) {
		t.Errorf("machine %s tags %v: no claim tag", id, tags)
	}
	// Destroyed: released, its claim tag gone so it may be chosen again.
	run(t, e, record.Request{Action: record.ActionDestroyNodes, Requester: "test", Revision: rev,
		Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{any}}}}}, record.TaskSucceeded)
	if tags := machineTags(t, env, id); slices.ContainsFunc(tags, func(s string) bool { return strings.HasPrefix(s, "slipway-claimed-") }) {
		t.Errorf("destroyed %s: machine %s keeps its claim tag (%v)", any, id, tags)
	}
}

// labConfig is a machine's networking (interfaces: name, type, VLAN,
// parents, links with their mode, subnet and static address) and storage
// (block devices' partitions and file systems, volume groups) as the
// lab's MAAS answers them, in one comparable string.
func labConfig(t *testing.T, env *labrun.Env, id string) string {
	t.Helper()
	raw, err := env.MAASCall(t.Context(), "GET", "/machines/"+id+"/", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	type fs struct {
		FSType     string  `json:"fstype"`
		MountPoint *string `json:"mount_point"`
	}
	var m struct {
		Interfaces []struct {
			Name    string   `json:"name"`
			Type    string   `json:"type"`
			Parents []string `json:"parents"`
			VLAN    *struct {
				VID int `json:"vid"`
			} `json:"vlan"`
			Links []struct {
				Mode   string `json:"mode"`
				IP     string `json:"ip_address"`
				Subnet *struct {
					CIDR string `json:"cidr"`
				} `json:"subnet"`
			} `json:"links"`
		} `json:"interface_set"`
		Blocks []struct {
			Name       string `json:"name"`
			FS         *fs    `json:"filesystem"`
			Partitions []struct {
				Size int64 `json:"size"`
				FS   *fs   `json:"filesystem"`
			} `json:"partitions"`
		} `json:"blockdevice_set"`
		VGs []struct {
			Name string `json:"name"`
		} `json:"volume_groups"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	fsText := func(f *fs) string {
		if f == nil {
			return "-"
		}
		mp := ""
		if f.MountPoint != nil {
			mp = *f.MountPoint
		}
		return f.FSType + ":" + mp
	}
	var parts []string
	for _, in := range m.Interfaces {
		p := slices.Clone(in.Parents)
		slices.Sort(p)
		vid := -1
		if in.VLAN != nil {
			vid = in.VLAN.VID
		}
		var links []string
		for _, l := range in.Links {
			cidr, ip := "", ""
			if l.Subnet != nil {
				cidr = l.Subnet.CIDR
			}
			if l.Mode == "static" {
				ip = l.IP
			}
			links = append(links, l.Mode+"/"+cidr+"/"+ip)
		}
		slices.Sort(links)
		parts = append(parts, fmt.Sprintf("if %s %s vlan %d parents %v links %v", in.Name, in.Type, vid, p, links))
	}
	for _, b := range m.Blocks {
		var ps []string
		for _, p := range b.Partitions {
			ps = append(ps, fmt.Sprintf("%d %s", p.Size, fsText(p.FS)))
		}
		parts = append(parts, fmt.Sprintf("disk %s %s partitions %v", b.Name, fsText(b.FS), ps))
	}
	for _, vg := range m.VGs {
		parts = append(parts, "vg "+vg.Name)
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}
