package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// The network role's stages: the node's switch ports are put on the
// provisioning VLAN before the PXE boot (oob-prepare step 0), on the
// design's VLANs, trunks and LAGs after deploy (bootstrap step 0, before
// the node is reported deployed), and on the Site's quarantine VLAN once
// the node leaves service (the releasing stage's step 1 of destroy and
// decommission; before that release, when it erases the disks of a
// deployed machine, which PXE-boots it, provisioning again). Rescue and
// hardware tests of a deployed node move them too (rescue.go). After
// the driver is done, a driver that reads ports
// back (drivers.ReaderOf) is asked for every port, which must be what
// drivers.PortPlan says: a difference fails the stage. A switch error
// fails the stage like any driver error, never by releasing the
// machine: the node stops where it is and `orchestrator retry TASK-ID`
// takes the step again once the switch is fixed.

// maxPortFindings bounds the ports a failed read-back names.
const maxPortFindings = 8

// Bounds of a stage failure's port differences: each port's text (the
// switch reports trunks and LAG names of any length), and the whole.
const (
	maxPortDiffText  = 200
	maxPortDiffsText = 2048
)

// portsStep configures the node's switch ports for phase and checks
// them; done is a sub-step.
func (r *nodeRun) portsStep(ctx context.Context, phase drivers.Phase) (step, error) {
	return r.portsStepAs(ctx, phase, phase == drivers.PhaseQuarantine)
}

// portsStepAs is portsStep for a node leaving service (leaving: the
// ports the current design gives another node, or on a switch it no
// longer declares, are left alone) or not (the stage waits for an orphan
// holding its ports).
func (r *nodeRun) portsStepAs(ctx context.Context, phase drivers.Phase, leaving bool) (step, error) {
	net := r.e.cfg.Drivers.Network
	if net == nil {
		return sub("no network driver: switch ports left as they are"), nil
	}
	dn, err := r.e.serverNode(ctx, r.d, r.n, r.rec.MachineID)
	if err != nil {
		return step{}, err
	}
	spared := ""
	if leaving {
		if spared, err = r.spareOthers(ctx, &dn); err != nil {
			return step{}, err
		}
	} else if st, ok, err := r.orphanGuard(ctx, dn); !ok || err != nil { // ports_orphans.go
		return st, err
	}
	res, err := net.ConfigurePorts(ctx, dn, phase)
	if err != nil {
		return step{}, r.portsErr(phase, err)
	}
	switch res.Status {
	case drivers.StatusDone:
	case drivers.StatusFailed:
		return failed("%s", r.portsWords(phase, res.Message)), nil
	default:
		return r.result(res, false, func() step { return step{kind: stepAgain} })
	}
	checked, err := r.checkPorts(ctx, net, dn, phase)
	if err != nil {
		return step{}, err
	}
	if checked.bad != "" {
		return failed("%s", r.portsWords(phase, "the switch does not have what was configured: "+checked.bad)), nil
	}
	return sub("switch ports (%s): %s%s%s", phase, res.Message, checked.note, spared), nil
}

