package orchestrator

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// planInput is what a plan knows of one node: the driver's view of it in
// the design its machine was deployed with (Old, nil when no design had
// it) and in the planned one (New, nil when the node leaves), its record,
// and, when the server driver can plan, what the provisioner holds now.
type planInput struct {
	Name             string
	Old, New         *drivers.Node
	OldSite, NewSite string
	Rec              record.NodeRecord
	// Observed is the provisioner's answer (nil: not read).
	Observed *drivers.MachinePlan
	// Erase is what a release of the node erases ("" the driver's default).
	Erase string
	// Repairs says whether the planned design's Site repairs a kind of
	// drift (reconciliation policy repair).
	Repairs func(kind string) bool
	// Notes are said about the node whatever the action (a site profile
	// that could not be read).
	Notes []string
}

// pastReady are the machine states in which the provisioner takes no
// interface or storage change: the configuration was applied, the
// machine is allocated or runs a deployment.
var pastReady = append(slices.Clone(configured), deployedStates...)

// holds reports whether a node's record holds a machine: one is recorded
// and was not released or deleted.
func holds(r record.NodeRecord) bool {
	if r.MachineID == "" || r.Stage == record.StageReleased {
		return false
	}
	l := r.LifecycleState()
	return l != record.LifecycleReleased && l != record.LifecycleDeleted
}

// classify is the plan's rule for one node (docs/operations.md, "What a
// plan says").
func classify(in planInput) record.NodePlan {
	np := record.NodePlan{Node: in.Name, Site: in.NewSite, Machine: in.Rec.MachineID}
	if in.Observed != nil && in.Observed.Found {
		np.Machine, np.State = orDefault(in.Observed.Now.MachineID, np.Machine), in.Observed.Now.State
	} else if in.Observed == nil {
		np.State = recordedState(in.Rec)
	}
	switch {
	case in.New == nil:
		np.Site = in.OldSite
		releaseOrNone(&np, in, "removed from the design",
			fmt.Sprintf("its machine stays as it is, reported as orphan drift, until `orchestrator destroy --node %s` releases it", in.Name))
	case in.Old != nil && in.OldSite != in.NewSite && holds(in.Rec):
		np.Site = in.OldSite // released where its machine is: that Site's provisioner and policy
		from, to := orDefault(in.OldSite, "(none)"), orDefault(in.NewSite, "(none)")
		releaseOrNone(&np, in, fmt.Sprintf("moved from site %s to site %s", from, to),
			fmt.Sprintf("release its machine in %s first (`orchestrator destroy --node %s` before this design is applied), then deploy gives it a machine in %s", from, in.Name, to))
	default:
		classifyKept(&np, in)
	}
	if in.New != nil {
		np.Reasons = append(cannotTake(in.changes()), np.Reasons...)
	}
	np.Reasons = append(np.Reasons, in.Notes...)
	return np
}

// cannotTake says, first, what of the design the machine cannot take:
// the driver's changes with op "error" (e.g. a NIC the design names that
// the machine does not have).
func cannotTake(changes []drivers.PlannedChange) []string {
	var out []string
	for _, c := range changes {
		if c.Op == "error" {
			out = append(out, fmt.Sprintf("the provisioner cannot take the design: %s %s: %s; configuring the machine fails until the design or the machine changes",
				c.Part, c.Object, c.Detail))
		}
	}
	return out
}

// releaseOrNone plans the release of a node's machine when its record
// holds one, nothing otherwise.
func releaseOrNone(np *record.NodePlan, in planInput, why, how string) {
	if !holds(in.Rec) {
		np.Action = record.PlanNone
		np.Reasons = append(np.Reasons, why+"; no machine held: nothing to release")
		return
	}
	np.Action, np.Erase = record.PlanRelease, orDefault(in.Erase, "the server driver's default")
	np.Reasons = append(np.Reasons, why, fmt.Sprintf("%s (erase %s)", how, np.Erase))
}

// recordedState is the machine state the node's record last saw, else
// the one its lifecycle implies.
func recordedState(r record.NodeRecord) string {
	if r.Observed != "" && r.Observed != ObservedDeleted {
		return r.Observed
	}
	switch r.LifecycleState() {
	case record.LifecycleDeployed:
		return "Deployed"
	case record.LifecycleReady:
		return "Ready"
	}
	return ""
}

