package demo

import (
	"context"
	"fmt"
	"io"

	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// BaselineCount is what the baseline stage changed on one node's
// machine: the engine's plan, and the lab BMC's own counts.
type BaselineCount struct {
	Node string `json:"node"`
	// Changed is the plan the engine recorded (have → want).
	Changed string `json:"changed"`
	// The lab's BMC: updates it ran, volumes it has, BIOS settings and
	// firmware versions still pending (0 once the reset applied them).
	SimpleUpdates uint64 `json:"simple_updates"`
	Volumes       int    `json:"volumes"`
	Pending       int    `json:"pending"`
	// Seconds is how long the node's baseline stage took.
	Seconds float64 `json:"seconds"`
}

// baselines reads, for each node whose record has a baseline plan of
// this task, the plan and its lab BMC's counts.
func (out *Run) baselines(ctx context.Context, env *labrun.Env, e *orchestrator.Engine, task string) error {
	recs, err := e.Nodes(ctx) // a node that failed its preflight has none
	if err != nil {
		return err
	}
	byName := map[string]record.NodeRecord{}
	for _, r := range recs {
		byName[r.Name] = r
	}
	for _, res := range out.results {
		rec, ok := byName[res.Node]
		if !ok || rec.Baseline == nil || rec.Baseline.Task != task {
			continue
		}
		c := BaselineCount{Node: res.Node, Changed: orNothing(rec.Baseline.Summary())}
		for _, tr := range rec.History {
			if tr.Task == task && tr.From == record.StageBaseline && !res.Started.IsZero() {
				c.Seconds = tr.At.Sub(res.Started).Seconds()
			}
		}
		if m := env.Lab.Machine(res.Node); m != nil {
			if rf := m.Redfish(); rf != nil {
				_, pending := rf.BIOS()
				c.SimpleUpdates, c.Volumes, c.Pending = rf.Updates().SimpleUpdates, len(rf.Volumes()), len(pending)+len(rf.PendingFirmware())
			}
		}
		out.Baselines = append(out.Baselines, c)
	}
	return nil
}

func orNothing(s string) string {
	if s == "" {
		return "nothing to change"
	}
	return s
}

// baselineText writes what the baseline stage changed, node by node.
func (out Run) baselineText(w io.Writer) {
	if len(out.Baselines) == 0 {
		return
	}
	fmt.Fprintln(w, "\nbaselines (the engine's plan; the lab BMC's counts after the reset):")
	for _, c := range out.Baselines {
		fmt.Fprintf(w, "%s: %s; the BMC ran %d firmware update(s), has %d volume(s), %d setting(s) or version(s) pending; %.2fs\n",
			c.Node, c.Changed, c.SimpleUpdates, c.Volumes, c.Pending, c.Seconds)
	}
}
