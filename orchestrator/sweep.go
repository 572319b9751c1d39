package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// SweepReport is what a leak and drift sweep found.
type SweepReport struct {
	Time  time.Time         `json:"time"`
	Owned int               `json:"owned"` // machines carrying this orchestrator's marker
	Leaks []drivers.Machine `json:"leaks,omitempty"`
	Drift []Drift           `json:"drift,omitempty"`
	// Released lists leaked machines released under the ReleaseLeaks policy.
	Released []string `json:"released,omitempty"`
}

// Drift is a node whose machine is not in the state its record says.
type Drift struct {
	Node      string `json:"node"`
	MachineID string `json:"machineId"`
	Stage     Stage  `json:"stage"`
	Observed  string `json:"observed"`
}

// expected is the provisioner state a settled node's stage implies.
var expected = map[Stage][]string{
	StageDeployed: {"Deployed"},
	StageReady:    {"Ready", "Allocated"},
	StageReleased: {"Ready", "New"},
}

// Sweep compares the provisioner with the node records: machines owned
// by this orchestrator that no record claims are leaks; settled nodes
// whose machine is in another state have drifted. Both are reported as
// events; leaks are released only when Config.ReleaseLeaks is set.
func (e *Engine) Sweep(ctx context.Context) (SweepReport, error) {
	rep := SweepReport{Time: now()}
	if e.cfg.Drivers.Server == nil {
		return rep, nil
	}
	var owned []drivers.Machine
	err := e.callServer(ctx, func(ctx context.Context) (err error) {
		owned, err = e.cfg.Drivers.Server.Owned(ctx)
		return err
	})
	if err != nil {
		return rep, fmt.Errorf("sweep: list owned machines: %w", err)
	}
	rep.Owned = len(owned)
	recs, err := e.rec.nodes(ctx)
	if err != nil {
		return rep, err
	}
	claimed := map[string]bool{}
	var watched []NodeRecord // settled nodes, and nodes whose deployment goes on
	for _, r := range recs {
		if r.MachineID != "" {
			claimed[r.MachineID] = true
			if e.holder(r) == "" && (settled(r) || liveDeployment(r)) {
				watched = append(watched, r)
			}
		}
	}
	var b batch
	for _, m := range owned {
		if claimed[m.MachineID] {
			continue
		}
		rep.Leaks = append(rep.Leaks, m)
		msg := fmt.Sprintf("leak: machine %s (%s, marked for node %q) is owned by this orchestrator but no node record claims it", m.MachineID, m.State, m.Node)
		if e.cfg.ReleaseLeaks {
			var res drivers.Result
			err := e.callServer(ctx, func(ctx context.Context) (err error) {
				res, err = e.cfg.Drivers.Server.Release(ctx, drivers.NodeRef{Name: m.Node, MachineID: m.MachineID}, drivers.EraseNone)
				return err
			})
			if err == nil && res.Status != drivers.StatusFailed {
				rep.Released = append(rep.Released, m.MachineID)
				msg += "; released (release-leaks policy)"
			} else {
				msg += fmt.Sprintf("; release failed: %v %s", err, res.Message)
			}
		} else {
			msg += "; release it, or adopt it into a node"
		}
		b.event(Event{Time: rep.Time, Node: m.Node, Level: "warn", Kind: "leak", Message: msg})
	}
	for start := 0; start < len(watched); start += statusBatch {
		chunk := watched[start:min(start+statusBatch, len(watched))]
		refs := make([]drivers.NodeRef, len(chunk))
		for i, r := range chunk {
			refs[i] = drivers.NodeRef{Name: r.Name, MachineID: r.MachineID}
		}
		ms, err := e.status(ctx, refs)
		if err != nil {
			return rep, fmt.Errorf("sweep: status: %w", err)
		}
		for i, r := range chunk {
			if i >= len(ms) {
				break
			}
			st := ms[i].State
			if ms[i].MachineID == "" {
				st = "(gone)"
			}
			lost := liveDeployment(r) && !slices.Contains(deployedStates, st)
			if !lost && (!settled(r) || slices.Contains(expected[r.Stage], st)) {
				continue
			}
			rep.Drift = append(rep.Drift, Drift{Node: r.Name, MachineID: r.MachineID, Stage: r.Stage, Observed: st})
			msg := fmt.Sprintf("drift: the record says %s but machine %s is %s; `adopt` takes the provisioner's state, a task puts the machine back", r.Stage, r.MachineID, st)
			if lost {
				msg += e.endLostDeployment(ctx, r)
			}
			b.event(Event{Time: rep.Time, Node: r.Name, Stage: r.Stage, Level: "warn", Kind: "drift", Message: msg})
		}
	}
	if err := e.rec.write(ctx, &b); err != nil {
		return rep, err
	}
	return rep, nil
}