// classifyKept plans a node that stays in the design: new when it has no
// machine yet (or one not deployed: deploy allocates, configures and
// deploys it), redeploy, configure or none when it is past Ready.
func classifyKept(np *record.NodePlan, in planInput) {
	changes := in.changes()
	known := in.Rec.MachineID != "" && holds(in.Rec) || in.Observed != nil && in.Observed.Found
	if in.Observed != nil && !in.Observed.Found {
		known = false
	}
	switch {
	case !known:
		np.Action = record.PlanNew
		np.Reasons = append(np.Reasons, newReason(in))
		return
	case np.State == "Failed deployment":
		np.Action, np.Changes = record.PlanRedeploy, changes
		np.Reasons = append(np.Reasons, fmt.Sprintf("machine %s is in Failed deployment: deploy releases it and deploys it again", np.Machine))
		return
	case !slices.Contains(pastReady, np.State):
		np.Action, np.Changes = record.PlanNew, changes
		np.Reasons = append(np.Reasons, fmt.Sprintf("machine %s is %s: deploy allocates it, configures it (%d change(s)) and deploys it",
			np.Machine, orDefault(np.State, "not deployed"), len(changes)))
		return
	}
	np.Changes = changes
	if why := redeployReasons(changes); len(why) > 0 {
		np.Action = record.PlanRedeploy
		np.Reasons = append(np.Reasons, why...)
		np.Reasons = append(np.Reasons, fmt.Sprintf("`orchestrator redeploy --node %s` releases machine %s and deploys it again (deploy alone keeps a deployed machine as it is)", in.Name, np.Machine))
		return
	}
	if len(changes) == 0 {
		np.Action = record.PlanNone
		return
	}
	np.Action = record.PlanConfigure
	np.Reasons = append(np.Reasons, inPlaceReasons(in, np.State, changes)...)
}

// newReason says why a node gets a new machine.
func newReason(in planInput) string {
	switch {
	case in.Observed != nil && in.Rec.MachineID != "":
		return fmt.Sprintf("the provisioner does not know machine %s: deploy finds or enlists the node's machine, commissions, configures and deploys it", in.Rec.MachineID)
	case in.Rec.MachineID != "" && !holds(in.Rec):
		return fmt.Sprintf("machine %s was released: deploy allocates, configures and deploys it again", in.Rec.MachineID)
	}
	return "no machine yet: deploy allocates, commissions, configures and deploys one"
}

// redeployReasons are the changes a machine past Ready takes only by a
// redeploy: another image, interfaces or storage.
func redeployReasons(changes []drivers.PlannedChange) []string {
	var out []string
	for _, part := range []string{drivers.PartImage, drivers.PartInterfaces, drivers.PartStorage} {
		var what []string
		for _, c := range changes {
			if c.Part == part {
				what = append(what, describeChange(c))
			}
		}
		if len(what) == 0 {
			continue
		}
		if part == drivers.PartImage {
			out = append(out, "image: "+strings.Join(what, "; "))
			continue
		}
		out = append(out, fmt.Sprintf("%s changed on a machine past Ready, which the provisioner does not change in place: %s", part, strings.Join(what, "; ")))
	}
	return out
}

// inPlaceReasons say who applies in-place changes to a machine past
// Ready: on a deployed machine the reconciliation's repair when the
// Site's policy repairs that kind of drift, else a drift report; deploy
// itself leaves a configured machine as it is.
func inPlaceReasons(in planInput, state string, changes []drivers.PlannedChange) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range changes {
		kind, repairable := driftKindOf(c)
		if seen[c.Part+kind] {
			continue
		}
		seen[c.Part+kind] = true
		switch {
		case state != "Deployed":
			out = append(out, fmt.Sprintf("%s: machine is %s, configured already: deploy keeps it; applied at the next redeploy", c.Part, state))
		case !repairable:
			out = append(out, fmt.Sprintf("%s: neither deploy nor the reconciliation makes this change on a deployed machine (%s); applied at the next redeploy", c.Part, describeChange(c)))
		case in.Repairs != nil && in.Repairs(kind):
			out = append(out, fmt.Sprintf("%s: the reconciliation repairs it (the Site's policy for %s drift is repair)", c.Part, kind))
		default:
			out = append(out, fmt.Sprintf("%s: drift will be reported (the Site's policy for %s drift is report); `orchestrator drift resolve %s --kind %s --resolution repair` applies it", c.Part, kind, in.Name, kind))
		}
	}
	return out
}

// driftKindOf is the drift kind the reconciliation finds and repairs
// for a change to a deployed machine; false when it repairs none (owner
// data other than the marker, a tag to remove: tag drift is a missing
// tag).
func driftKindOf(c drivers.PlannedChange) (string, bool) {
	switch c.Part {
	case drivers.PartTags:
		return string(record.DriftTags), c.Op != "delete"
	case drivers.PartKernelOptions:
		return string(record.DriftKernelOptions), true
	case drivers.PartHostname:
		return string(record.DriftHostname), true
	case partSwitchPorts:
		return string(record.DriftSwitchport), c.Op != "error"
	}
	return "", false
}

func describeChange(c drivers.PlannedChange) string {
	s := c.Op + " " + c.Object
	if c.Detail != "" {
		s += " (" + c.Detail + ")"
	}
	return s
}