// spareOthers uncables, in dn, each NIC whose switch port the current
// design gives another node, so that quarantine leaves that port alone:
// a node removed from the design is quarantined with the cabling of the
// last design that had it (or a task runs on an older revision), and its
// cable may have moved to a node the current design deploys on that
// port. A port on a switch the current design no longer declares is left
// too: the network driver is built from the current design, and knows
// no way to it. It says which ports it left. The current design unread is an
// error (the step is tried again): nothing is quarantined unchecked.
func (r *nodeRun) spareOthers(ctx context.Context, dn *drivers.Node) (string, error) {
	cur, err := r.e.currentDesignErr(ctx) // ports_orphans.go
	if cur == nil && err == nil {
		return "", nil
	}
	if err != nil {
		return "", drivers.Errorf(drivers.Transient, "node %s: reading the current design to check that no other node has its switch ports now: %v", r.rec.Name, err)
	}
	owner := map[drivers.SwitchPort]string{}
	for i := range dn.Interfaces {
		for _, dv := range dn.Interfaces[i].Devices {
			if dv.Switch != "" && dv.Port != "" {
				owner[drivers.SwitchPort{Switch: dv.Switch, Port: dv.Port}] = ""
			}
		}
	}
	for name, n := range cur.Nodes {
		for _, c := range n.Spec.Cabling {
			if p := (drivers.SwitchPort{Switch: c.Switch, Port: c.Port}); name != r.rec.Name {
				if _, ok := owner[p]; ok {
					owner[p] = name
				}
			}
		}
	}
	declared := map[string]bool{}
	for _, sw := range cur.AllSwitches() {
		declared[sw.Name] = true
	}
	var left []string
	for i := range dn.Interfaces {
		for j, dv := range dn.Interfaces[i].Devices {
			why := ""
			if o := owner[drivers.SwitchPort{Switch: dv.Switch, Port: dv.Port}]; o != "" {
				why = "the current design cables it to node " + o
			} else if dv.Switch != "" && !declared[dv.Switch] {
				why = "switch " + dv.Switch + " is not in the current design's fabric, so the network driver has no way to it: set the port by hand"
			}
			if why != "" {
				left = append(left, fmt.Sprintf("%s:%s (%s)", dv.Switch, dv.Port, why))
				dn.Interfaces[i].Devices[j].Switch, dn.Interfaces[i].Devices[j].Port = "", ""
			}
		}
	}
	if len(left) == 0 {
		return "", nil
	}
	slices.Sort(left)
	return "; left as they are: " + strings.Join(left, ", "), nil
}

// portsCheck is what reading the ports back found: bad lists the ports
// that differ from the plan ("" none), note says what was checked.
type portsCheck struct{ bad, note string }

// checkPorts reads the node's planned ports back when the driver can and
// compares each with drivers.PortPlan. A read that fails is an error
// naming the node (the step is tried again, as any driver call).
func (r *nodeRun) checkPorts(ctx context.Context, net drivers.Network, dn drivers.Node, phase drivers.Phase) (portsCheck, error) {
	plan, err := drivers.PortPlan(dn, phase)
	if err != nil || len(plan) == 0 {
		return portsCheck{}, nil // the driver planned the same: it said Done for no port
	}
	rd, ok := drivers.ReaderOf(net)
	if !ok {
		return portsCheck{note: "; not read back (the network driver cannot)"}, nil
	}
	ports := make([]drivers.SwitchPort, len(plan))
	for i, p := range plan {
		ports[i] = p.SwitchPort
	}
	states, err := rd.ReadPorts(ctx, ports)
	if err != nil {
		return portsCheck{}, r.portsErr(phase, fmt.Errorf("reading the ports back: %w", err))
	}
	if len(states) != len(plan) {
		return portsCheck{}, r.portsErr(phase, drivers.Errorf(drivers.Transient, "reading the ports back: %d ports answered for %d asked", len(states), len(plan)))
	}
	if bad := portDifferences(plan, states); bad != "" {
		return portsCheck{bad: bad}, nil
	}
	return portsCheck{note: fmt.Sprintf("; %d ports read back as planned", len(plan))}, nil
}

// portDifferences says which ports read back differ from the plan
// (states[i] is plan[i]'s), at most maxPortFindings of them; "" none.
func portDifferences(plan []drivers.PortConfig, states []drivers.PortState) string {
	var bad []string
	for i, want := range plan {
		got := states[i]
		got.SwitchPort = want.SwitchPort
		switch {
		case !got.Found:
			bad = append(bad, fmt.Sprintf("switch %s has no port %s", want.Switch, want.Port))
		case !want.Equal(got.PortConfig):
			bad = append(bad, cutText(fmt.Sprintf("switch %s port %s (%s): %s", want.Switch, want.Port, want.Alias,
				strings.Join(want.Diff(got.PortConfig), ", ")), maxPortDiffText))
		}
	}
	shown, size := 0, 0
	for shown < len(bad) && shown < maxPortFindings && size+len(bad[shown])+len("; ") <= maxPortDiffsText-len("; and 9999 more") {
		size += len(bad[shown]) + len("; ")
		shown++
	}
	if shown < len(bad) {
		bad = append(bad[:shown], fmt.Sprintf("and %d more", len(bad)-shown))
	}
	return strings.Join(bad, "; ")
}

