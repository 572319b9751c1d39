package orchestrator

import (
	"context"
	"fmt"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// preflightTask runs the preflight of a node task before any of its
// nodes starts (see preflightScope for the actions that have one). It
// returns false when it failed the task, every node failed without a
// driver call, or when the engine is stopping.
func (e *Engine) preflightTask(run *taskRun, d *design.Design) bool {
	t := run.task
	check, bootData := preflightScope(t.Action)
	if !check || run.isCancelled() || run.anyStarted() {
		return true // a resumed task's machines were touched already
	}
	p := planPreflight(d, t.Nodes, bootData, e.overridden(run.ctx))
	var info drivers.SiteInfo
	if bootData {
		status, msg := e.retrySite(run, func(ctx context.Context) (_ string, err error) {
			info, err = e.probeSite(ctx)
			return "", err
		})
		switch {
		case e.ctx.Err() != nil:
			return false
		case status == record.TaskCancelled:
			return true // the nodes record their cancellation
		case status != record.TaskSucceeded:
			e.failPreflight(run, nil, "the provisioner's boot images could not be read: "+msg)
			return false
		}
	}
	var nodes []finding
	if bootData { // preflight_nodes.go: each node's deploy spec (and a redeploy's BMCs)
		nodes = e.nodeFindings(run, d, &p)
		if e.ctx.Err() != nil || run.isCancelled() {
			return e.ctx.Err() == nil // cancelled: the nodes record their cancellation
		}
	}
	findings, warnings := e.checkPreflight(p, info, bootData)
	findings = append(nodes, findings...)
	e.preflightEvents(run, p, findings, warnings)
	if len(findings) > 0 {
		e.failPreflight(run, findings, "")
		return false
	}
	return true
}

// anyStarted reports whether a node of the task has started.
func (t *taskRun) anyStarted() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.results {
		if !r.Started.IsZero() {
			return true
		}
	}
	return false
}

// probeSite asks the server driver about the provisioner: an error when
// it does not answer or refuses the credentials.
func (e *Engine) probeSite(ctx context.Context) (drivers.SiteInfo, error) {
	var info drivers.SiteInfo
	err := e.callServer(ctx, func(ctx context.Context) (err error) {
		info, err = e.cfg.Drivers.Server.ProbeSite(ctx)
		return err
	})
	switch {
	case err != nil:
		return info, err
	case !info.Reachable:
		return info, drivers.Errorf(drivers.Transient, "the provisioner does not answer")
	case !info.Authenticated:
		return info, drivers.Errorf(drivers.Permanent, "the provisioner rejected the credentials (check the MAAS API key secret)")
	}
	return info, nil
}

// preflightEvents records each finding and warning, or that all is there.
func (e *Engine) preflightEvents(run *taskRun, p preflightPlan, findings []finding, warnings []string) {
	var b batch
	ev := func(level, msg string) {
		b.event(record.Event{Time: now(), Task: run.id, Level: level, Kind: "preflight", Message: "preflight: " + msg, Correlation: run.corr})
	}
	for _, f := range findings {
		ev("error", f.String())
	}
	for _, w := range warnings {
		ev("warn", w)
	}
	if len(findings) == 0 {
		ev("info", fmt.Sprintf("the %d secret(s) and %d image(s) the %d node(s) need are all there", len(p.secrets), len(p.images), p.nodes))
	}
	_ = e.rec.write(e.ctx, &b)
}

// failPreflight fails every node of the task where it stands, before
// any driver call, with the findings about it, then the task.
func (e *Engine) failPreflight(run *taskRun, findings []finding, why string) {
	byNode := map[string][]string{}
	texts := make([]string, len(findings))
	for i, f := range findings {
		texts[i] = f.String()
		for _, n := range f.nodes {
			byNode[n] = append(byNode[n], f.short())
		}
	}
	at := now()
	var b batch
	results := make([]record.NodeResult, 0, len(run.task.Nodes))
	for _, name := range run.task.Nodes {
		reason := why
		if rs := byNode[name]; len(rs) > 0 {
			reason = strings.Join(rs, "; ")
		} else if reason == "" {
			reason = "the task's other nodes lack what they need (see the task)"
		}
		nr := run.result(name)
		nr.Node, nr.Stage, nr.Outcome, nr.Class, nr.Finished = name, record.StagePending, record.OutcomeFailed, string(drivers.Permanent), at
		nr.Reason = "preflight: node " + name + ": " + reason + "; no machine was touched"
		b.result(run.id, nr)
		results = append(results, nr)
	}
	if err := e.rec.write(e.ctx, &b); err != nil {
		return // stopping: the task runs its preflight again at the next start
	}
	for _, nr := range results {
		run.setResult(nr)
	}
	e.finishTask(run, record.TaskFailed, "preflight failed, no machine was touched: "+orDefault(strings.Join(texts, "; "), why))
}
