package orchestrator

import (
	"context"
	"fmt"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// Switchport drift: a switch port of a deployed node that the switch
// reports otherwise than the design's production configuration, or of a
// released node otherwise than quarantine. A run reads the ports of the
// deployed and released nodes it examined, one ReadPorts per switch and
// batch; repair configures the node's ports for its phase again and
// reads them back.

// maxPortWords bounds a switchport drift's expected and observed text.
const maxPortWords = 1024

// switchports records the switchport drift of the deployed and released
// nodes the run examined. A switch that does not answer is logged and leaves its
// ports' drift as it was (neither detected nor cleared).
func (p *reconcilePass) switchports(ctx context.Context) {
	reader, _ := p.e.networkReader()
	if reader == nil || p.d == nil || len(p.ported) == 0 {
		return
	}
	var nodes []FabricNode
	recs := map[string]record.NodeRecord{}
	for _, r := range p.ported {
		n := planNodePorts(p.d, p.d.Nodes[r.Name], &r)
		if n.Error == "" && n.Phase != drivers.PhaseProvisioning && !portsLent(&r) && len(n.Ports) > 0 {
			nodes, recs[r.Name] = append(nodes, n), r
		}
	}
	states, errs := readSwitches(ctx, reader, portsBySwitch(nodes))
	for sw, msg := range errs {
		p.e.log.Warn().Str("switch", sw).Str("error", msg).Msg("reconcile: a switch did not answer; its ports' drift is looked at again next run")
	}
	for _, n := range nodes {
		want, got, unread := portDrift(n, states)
		if unread {
			p.keepStored(n.Node)
			continue
		}
		if got == "" {
			continue
		}
		r := recs[n.Node]
		p.add(found{DriftRecord: record.DriftRecord{Node: n.Node, Kind: record.DriftSwitchport, MachineID: r.MachineID, Stage: r.Stage,
			Expected: want, Observed: got}, rec: r})
	}
}

// portDrift is what a node's ports should be and how the switches differ
// ("" when none does); unread when a port was not read.
func portDrift(n FabricNode, states map[drivers.SwitchPort]drivers.PortState) (want, got string, unread bool) {
	var wants, gots []string
	for _, port := range n.Ports {
		st, ok := states[port.SwitchPort]
		if !ok {
			return "", "", true
		}
		wants = append(wants, portWords(port.Desired))
		switch {
		case !st.Found:
			gots = append(gots, port.String()+": no such port on the switch")
		case !port.Desired.Equal(st.PortConfig):
			gots = append(gots, port.String()+": "+strings.Join(port.Desired.Diff(st.PortConfig), ", "))
		}
	}
	return bounded(string(n.Phase) + ": " + strings.Join(wants, "; ")), bounded(strings.Join(gots, "; ")), false
}

// portWords says in words what a port must be.
func portWords(c drivers.PortConfig) string {
	w := []string{c.String(), c.Mode, fmt.Sprintf("vlan %d", c.VLAN)}
	if len(c.Trunk) > 0 {
		w = append(w, fmt.Sprintf("trunk %v", c.Trunk))
	}
	if c.LAG != "" {
		w = append(w, "lag "+c.LAG+" "+orDefault(c.LACP, "static"))
	}
	if c.MTU != 0 {
		w = append(w, fmt.Sprintf("mtu %d", c.MTU))
	}
	if !c.Enabled {
		w = append(w, "disabled")
	}
	return strings.Join(w, " ")
}

func bounded(s string) string {
	if len(s) > maxPortWords {
		return s[:maxPortWords] + "…"
	}
	return s
}

// portsLent reports whether the node's switch ports are in the
// provisioning phase for a task that PXE-boots its deployed machine:
// rescue mode (entering, in it, leaving it) and hardware tests (rescue.go,
// hwtest.go). Their desired phase is provisioning, not the production
// the node's deployed lifecycle says: reconcile neither reports them as
// drift nor repairs them to production.
func portsLent(r *record.NodeRecord) bool {
	switch r.Stage {
	case record.StageRescue, record.StageRescueMode, record.StageRescueExit, record.StageTesting:
		return true
	}
	return false
}

// keepStored marks a node whose ports were not read: its stored
// switchport drift stays as it was.
func (p *reconcilePass) keepStored(node string) {
	if p.unreadPorts == nil {
		p.unreadPorts = map[string]bool{}
	}
	p.unreadPorts[node] = true
}

// repairPorts configures a node's switch ports again for its phase
// (production once deployed, quarantine once released), with the node's
// lease held, and reads them back: a port that still differs fails the
// repair, naming it.
func (e *Engine) repairPorts(ctx context.Context, d *design.Design, dr record.DriftRecord) (string, error) {
	if d == nil || d.Nodes[dr.Node] == nil {
		return "", fmt.Errorf("%w: node %s is not in the current design: nothing to configure its ports to", ErrConflict, dr.Node)
	}
	reader, note := e.networkReader()
	if reader == nil {
		return "", fmt.Errorf("%w: node %s: %s; configure its ports on the switch by hand", ErrConflict, dr.Node, note)
	}
	const by = "(reconcile)"
	if !e.leaseFor(dr.Node, by) {
		return "", fmt.Errorf("%w: node %s is held by a running task; repair its ports after the task", ErrConflict, dr.Node)
	}
	defer e.unleaseFor(dr.Node, by)
	rec, _, err := e.rec.node(ctx, dr.Node)
	if err != nil {
		return "", err
	}
	phase := NodePhase(&rec)
	if portsLent(&rec) {
		return "", fmt.Errorf("%w: node %s is at stage %s of %s: its ports are on the provisioning network for it until rescue_exit or the end of its tests put them back in production", ErrConflict, dr.Node, rec.Stage, rec.Action)
	}
	if phase == drivers.PhaseProvisioning {
		return "", fmt.Errorf("%w: node %s is neither deployed nor released: its ports follow the task that drives it", ErrConflict, dr.Node)
	}
	dn, err := e.serverNode(ctx, d, d.Nodes[dr.Node], rec.MachineID)
	if err != nil {
		return "", err
	}
	res, err := e.cfg.Drivers.Network.ConfigurePorts(ctx, dn, phase)
	if err == nil && res.Status == drivers.StatusFailed {
		err = fmt.Errorf("%s", res.Message)
	}
	if err != nil {
		return "", fmt.Errorf("node %s: configuring its switch ports for %s: %w; check the switch, then `orchestrator drift resolve %s --kind switchport --resolution repair`", dr.Node, phase, err, dr.Node)
	}
	n := planNodePorts(d, d.Nodes[dr.Node], &rec)
	states, errs := readSwitches(ctx, reader, portsBySwitch([]FabricNode{n}))
	for _, msg := range errs {
		return "", fmt.Errorf("node %s: ports configured, reading them back failed: %s", dr.Node, msg)
	}
	if _, got, _ := portDrift(n, states); got != "" {
		return "", fmt.Errorf("node %s: ports configured, the switch still reports %s", dr.Node, got)
	}
	return fmt.Sprintf("the %d switch ports of node %s configured for %s again and read back as designed (%s)", len(n.Ports), dr.Node, phase, res.Message), nil
}
