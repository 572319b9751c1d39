package orchestrator

import (
	"context"
	"slices"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// maxOrphanRevisions bounds how many stored revisions lastDesignOf reads
// back when the node's own tasks do not lead to one that has it.
const maxOrphanRevisions = 64

// orphansNamed returns the nodes a destroy request names that the
// design d no longer has but whose machine a node record still holds:
// removing a node from the design does not hide its machine, destroy
// can target it without naming the old revision.
func (e *Engine) orphansNamed(ctx context.Context, req record.Request, d *design.Design) ([]string, error) {
	if req.Action != record.ActionDestroyNodes {
		return nil, nil
	}
	if err := req.Filter.Validate(); err != nil {
		return nil, err
	}
	var out []string
	for _, s := range req.Filter.Sets {
		for _, name := range s.Names {
			if d.Nodes[name] != nil || slices.Contains(out, name) {
				continue
			}
			rec, ok, err := e.rec.node(ctx, name)
			if err != nil {
				return nil, err
			}
			if ok && rec.MachineID != "" {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// withoutNames is f without the names given (the others are checked
// against the design).
func withoutNames(f record.Filter, names []string) record.Filter {
	if len(names) == 0 {
		return f
	}
	out := record.Filter{Type: f.Type, Sets: make([]design.NodeFilter, len(f.Sets))}
	for i, s := range f.Sets {
		s.Names = slices.DeleteFunc(slices.Clone(s.Names), func(n string) bool { return slices.Contains(names, n) })
		out.Sets[i] = s
	}
	return out
}

// withOrphans adds the orphans to the selected nodes, sorted, once each.
func withOrphans(nodes, orphans []string) []string {
	for _, o := range orphans {
		if !slices.Contains(nodes, o) {
			nodes = append(nodes, o)
		}
	}
	slices.Sort(nodes)
	return nodes
}

// lastDesignOf finds the newest design revision that has the node: the
// revisions of the tasks in its record's history first (newest first),
// then the stored revisions (newest first, up to maxOrphanRevisions).
// nil when none has it.
func (e *Engine) lastDesignOf(ctx context.Context, name string) (*design.Design, *design.Node) {
	try := func(rev string) (*design.Design, *design.Node) {
		d, _, err := e.design(ctx, rev)
		if err != nil || d.Nodes[name] == nil {
			return nil, nil
		}
		return d, d.Nodes[name]
	}
	if rec, ok, err := e.rec.node(ctx, name); err == nil && ok {
		tried := map[string]bool{}
		for i := len(rec.History) - 1; i >= 0; i-- {
			id := rec.History[i].Task
			if id == "" || tried[id] {
				continue
			}
			tried[id] = true
			if t, err := e.rec.task(ctx, id); err == nil {
				if d, n := try(t.Revision); n != nil {
					return d, n
				}
			}
		}
	}
	hist, err := e.cfg.Store.History(ctx)
	if err != nil {
		return nil, nil
	}
	for i := len(hist) - 1; i >= 0 && i >= len(hist)-maxOrphanRevisions; i-- {
		if d, n := try(hist[i].ID); n != nil {
			return d, n
		}
	}
	return nil, nil
}

// Orphaned reports whether a node record is an orphan of design d: d no
// longer has the node, and its machine is still held (not released or
// deleted).
func Orphaned(d *design.Design, r record.NodeRecord) bool {
	if d == nil || d.Nodes[r.Name] != nil || r.MachineID == "" {
		return false
	}
	l := r.LifecycleState()
	return l != record.LifecycleReleased && l != record.LifecycleDeleted && r.Stage != record.StageReleased
}

// Orphans returns the records of nodes the current design no longer has
// whose machines are still held (none when there is no current design).
func (e *Engine) Orphans(ctx context.Context) (map[string]bool, error) {
	d := e.currentDesign(ctx)
	recs, err := e.rec.nodes(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, r := range recs {
		if Orphaned(d, r) {
			out[r.Name] = true
		}
	}
	return out, nil
}
