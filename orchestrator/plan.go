package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
	"golang.org/x/sync/errgroup"
)

// planBatch is the most nodes one PlanNodes call asks about (the status
// poll's batch).
const planBatch = statusBatch

// planBatchesAtOnce is how many PlanNodes calls run at once: one batch's
// machines are read while the one before it is planned node by node.
const planBatchesAtOnce = 2

// noPlanner is the plan's note when the server driver cannot plan.
const noPlanner = "the server driver cannot plan: from designs and records only"

// Plan says, without changing anything, what applying design d (content
// address id) over the current revision and then deploying would do to
// each node's machine and to each site: the rules are in
// docs/operations.md ("What a plan says"). It reads the current
// revision, the node records and, when the server driver implements
// drivers.ServerPlanner, the provisioner (PlanNodes in batches of
// planBatch, PlanSite once per site); it resolves no secret.
func (e *Engine) Plan(ctx context.Context, d *design.Design, id string) (record.Plan, error) {
	if d == nil {
		return record.Plan{}, errors.New("plan: no design given")
	}
	p := record.Plan{To: id, Created: now(), Counts: map[record.PlanAction]int{}}
	cur, curD, err := e.planFrom(ctx)
	if err != nil {
		return p, err
	}
	p.From = cur
	recs, err := e.rec.nodes(ctx)
	if err != nil {
		return p, fmt.Errorf("plan: read the node records: %w", err)
	}
	ins := e.planInputs(ctx, cur, d, recs)
	planner, err := e.observePlan(ctx, ins)
	if err != nil {
		return p, err
	}
	if p.Sites, err = e.planSites(ctx, planner, curD, d); errors.Is(err, drivers.ErrCannotPlan) {
		planner = nil // a wrapper's driver behind cannot plan: from the designs and records
		for _, in := range ins {
			in.Observed = nil
		}
		p.Sites, err = e.planSites(ctx, nil, curD, d)
	}
	if err != nil {
		return p, err
	}
	p.Sites = planImages(p.Sites, curD, d) // plan_images.go
	if p.Observed = planner != nil; !p.Observed {
		p.Notes = append(p.Notes, noPlanner)
	} else {
		p.Notes = append(p.Notes, unboundNotes(curD, d)...)
	}
	for _, in := range ins {
		p.Nodes = append(p.Nodes, classify(in.planInput))
	}
	sortPlan(&p)
	return p, nil
}

// planFrom is the current revision's ID and design ("" and nil when
// there is none).
func (e *Engine) planFrom(ctx context.Context) (string, *design.Design, error) {
	id, err := statestore.CurrentID(ctx, e.cfg.Store)
	if errors.Is(err, statestore.ErrNotFound) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("plan: read the current revision: %w", err)
	}
	d, rid, err := e.design(ctx, id)
	if err != nil {
		return "", nil, fmt.Errorf("plan: read revision %s: %w", short(id), err)
	}
	return rid, d, nil
}

// sortPlan orders the nodes (destructive first, then by action and
// name), counts them and lists the destructive ones in words.
func sortPlan(p *record.Plan) {
	sort.SliceStable(p.Nodes, func(i, j int) bool {
		a, b := slices.Index(record.PlanActions, p.Nodes[i].Action), slices.Index(record.PlanActions, p.Nodes[j].Action)
		if a != b {
			return a < b
		}
		return p.Nodes[i].Node < p.Nodes[j].Node
	})
	for _, n := range p.Nodes {
		p.Counts[n.Action]++
		if n.Action.Destructive() {
			p.Destructive = append(p.Destructive, destructiveWords(n))
		}
	}
}

// destructiveWords is one destructive action in words: "release node-07
// (removed from the design; erase quick)".
func destructiveWords(n record.NodePlan) string {
	why := ""
	if len(n.Reasons) > 0 {
		why = n.Reasons[0]
	}
	if n.Action == record.PlanRelease {
		return fmt.Sprintf("%s %s (%s; erase %s)", n.Action, n.Node, why, n.Erase)
	}
	return fmt.Sprintf("%s %s (%s)", n.Action, n.Node, why)
}

// planNode is one node's input with what the planner needs of it.
type planNode struct {
	planInput
	spec *drivers.Node // the driver's view in the planned design (nil: not asked about)
}