// settled: a finished node whose stage implies a machine state.
func settled(r NodeRecord) bool { return r.Outcome == OutcomeSucceeded && expected[r.Stage] != nil }

// liveDeployment: the record says the node's machine runs the OS of its
// current deployment (the node's introspection token is valid).
func liveDeployment(r NodeRecord) bool {
	return (r.Stage == StageDeployed || r.Stage == StageBootstrap) && r.Deployment > 0 && !r.DeploymentEnded
}

// deployedStates are the machine states in which a deployment goes on:
// rescue mode boots the machine into an ephemeral system and returns it
// to Deployed; a deployed machine marked Broken keeps its OS. Any other
// state (released, Ready, redeployed, gone) ends it.
var deployedStates = []string{"Deployed", "Entering rescue mode", "Rescue mode", "Exiting rescue mode",
	"Failed to enter rescue mode", "Failed to exit rescue mode", "Broken"}

// endLostDeployment ends the deployment of a node whose machine left it
// behind the engine's back: the node's introspection token is revoked and
// the record says the deployment ended (the next deploy opens a new one).
// It holds the node's lease meanwhile, and leaves a node a task took, or
// whose record changed, since the sweep read it. It returns what it did,
// for the drift event.
func (e *Engine) endLostDeployment(ctx context.Context, r NodeRecord) string {
	const by = "(sweep)"
	if !e.leaseFor(r.Name, by) {
		return "; a task holds the node now: its deployment is left to it"
	}
	defer e.unleaseFor(r.Name, by)
	cur, ok, err := e.rec.node(ctx, r.Name)
	switch {
	case err != nil:
		return fmt.Sprintf("; reading the node's record failed (%v): the next sweep ends its deployment", err)
	case !ok || !cur.Updated.Equal(r.Updated):
		return "; the node's record changed meanwhile: the next sweep looks again"
	}
	if e.cfg.Bootstrap != nil {
		if err := e.cfg.Bootstrap.EndDeployment(ctx, r.Name); err != nil {
			return fmt.Sprintf("; revoking the node's introspection token failed (%v): the next sweep tries again", err)
		}
	}
	cur.DeploymentEnded, cur.Updated = true, now()
	var b batch
	b.node(cur)
	if err := e.rec.write(ctx, &b); err != nil {
		return fmt.Sprintf("; the node's introspection token is revoked, but recording that its deployment ended failed (%v)", err)
	}
	return fmt.Sprintf("; deployment %d is over: the node's introspection token is revoked", r.Deployment)
}

// leaseFor takes a free node for a short operation of the engine's own
// (by names it); false when a task holds the node.
func (e *Engine) leaseFor(node, by string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leases[node] != "" {
		return false
	}
	e.leases[node] = by
	return true
}

// unleaseFor frees a node that by holds, waking the tasks waiting for it.
func (e *Engine) unleaseFor(node, by string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leases[node] == by {
		delete(e.leases, node)
		close(e.leaseCh)
		e.leaseCh = make(chan struct{})
	}
}

func (e *Engine) sweepLoop(ctx context.Context) {
	for {
		if rep, err := e.Sweep(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			e.log.Warn().Err(err).Msg("leak and drift sweep failed")
		} else if len(rep.Leaks)+len(rep.Drift) > 0 {
			e.log.Warn().Int("leaks", len(rep.Leaks)).Int("drift", len(rep.Drift)).Msg("sweep found leaked machines or drifted nodes (see events)")
		}
		if e.cfg.SweepInterval < 0 || !sleep(ctx, e.cfg.SweepInterval) {
			return
		}
	}
}