// changes are what configuring the node's machine changes: the
// provisioner's answer when it was read, else the difference between
// the design the machine was deployed with and the planned one.
func (in planInput) changes() []drivers.PlannedChange {
	var out []drivers.PlannedChange
	switch {
	case in.Observed != nil:
		out = in.Observed.Changes
	case in.Old != nil && in.New != nil:
		out = nodeChanges(*in.Old, *in.New)
	}
	if in.Old != nil && in.New != nil {
		out = append(slices.Clip(out), portChanges(*in.Old, *in.New)...) // plan_ports.go
	}
	return out
}

// nodeChanges compares the driver's view of a node in two designs, part
// by part.
func nodeChanges(a, b drivers.Node) []drivers.PlannedChange {
	var out []drivers.PlannedChange
	add := func(part, object, detail string) {
		out = append(out, drivers.PlannedChange{Part: part, Op: "update", Object: object, Detail: detail})
	}
	if a.Platform.Image != b.Platform.Image || a.Platform.Kernel != b.Platform.Kernel {
		add(drivers.PartImage, "platform", fmt.Sprintf("%s → %s", imageWords(a.Platform), imageWords(b.Platform)))
	}
	if ia, ib := machineIfaces(withoutCables(a.Interfaces)), machineIfaces(withoutCables(b.Interfaces)); !reflect.DeepEqual(ia, ib) {
		add(drivers.PartInterfaces, "interfaces", "interfaces: "+namesChanged(ifaceNames(ia), ifaceNames(ib), changedIfaces(ia, ib)))
	}
	if !reflect.DeepEqual(a.Storage, b.Storage) {
		add(drivers.PartStorage, "storage layout", "the design's storage layout changed")
	}
	if ka, kb := kernelWords(a.Platform.KernelParams), kernelWords(b.Platform.KernelParams); ka != kb {
		add(drivers.PartKernelOptions, "kernel options", fmt.Sprintf("%q → %q", ka, kb))
	}
	out = append(out, tagChanges(sortedSet(a.Tags), sortedSet(b.Tags))...)
	if a.Hostname != b.Hostname {
		add(drivers.PartHostname, "hostname", a.Hostname+" → "+b.Hostname)
	}
	if !maps.Equal(a.OwnerData, b.OwnerData) {
		add(drivers.PartOwner, "owner data", "keys "+strings.Join(changedKeys(a.OwnerData, b.OwnerData), ", "))
	}
	return out
}

// machineIfaces are a node's interfaces as its machine holds them: the
// subnets' own settings (gateway, DNS, ranges, routes) are the site's,
// which preparing the site changes, not the machine.
func machineIfaces(is []drivers.Interface) []drivers.Interface {
	out := make([]drivers.Interface, len(is))
	for i, in := range is {
		in.Networks = slices.Clone(in.Networks)
		for j, n := range in.Networks {
			n.Subnet = drivers.Subnet{Name: n.Name, CIDR: n.CIDR, VLAN: n.VLAN, MTU: n.MTU}
			in.Networks[j] = n
		}
		out[i] = in
	}
	return out
}

// tagChanges are the tags added (create) and removed (delete).
func tagChanges(a, b []string) []drivers.PlannedChange {
	var out []drivers.PlannedChange
	for _, t := range b {
		if !slices.Contains(a, t) {
			out = append(out, drivers.PlannedChange{Part: drivers.PartTags, Op: "create", Object: t})
		}
	}
	for _, t := range a {
		if !slices.Contains(b, t) {
			out = append(out, drivers.PlannedChange{Part: drivers.PartTags, Op: "delete", Object: t})
		}
	}
	return out
}

func imageWords(p drivers.Platform) string {
	return strings.TrimSpace(orDefault(p.Image, "(default image)") + " " + p.Kernel)
}

func sortedSet(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

func ifaceNames(is []drivers.Interface) []string {
	out := make([]string, len(is))
	for i, in := range is {
		out[i] = in.Name
	}
	return out
}

// changedIfaces are the interfaces in both lists that differ.
func changedIfaces(a, b []drivers.Interface) []string {
	var out []string
	for _, x := range a {
		for _, y := range b {
			if x.Name == y.Name && !reflect.DeepEqual(x, y) {
				out = append(out, x.Name)
			}
		}
	}
	return out
}

// namesChanged says which names were added, removed or changed.
func namesChanged(a, b, changed []string) string {
	var parts []string
	for _, n := range b {
		if !slices.Contains(a, n) {
			parts = append(parts, "+"+n)
		}
	}
	for _, n := range a {
		if !slices.Contains(b, n) {
			parts = append(parts, "-"+n)
		}
	}
	for _, n := range changed {
		parts = append(parts, "~"+n)
	}
	return strings.Join(parts, " ")
}

func changedKeys(a, b map[string]string) []string {
	var out []string
	for k, v := range b {
		if w, ok := a[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// siteRepairs is the planned design's reconciliation policy, as
// planInput.Repairs.
func siteRepairs(d *design.Design) func(string) bool {
	return func(kind string) bool { return d.DriftPolicy(kind) == design.PolicyRepair }
}
