package orchestrator

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// Preflight, part 3: the nodes themselves. Before a deploy allocates, or
// a redeploy releases, anything, each node's deploy spec is built as the
// deploy stages build it (the design's node with its site profile's
// image, kernel and RoCE addresses, through withSiteProfile and
// driverspec.AddRoCE: what the upsert of RoCE assignments checks too),
// the images are checked as the specs name them, and a redeploy asks
// the BMCs it will need after the release whether they answer. A node
// that fails any of it fails the task where it stands: its machine stays
// as it was.

// bmcProbes bounds the BMC probes a preflight runs at once (each also
// takes the engine's OOB limit).
const bmcProbes = 16

// nodeFindings checks the task's nodes (see above) and re-plans p's
// images from the specs.
func (e *Engine) nodeFindings(run *taskRun, d *design.Design, p *preflightPlan) []finding {
	out := e.specFindings(run.ctx, d, run.task.Nodes, p)
	out = append(out, e.imageSyncFindings(run.ctx, d, run.task.Nodes)...) // preflight_images.go
	if run.task.Action == record.ActionRedeployNodes {
		out = append(out, e.bmcFindings(run.ctx, d, run.task.Nodes)...)
	}
	return out
}

// specFindings builds each node's deploy spec; a node whose spec can't
// be built is a finding. The images to check become the specs' (a site
// profile may name another series or kernel than the design).
func (e *Engine) specFindings(ctx context.Context, d *design.Design, nodes []string, p *preflightPlan) []finding {
	p.images = map[string]*imageNeed{}
	var out []finding
	for _, name := range nodes {
		n := d.Nodes[name]
		if n == nil {
			continue
		}
		dn := driverspec.Node(d, n, "")
		if err := e.withSiteProfile(ctx, d, n, &dn); err != nil { // siteprofile.go, as serverNode does
			what := strings.TrimPrefix(err.Error(), string(drivers.Classify(err))+": ")
			out = append(out, finding{what: what, users: "node " + name, nodes: []string{name},
				fix: "nothing was released or allocated; fix it as said, then run the task again"})
			continue
		}
		if im := declaredImage(d, n); im != nil && dn.Platform.Image == im.ProvisionerName() {
			continue // an Image document: the images stage syncs it (images_stage.go)
		}
		p.addImage(name, design.Platform{Image: dn.Platform.Image, Kernel: dn.Platform.Kernel})
	}
	return out
}

// bmcFindings probes the BMC of each pinned node (the stages after a
// redeploy's release drive it): a node none of whose OOB methods answers
// is a finding. A node whose methods can't be listed is left to the
// stages (a missing password is a secret finding already).
func (e *Engine) bmcFindings(ctx context.Context, d *design.Design, nodes []string) []finding {
	if e.cfg.Drivers.OOB == nil && len(e.cfg.Drivers.OOBByType) == 0 {
		return nil
	}
	var (
		mu   sync.Mutex
		out  []finding
		wg   sync.WaitGroup
		slot = make(chan struct{}, bmcProbes)
	)
	for _, name := range nodes {
		n := d.Nodes[name]
		if n == nil || n.Unpinned() {
			continue
		}
		ts, err := e.oobTargets(ctx, d, n)
		if err != nil || len(ts) == 0 {
			continue
		}
		wg.Add(1)
		slot <- struct{}{}
		go func() {
			defer func() { <-slot; wg.Done() }()
			for _, t := range ts {
				if e.answers(ctx, t) {
					return
				}
			}
			mu.Lock()
			defer mu.Unlock()
			out = append(out, finding{what: "the BMC at " + ts[0].bmc.Address + " does not answer (or refuses the credentials) over " + joinTypes(ts),
				users: "node " + name, nodes: []string{name},
				fix: "the machine was not released; make its BMC answer (network, power, credentials), then run the task again"})
		}()
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b finding) int { return strings.Compare(a.nodes[0], b.nodes[0]) })
	return out
}

func joinTypes(ts []oobTarget) string {
	types := make([]string, len(ts))
	for i, t := range ts {
		types[i] = t.typ
	}
	return strings.Join(types, " or ")
}

// checkBeforeRelease runs the node's checks (its deploy spec; its BMC)
// before the release of a workflow that deploys the machine again after
// it: redeploy, or restart-clean of a deploy. A new task's preflight
// checked already; a rerun, restart-clean or retry of one starts at the
// release with no preflight of its own. ok is true when a check failed
// (the node fails at releasing, its machine not released) or ctx ended.
func (r *nodeRun) checkBeforeRelease(ctx context.Context) (step, bool, error) {
	if r.rec.Action != record.ActionRedeployNodes && r.rec.Action != record.ActionDeployNodes {
		return step{}, false, nil // destroy: the release is the goal
	}
	var p preflightPlan
	fs := r.e.specFindings(ctx, r.d, []string{r.rec.Name}, &p)
	fs = append(fs, r.e.bmcFindings(ctx, r.d, []string{r.rec.Name})...)
	if err := ctx.Err(); err != nil {
		return step{}, true, err // cancelled or stopping: nothing recorded, the next round decides
	}
	if len(fs) == 0 {
		return step{}, false, nil
	}
	texts := make([]string, len(fs))
	for i, f := range fs {
		texts[i] = f.what
	}
	return failed("node %s, stage %s: %s; machine %s was not released: fix that, then retry the task",
		r.rec.Name, r.rec.Stage, strings.Join(texts, "; "), r.rec.MachineID), true, nil
}