// cutText is s cut to at most most bytes (on a character's boundary),
// ending with "…" when cut.
func cutText(s string, most int) string {
	if len(s) <= most {
		return s
	}
	cut := most - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// portsErr is a switch error of the node's ports stage, its class kept,
// naming the node, the stage and the next step.
func (r *nodeRun) portsErr(phase drivers.Phase, err error) error {
	return &portsError{words: r.portsWords(phase, err.Error()), err: err}
}

type portsError struct {
	words string
	err   error
}

func (e *portsError) Error() string { return e.words }
func (e *portsError) Unwrap() error { return e.err }

// portsFailure reports whether err is a ports step's: the switch failed,
// not the call around it (a release's step also moves ports before it).
func portsFailure(err error) bool {
	var pe *portsError
	return errors.As(err, &pe)
}

// portsWords says what went wrong with the node's ports in phase, what
// became of its machine and what to do.
func (r *nodeRun) portsWords(phase drivers.Phase, what string) string {
	machine := "the machine is left as it is (not released, not rebooted)"
	if phase == drivers.PhaseQuarantine {
		machine = fmt.Sprintf("machine %s is released (the release stands); its ports are not on the quarantine VLAN yet", orDefault(r.rec.MachineID, "(none)"))
	}
	return fmt.Sprintf("node %s, stage %s: switch ports for the %s phase: %s; %s; fix the switch (it must answer at the address the Site's fabric gives, "+
		"with its credentials), then `orchestrator retry %s` (the node takes this step again)", r.rec.Name, r.rec.Stage, phase, what, machine, r.run.id)
}

// leavesService reports whether the node's task takes it out of
// service, its ports to quarantine after the release: destroy (a node
// removed from the design included) and decommission. A redeploy's
// release goes through provisioning again.
func (r *nodeRun) leavesService() bool {
	a := r.rec.Action
	return (a == record.ActionDestroyNodes || a == record.ActionDecommissionNodes) && r.e.cfg.Drivers.Network != nil &&
		r.d.SiteOf(r.n).HasFabric()
}

// quarantinePorts is the releasing stage's step 1 for a node leaving
// service: its ports on the quarantine VLAN. A switch error fails the
// node here, its machine released: retry takes this step again.
func (r *nodeRun) quarantinePorts(ctx context.Context) (step, error) {
	st, err := r.portsStep(ctx, drivers.PhaseQuarantine)
	if st.kind == stepSub {
		st.kind = stepAdvance
	}
	return st, err
}

// provisioningBeforeErase comes before the release of a node leaving
// service whose release erases its disks: the provisioner PXE-boots the
// machine into an ephemeral system to erase them, which a deployed
// node's production ports (an LACP bond, a trunk) may not carry, so
// they are put in the provisioning phase first (read back; quarantine
// follows the release). ok is false when the release goes on: nothing to
// do (no fabric, no erase, a machine the provisioner does not have
// deployed) or done. A switch error fails the node here, nothing
// released or rebooted; retry takes the stage again.
func (r *nodeRun) provisioningBeforeErase(ctx context.Context) (st step, ok bool, err error) {
	if !r.leavesService() || r.erasePolicy(ctx) == drivers.EraseNone || r.rec.MachineID == "" {
		return step{}, false, nil
	}
	ms, err := r.e.status(ctx, []drivers.NodeRef{r.ref()})
	if err != nil {
		return step{}, true, err
	}
	if len(ms) != 1 || !slices.Contains(deployedStates, ms[0].State) {
		return step{}, false, nil
	}
	if st, err = r.portsStepAs(ctx, drivers.PhaseProvisioning, true); err != nil || st.kind != stepSub {
		return st, true, err
	}
	if !r.save(r.event("info", "step", "before the release erases the disks (a PXE boot): %s", st.msg)) {
		return step{}, true, drivers.Errorf(drivers.Transient, "could not store the node's checkpoint")
	}
	return step{}, false, nil
}