// planInputs gathers every node of the planned design, and every node a
// record holds a machine for that the planned design lacks, by name.
func (e *Engine) planInputs(ctx context.Context, cur string, d *design.Design, recs []record.NodeRecord) []*planNode {
	byName := make(map[string]record.NodeRecord, len(recs))
	for _, r := range recs {
		byName[r.Name] = r
	}
	bl := &baselines{e: e, cur: cur, tasks: map[string]string{}}
	var out []*planNode
	for _, name := range d.NodeNames() {
		out = append(out, e.planNodeIn(ctx, bl, d, name, byName[name]))
	}
	for _, r := range recs {
		if d.Nodes[r.Name] == nil && holds(r) {
			out = append(out, e.planNodeIn(ctx, bl, d, r.Name, r))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// planNodeIn is one node's input: its view in the design its machine
// was deployed with and in d, without secrets.
func (e *Engine) planNodeIn(ctx context.Context, bl *baselines, d *design.Design, name string, rec record.NodeRecord) *planNode {
	if rec.Name == "" {
		rec = record.NodeRecord{Name: name, Stage: record.StagePending}
	}
	pn := &planNode{planInput: planInput{Name: name, Rec: rec, Repairs: siteRepairs(d)}}
	od := bl.of(ctx, rec)
	if (od == nil || od.Nodes[name] == nil) && d.Nodes[name] == nil {
		od, _ = e.lastDesignOf(ctx, name) // an orphan: the revision destroy releases it with
	}
	if od != nil && od.Nodes[name] != nil {
		on := od.Nodes[name]
		spec := e.planSpec(ctx, od, on, rec.MachineID, &pn.Notes)
		pn.Old, pn.OldSite, pn.Erase = &spec, od.SiteNameOf(on), e.planErase(ctx, od, on)
	}
	if rec.Task != "" {
		pn.Notes = append(pn.Notes, fmt.Sprintf("task %s drives the node now (%s): the plan is as of its last checkpoint", rec.Task, rec.Stage))
	}
	if n := d.Nodes[name]; n != nil {
		spec := e.planSpec(ctx, d, n, rec.MachineID, &pn.Notes)
		pn.New, pn.NewSite, pn.spec = &spec, d.SiteNameOf(n), &spec
	}
	return pn
}

// planSpec is the driver's view of node n of d with its site profile,
// its BMC password left out (a plan reads no secret).
func (e *Engine) planSpec(ctx context.Context, d *design.Design, n *design.Node, machineID string, notes *[]string) drivers.Node {
	dn := driverspec.Node(d, n, machineID)
	if err := e.withSiteProfile(ctx, d, n, &dn); err != nil {
		*notes = append(*notes, fmt.Sprintf("site profile not applied to the plan: %v", err))
	}
	return dn
}

// planErase is what the release of node n (as design d has it) erases,
// as destroy_nodes decides it (erasePolicy) for a task without options.
func (e *Engine) planErase(ctx context.Context, d *design.Design, n *design.Node) string {
	if n.Spec.Erase != "" {
		return n.Spec.Erase
	}
	if p, ok, err := e.siteProfile(ctx, d, n); err == nil && ok && p.Erase != "" {
		return p.Erase
	}
	if er := d.EraseOf(n); er != "" {
		return er
	}
	return string(e.cfg.Erase)
}

// baselines finds the design each node's machine was deployed with: the
// revision of the task that last brought the node to deployed (its
// history's newest transition to deployed), else the current revision.
type baselines struct {
	e     *Engine
	cur   string
	tasks map[string]string // task ID → its revision
}

func (b *baselines) of(ctx context.Context, r record.NodeRecord) *design.Design {
	rev := b.cur
	for i := len(r.History) - 1; i >= 0; i-- {
		if h := r.History[i]; h.To == record.StageDeployed && h.Task != "" {
			if t, ok := b.tasks[h.Task]; ok {
				rev = orDefault(t, rev)
				break
			}
			t, err := b.e.rec.task(ctx, h.Task)
			if err == nil {
				b.tasks[h.Task] = t.Revision
				rev = orDefault(t.Revision, rev)
			} else {
				b.tasks[h.Task] = ""
			}
			break
		}
	}
	if rev == "" {
		return nil
	}
	d, _, err := b.e.design(ctx, rev)
	if err != nil && rev != b.cur && b.cur != "" { // that revision is gone: the current one
		d, _, err = b.e.design(ctx, b.cur)
	}
	if err != nil {
		return nil
	}
	return d
}

// observePlan reads the provisioner for the nodes when the server driver
// can plan; the planner is nil when it cannot (it is no ServerPlanner,
// or a wrapper answers drivers.ErrCannotPlan for the driver behind it),
// and then no input holds an observation.
func (e *Engine) observePlan(ctx context.Context, ins []*planNode) (drivers.ServerPlanner, error) {
	planner, _ := e.cfg.Drivers.Server.(drivers.ServerPlanner)
	if planner == nil {
		return nil, nil
	}
	err := e.observeNodes(ctx, planner, ins)
	if errors.Is(err, drivers.ErrCannotPlan) {
		for _, in := range ins {
			in.Observed = nil
		}
		return nil, nil
	}
	return planner, err
}

// observeNodes asks the planner about the planned design's nodes that
// have a machine, planBatch at a time, under the provisioner's limits
// (a transient error is tried again, as a verb's read is).
func (e *Engine) observeNodes(ctx context.Context, planner drivers.ServerPlanner, ins []*planNode) error {
	var ask []*planNode
	for _, in := range ins {
		if in.spec != nil && in.Rec.MachineID != "" {
			ask = append(ask, in)
		} else if in.spec != nil {
			in.Observed = &drivers.MachinePlan{Node: in.Name} // no machine: nothing to read
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(planBatchesAtOnce)
	for start := 0; start < len(ask); start += planBatch {
		chunk := ask[start:min(start+planBatch, len(ask))]
		g.Go(func() error { return e.observeChunk(gctx, planner, chunk) })
	}
	return g.Wait()
}

// observeChunk asks the planner about one batch of nodes.
func (e *Engine) observeChunk(ctx context.Context, planner drivers.ServerPlanner, chunk []*planNode) error {
	nodes := make([]drivers.Node, len(chunk))
	for i, in := range chunk {
		nodes[i] = *in.spec
	}
	var mps []drivers.MachinePlan
	err := e.readServer(ctx, func(ctx context.Context) (err error) {
		mps, err = planner.PlanNodes(ctx, nodes)
		return err
	})
	if err == nil && len(mps) != len(nodes) {
		err = fmt.Errorf("the server driver answered %d machine plans for %d nodes", len(mps), len(nodes))
	}
	if err != nil {
		return fmt.Errorf("plan: reading the provisioner's machines of nodes %s..%s: %w; nothing was changed: try again",
			chunk[0].Name, chunk[len(chunk)-1].Name, err)
	}
	for i, in := range chunk {
		in.Observed = &mps[i]
	}
	return nil
}
