package orchestrator

import (
	"context"
	"fmt"
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
	var settled []NodeRecord
	for _, r := range recs {
		if r.MachineID != "" {
			claimed[r.MachineID] = true
			if e.holder(r) == "" && r.Outcome == OutcomeSucceeded && expected[r.Stage] != nil {
				settled = append(settled, r)
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
				res, err = e.cfg.Drivers.Server.Release(ctx, drivers.NodeRef{Name: m.Node, MachineID: m.MachineID}, false)
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
	for start := 0; start < len(settled); start += statusBatch {
		chunk := settled[start:min(start+statusBatch, len(settled))]
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
			ok := false
			for _, want := range expected[r.Stage] {
				ok = ok || st == want
			}
			if !ok {
				rep.Drift = append(rep.Drift, Drift{Node: r.Name, MachineID: r.MachineID, Stage: r.Stage, Observed: st})
				b.event(Event{Time: rep.Time, Node: r.Name, Stage: r.Stage, Level: "warn", Kind: "drift",
					Message: fmt.Sprintf("drift: the record says %s but machine %s is %s; `adopt` takes the provisioner's state, a task puts the machine back", r.Stage, r.MachineID, st)})
			}
		}
	}
	if err := e.rec.write(ctx, &b); err != nil {
		return rep, err
	}
	return rep, nil
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
