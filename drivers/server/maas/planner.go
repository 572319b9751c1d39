package maas

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/slipway-dev/slipway/drivers"
)

// The driver is a drivers.ServerPlanner.
var _ drivers.ServerPlanner = (*Driver)(nil)

// planBatch bounds the machines one read of PlanNodes asks for (a
// repeated id filter, as Status reads); planWorkers bounds the nodes
// whose own reads (node devices, volume groups) run at once.
const (
	planBatch   = 500
	planWorkers = 16
)

// PlanNodes answers what ApplyNetworking, ApplyStorage, ApplyPlatform,
// the owner data, the hostname and Deploy would change on each node's
// machine as MAAS holds it now, reading only: the machines in batches of
// planBatch, MAAS's subnets and tags once (through the read cache), and
// per node only what its plan needs (node devices when the design names
// devices by bus address, volume groups when the machine has a physical
// volume). The steps compute the same plan they apply, run dry
// (runNetworking, storageDiff, planTags).
//
// Interfaces and storage are planned on machines whose hardware MAAS
// knows (Ready and later); past Ready MAAS refuses those changes, and the
// difference is reported all the same (the engine makes it a reason to
// redeploy). A node whose design the machine cannot take gets a change
// with Op "error" that says why. A read that fails fails the plan.
func (d *Driver) PlanNodes(ctx context.Context, nodes []drivers.Node) ([]drivers.MachinePlan, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	byID, err := d.readMachines(ctx, nodes)
	if err != nil {
		return nil, err
	}
	out := make([]drivers.MachinePlan, len(nodes))
	nows := make([]drivers.Machine, len(nodes))
	src := make([]*mMachine, len(nodes))
	var exists map[string]mTag
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(planWorkers)
	for i, n := range nodes {
		out[i].Node = n.Name
		m := byID[n.MachineID]
		if n.MachineID == "" || m == nil {
			continue
		}
		if exists == nil {
			if exists, err = d.knownTags(ctx); err != nil {
				return nil, err
			}
		}
		out[i].Found, out[i].Deployed = true, deployedImage(m)
		nows[i], src[i] = d.toMachine(m, n.Name), m
		g.Go(func() (err error) {
			out[i].Changes, err = d.planMachine(gctx, m, n, exists)
			if err != nil {
				return fmt.Errorf("plan of node %s (machine %s): %w", n.Name, m.SystemID, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := d.kernelOptions(ctx, nows, src); err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].Found {
			out[i].Now = nows[i]
		}
	}
	return out, nil
}

// readMachines reads the nodes' machines, whole (interfaces and block
// devices), planBatch at a time, by system ID, past the read cache.
func (d *Driver) readMachines(ctx context.Context, nodes []drivers.Node) (map[string]*mMachine, error) {
	var ids []string
	seen := map[string]bool{}
	for _, n := range nodes {
		if n.MachineID != "" && !seen[n.MachineID] {
			seen[n.MachineID] = true
			ids = append(ids, n.MachineID)
		}
	}
	byID := make(map[string]*mMachine, len(ids))
	for chunk := range slices.Chunk(ids, planBatch) {
		// Not kept in the read cache: a step running meanwhile would share
		// (and change) the interfaces this plan reads.
		var ms []mMachine
		if err := d.c.call(ctx, http.MethodGet, "machines/", "", url.Values{"id": chunk}, &ms); err != nil {
			return nil, err
		}
		for i := range ms {
			if seen[ms[i].SystemID] {
				byID[ms[i].SystemID] = &ms[i]
			}
		}
	}
	return byID, nil
}

// hardwareKnown: MAAS holds the machine's commissioned interfaces and
// disks (Ready or later), so its networking and storage can be planned.
func hardwareKnown(m *mMachine) bool {
	return m.Status == stReady || pastReady(m)
}

// pastReady: the machine is allocated, deploying, deployed or failed
// deploying: MAAS refuses interface and storage changes.
func pastReady(m *mMachine) bool {
	return slices.Contains([]int{stAllocated, stDeploying, stDeployed, stFailedDeployment}, m.Status)
}

// deployedImage names the image of a machine past Ready: osystem/series
// and the kernel when one was asked for ("ubuntu/jammy ga-22.04").
func deployedImage(m *mMachine) string {
	if !pastReady(m) || m.DistroSeries == "" {
		return ""
	}
	s := m.OSystem + "/" + m.DistroSeries
	if k := str(m.HWEKernel); k != "" {
		s += " " + k
	}
	return s
}

// planMachine lists the changes of one machine, step by step.
func (d *Driver) planMachine(ctx context.Context, m *mMachine, n drivers.Node, exists map[string]mTag) ([]drivers.PlannedChange, error) {
	ch := d.planName(m, n)
	if hardwareKnown(m) {
		net, err := planStep(drivers.PartInterfaces, func() ([]drivers.PlannedChange, error) {
			r, err := d.runNetworking(ctx, m, n, true)
			if err != nil {
				return nil, err
			}
			return r.planned, nil
		})
		if err != nil {
			return nil, err
		}
		disk, err := planStep(drivers.PartStorage, func() ([]drivers.PlannedChange, error) { return d.planStorage(ctx, m, n) })
		if err != nil {
			return nil, err
		}
		ch = append(append(ch, net...), disk...)
	}
	ch = append(ch, planPlatform(m, n, exists)...)
	ch = append(ch, d.planOwner(m, n)...)
	return append(ch, planImage(m, n)...), nil
}

// planStep runs one step's plan: a Permanent error (the design does not
// fit the machine; applying it would fail) is one change with Op "error";
// any other error fails the plan.
func planStep(part string, plan func() ([]drivers.PlannedChange, error)) ([]drivers.PlannedChange, error) {
	ch, err := plan()
	var de *drivers.Error
	if errors.As(err, &de) && de.Class == drivers.Permanent {
		return []drivers.PlannedChange{{Part: part, Op: opError, Detail: err.Error()}}, nil
	}
	return ch, err
}

// planStorage is ApplyStorage's decision: nothing, or the layout rebuilt.
func (d *Driver) planStorage(ctx context.Context, m *mMachine, n drivers.Node) ([]drivers.PlannedChange, error) {
	plan, diff, err := d.storageDiff(ctx, m, n)
	if err != nil || diff == "" {
		return nil, err
	}
	return []drivers.PlannedChange{{Part: drivers.PartStorage, Op: opUpdate, Object: "layout",
		Detail: diff + " → " + plan.describe(m)}}, nil
}

// describe names the layout ApplyStorage builds from the plan.
func (p *storagePlan) describe(m *mMachine) string {
	var disks []string
	for _, dk := range p.disks {
		var parts []string
		for _, s := range dk.parts {
			parts = append(parts, s.name)
		}
		if len(parts) > 0 {
			disks = append(disks, dk.bd.Name+": "+strings.Join(parts, ", "))
		}
	}
	for _, vg := range slices.Sorted(maps.Keys(p.vgs)) {
		var lvs []string
		for _, s := range p.vgs[vg] {
			lvs = append(lvs, s.name)
		}
		disks = append(disks, vg+": "+strings.Join(lvs, ", "))
	}
	how := "custom layout"
	if _, _, ok := p.lvmLayout(m); ok {
		how = "MAAS's lvm layout"
	}
	return how + " (" + strings.Join(disks, "; ") + ")"
}

// planPlatform is ApplyPlatform's plan (planTags) as changes: the tags
// the machine gets, and its kernel parameters when they change.
func planPlatform(m *mMachine, n drivers.Node, exists map[string]mTag) []drivers.PlannedChange {
	tp := planTags(m, n, exists)
	var ch []drivers.PlannedChange
	if tp.ensureKernel || len(tp.untag) > 0 || slices.Contains(tp.add, tp.ktag) {
		var now []string
		for _, t := range m.TagNames {
			if isKernelTag(t) && exists[t].KernelOpts != "" {
				now = append(now, exists[t].KernelOpts)
			}
		}
		ch = append(ch, drivers.PlannedChange{Part: drivers.PartKernelOptions, Op: opUpdate, Object: tp.ktag,
			Detail: orNoneText(strings.Join(now, " ")) + " → " + orNoneText(tp.opts)})
	}
	for _, t := range tp.add {
		if t == tp.ktag {
			continue
		}
		tag, ok := exists[t]
		switch {
		case ok && tag.Definition != "":
			ch = append(ch, drivers.PlannedChange{Part: drivers.PartTags, Op: opError, Object: t,
				Detail: fmt.Sprintf("tag %s is an automatic tag (definition %q): MAAS does not let it be set on a machine", t, tag.Definition)})
		case ok:
			ch = append(ch, drivers.PlannedChange{Part: drivers.PartTags, Op: opCreate, Object: t})
		default:
			ch = append(ch, drivers.PlannedChange{Part: drivers.PartTags, Op: opCreate, Object: t, Detail: "a new tag in MAAS"})
		}
	}
	return ch
}

func orNoneText(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// planName: the hostname and domain IdentifyNode and RepairMachine set.
func (d *Driver) planName(m *mMachine, n drivers.Node) []drivers.PlannedChange {
	var ch []drivers.PlannedChange
	if n.Hostname != "" && m.Hostname != n.Hostname {
		ch = append(ch, drivers.PlannedChange{Part: drivers.PartHostname, Op: opUpdate, Detail: m.Hostname + " → " + n.Hostname})
	}
	if n.Domain != "" && m.Domain.Name != n.Domain {
		ch = append(ch, drivers.PlannedChange{Part: drivers.PartHostname, Op: opUpdate, Object: "domain", Detail: orNoneText(m.Domain.Name) + " → " + n.Domain})
	}
	return ch
}

// planOwner: the owner data of a machine past Ready that differs from
// what setOwnerData gives it (a Ready machine gets it when Deploy
// allocates it; MAAS clears it on release). The ownership marker is put
// back in place (RepairMachine); the design's other keys only when the
// machine is next allocated, which the Detail says.
func (d *Driver) planOwner(m *mMachine, n drivers.Node) []drivers.PlannedChange {
	if !pastReady(m) {
		return nil
	}
	want := d.ownerData(n)
	var ch []drivers.PlannedChange
	for _, k := range slices.Sorted(maps.Keys(want)) {
		have, ok := m.OwnerData[k]
		c := drivers.PlannedChange{Part: drivers.PartOwner, Op: opUpdate, Object: k, Detail: have + " → " + want.Get(k)}
		switch {
		case !ok:
			c.Op, c.Detail = opCreate, want.Get(k)
		case have == want.Get(k):
			continue
		}
		if k != OwnerDataNode && k != OwnerDataInstance {
			c.Detail += " (set when the machine is next deployed)"
		}
		ch = append(ch, c)
	}
	return ch
}

// planImage: the image or kernel the node asks for differs from what the
// machine runs (a redeploy). An image or kernel the design leaves to MAAS
// is not compared.
func planImage(m *mMachine, n drivers.Node) []drivers.PlannedChange {
	if deployedImage(m) == "" {
		return nil
	}
	var ch []drivers.PlannedChange
	if img := n.Platform.Image; img != "" {
		osys, series, ok := strings.Cut(img, "/")
		if !ok {
			osys, series = "", img
		}
		if series != m.DistroSeries || (osys != "" && osys != m.OSystem) {
			ch = append(ch, drivers.PlannedChange{Part: drivers.PartImage, Op: opUpdate, Object: "image", Detail: m.OSystem + "/" + m.DistroSeries + " → " + img})
		}
	}
	if k := n.Platform.Kernel; k != "" && k != str(m.HWEKernel) {
		ch = append(ch, drivers.PlannedChange{Part: drivers.PartImage, Op: opUpdate, Object: "kernel", Detail: orNoneText(str(m.HWEKernel)) + " → " + k})
	}
	return ch
}
