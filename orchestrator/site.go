package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// runSite runs a site action with the retry policy; it returns the
// task's final status and message.
func (e *Engine) runSite(run *taskRun, d *design.Design) (record.TaskStatus, string) {
	if run.task.Action == record.ActionSyncImages {
		return e.runSyncImages(run, d) // images_task.go
	}
	return e.retrySite(run, func(ctx context.Context) (string, error) { return e.siteOnce(ctx, run.task.Action, d) })
}

// retrySite runs fn until it succeeds, fails other than transiently or
// spends the retry policy's attempts.
func (e *Engine) retrySite(run *taskRun, fn func(context.Context) (string, error)) (record.TaskStatus, string) {
	ctx := run.ctx
	for attempt := 1; ; attempt++ {
		msg, err := fn(ctx)
		if err == nil {
			return record.TaskSucceeded, msg
		}
		if ctx.Err() != nil {
			if run.isCancelled() {
				return record.TaskCancelled, "cancelled"
			}
			return record.TaskFailed, ctx.Err().Error()
		}
		class := drivers.Classify(err)
		if class != drivers.Transient || attempt >= e.cfg.Retry.Attempts {
			return record.TaskFailed, fmt.Sprintf("%s (%s, after %d attempt(s))", err, class, attempt)
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
	b.event(record.Event{Time: now(), Task: run.id, Level: level, Kind: "site", Message: msg, Correlation: run.corr})
	_ = e.rec.write(e.ctx, &b)
}

// siteOnce runs one attempt of a site action. A StatusFailed result is a
// Permanent error; InProgress is waited for here.
func (e *Engine) siteOnce(ctx context.Context, a record.Action, d *design.Design) (string, error) {
	switch a {
	case record.ActionValidateDesign:
		return validateDeployable(d)
	case record.ActionVerifySite:
		return e.verifySite(ctx, d)
	case record.ActionPrepareSite:
		return e.prepareSite(ctx, d)
	}
	return "", drivers.Errorf(drivers.Permanent, "%s is not a site action", a)
}

// validateDeployable checks what the engine needs of a stored revision
// (validated in full when it was applied).
func validateDeployable(d *design.Design) (string, error) {
	var problems []string
	for _, name := range d.NodeNames() {
		n := d.Nodes[name]
		if n.OOB(d.SiteOOBDriver()).Address == "" {
			problems = append(problems, "node "+name+" has no BMC address")
		}
	}
	if len(problems) > 0 {
		return "", drivers.Errorf(drivers.Permanent, "design is not deployable: %s", strings.Join(problems, "; "))
	}
	return fmt.Sprintf("design valid: %d nodes, %d networks", len(d.Nodes), len(d.Networks)), nil
}

// verifySite probes the provisioner (and the network driver, when there
// is one) and runs the deploy preflight of every node.
func (e *Engine) verifySite(ctx context.Context, d *design.Design) (string, error) {
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
}

// prepareSite asks the server driver to prepare each Site of the design
// until it is done.
func (e *Engine) prepareSite(ctx context.Context, d *design.Design) (string, error) {
	var msgs []string
	for _, site := range driverspec.Sites(d) {
		msg, err := e.prepareOneSite(ctx, site)
		if err != nil {
			if len(d.SiteNames()) > 1 {
				return "", fmt.Errorf("site %s: %w", site.Name, err)
			}
			return "", err
		}
		msgs = append(msgs, msg)
	}
	return strings.Join(msgs, "; "), nil
}

// prepareOneSite prepares one Site until the driver says it is done.
func (e *Engine) prepareOneSite(ctx context.Context, site drivers.SiteSpec) (string, error) {
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

// verifyPreflight runs the deploy preflight for every node of the design:
// a Permanent error naming what is missing.
func (e *Engine) verifyPreflight(d *design.Design, info drivers.SiteInfo) (string, error) {
	p := planPreflight(d, d.NodeNames(), true, e.overridden(e.ctx))
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
