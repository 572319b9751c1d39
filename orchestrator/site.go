package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/driverspec"
)

// runSite runs a site action with the retry policy; it returns the
// task's final status and message.
func (e *Engine) runSite(run *taskRun, d *design.Design) (TaskStatus, string) {
	return e.retrySite(run, func(ctx context.Context) (string, error) { return e.siteOnce(ctx, run.task.Action, d) })
}

// retrySite runs fn until it succeeds, fails other than transiently or
// spends the retry policy's attempts.
func (e *Engine) retrySite(run *taskRun, fn func(context.Context) (string, error)) (TaskStatus, string) {
	ctx := run.ctx
	for attempt := 1; ; attempt++ {
		msg, err := fn(ctx)
		if err == nil {
			return TaskSucceeded, msg
		}
		if ctx.Err() != nil {
			if run.isCancelled() {
				return TaskCancelled, "cancelled"
			}
			return TaskFailed, ctx.Err().Error()
		}
		class := drivers.Classify(err)
		if class != drivers.Transient || attempt >= e.cfg.Retry.Attempts {
			return TaskFailed, fmt.Sprintf("%s (%s, after %d attempt(s))", err, class, attempt)
		}
		wait := e.scaled(e.cfg.Retry.backoff(attempt))
		e.siteEvent(run, "warn", fmt.Sprintf("attempt %d failed (%v); next in %s", attempt, err, wait.Round(time.Millisecond)))
		if !sleep(ctx, wait) {
			continue
		}
	}
}

func (e *Engine) siteEvent(run *taskRun, level, msg string) {
	var b batch
	b.event(Event{Time: now(), Task: run.id, Level: level, Kind: "site", Message: msg, Correlation: run.corr})
	_ = e.rec.write(e.ctx, &b)
}

// siteOnce runs one attempt of a site action. A StatusFailed result is a
// Permanent error; InProgress is waited for here.
func (e *Engine) siteOnce(ctx context.Context, a Action, d *design.Design) (string, error) {
	switch a {
	case ActionValidateDesign:
		// The stored revision was validated when it was applied; check
		// that what the engine needs of it holds.
		var problems []string
		for _, name := range d.NodeNames() {
			n := d.Nodes[name]
			if n.OOB(oobDriver(d)).Address == "" {
				problems = append(problems, "node "+name+" has no BMC address")
			}
		}
		if len(problems) > 0 {
			return "", drivers.Errorf(drivers.Permanent, "design is not deployable: %s", strings.Join(problems, "; "))
		}
		return fmt.Sprintf("design valid: %d nodes, %d networks", len(d.Nodes), len(d.Networks)), nil
	case ActionVerifySite:
		info, err := e.probeSite(ctx)
		if err != nil {
			return "", err
		}
		msg := fmt.Sprintf("provisioner %s reachable and authenticated; boot images %s", orDefault(info.Version, "(version unknown)"), strings.Join(info.BootImages, ", "))
		pre, err := e.verifyPreflight(d, info)
		if err != nil {
			return "", err
		}
		msg += "; " + pre
		if e.cfg.Drivers.Network != nil {
			ni, err := e.cfg.Drivers.Network.Probe(ctx)
			if err != nil {
				return "", err
			}
			msg += "; network driver: " + orDefault(ni.Description, "reachable")
		}
		return msg, nil
	case ActionPrepareSite:
		site := driverspec.Site(d)
		for {
			var res drivers.Result
			err := e.callServer(ctx, func(ctx context.Context) (err error) {
				res, err = e.cfg.Drivers.Server.PrepareSite(ctx, site)
				return err
			})
			if err != nil {
				return "", err
			}
			switch res.Status {
			case drivers.StatusDone:
				return res.Message, nil
			case drivers.StatusFailed:
				return "", drivers.Errorf(drivers.Permanent, "%s", res.Message)
			}
			if !sleep(ctx, min(e.scaled(res.RetryAfter), e.cfg.MaxWait)) {
				return "", ctx.Err()
			}
		}
	}
	return "", drivers.Errorf(drivers.Permanent, "%s is not a site action", a)
}

func oobDriver(d *design.Design) string {
	if d.Site != nil && d.Site.Spec.Drivers.OOB != "" {
		return d.Site.Spec.Drivers.OOB
	}
	return "ipmi"
}

// verifyPreflight runs the deploy preflight for every node of the design:
// a Permanent error naming what is missing.
func (e *Engine) verifyPreflight(d *design.Design, info drivers.SiteInfo) (string, error) {
	p := planPreflight(d, d.NodeNames(), true)
	findings, warnings := e.checkPreflight(p, info, true)
	if len(findings) > 0 {
		texts := make([]string, len(findings))
		for i, f := range findings {
			texts[i] = f.String()
		}
		return "", drivers.Errorf(drivers.Permanent, "preflight: %s", strings.Join(texts, "; "))
	}
	msg := fmt.Sprintf("preflight: the %d secret(s) and %d image(s) the %d node(s) need are all there", len(p.secrets), len(p.images), p.nodes)
	for _, w := range warnings {
		msg += "; " + w
	}
	return msg, nil
}
