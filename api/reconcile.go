package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// Reconciler is what the reconciliation routes need of the engine (the
// orchestrator's Engine is one). An Engine that is not one answers 501.
type Reconciler interface {
	Reconcile(ctx context.Context, trigger string) (record.SweepReport, error)
	ReconcileStatus(ctx context.Context) (record.ReconcileStatus, error)
	Drift(ctx context.Context) ([]record.DriftRecord, error)
	ResolveDrift(ctx context.Context, node string, kind record.DriftKind, res record.Resolution, who, correlation string) (record.DriftResolved, error)
}

// reconcileRoutes are the reconciliation routes under prefix (in
// table(): under /api/v1/admin, and their aliases under /api/v1).
func (s *Server) reconcileRoutes(prefix string) []route {
	op, view := auth.RoleOperator, auth.RoleViewer
	none := []int{http.StatusNotImplemented}
	return []route{
		{Method: "GET", Path: prefix + "/reconciliation/status", Role: view, Response: apitypes.ReconcileStatus{}, Problems: none,
			Summary: "reconciliation: the last run, the next, the open drift by kind", handler: s.reconcileStatus},
		{Method: "GET", Path: prefix + "/reconciliation/drift", Role: view, Response: apitypes.Page[apitypes.DriftRecord]{}, Problems: none,
			Query:   []param{{Name: "node", Many: true}, {Name: "kind", Many: true, Enum: enum(record.DriftKinds)}, offsetParam, limitParam},
			Summary: "open drift records (filters, pages)", handler: s.listDrift},
		{Method: "POST", Path: prefix + "/reconciliation/run", Role: op, Mutating: true, Response: apitypes.SweepReport{}, Problems: none,
			Summary: "reconcile now; answers the run's report", handler: s.runReconcile},
		{Method: "POST", Path: prefix + "/reconciliation/drift/:node/resolve", Role: op, Mutating: true, Request: apitypes.DriftResolutionBody{},
			Response: apitypes.DriftResolved{}, Problems: []int{http.StatusConflict, http.StatusNotImplemented},
			Summary: "resolve a node's drift of one kind: accept, repair or release", handler: s.resolveDrift},
	}
}

func (s *Server) reconciler() (Reconciler, error) {
	r, ok := s.cfg.Engine.(Reconciler)
	if !ok {
		return nil, problem(http.StatusNotImplemented, "this server's engine does not reconcile")
	}
	return r, nil
}

func (s *Server) reconcileStatus(c echo.Context) error {
	r, err := s.reconciler()
	if err != nil {
		return err
	}
	st, err := r.ReconcileStatus(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wireReconcileStatus(st))
}

// listDrift: ?node=&kind=&offset=&limit= (several values are alternatives).
func (s *Server) listDrift(c echo.Context) error {
	r, err := s.reconciler()
	if err != nil {
		return err
	}
	offset, limit, err := paging(c)
	if err != nil {
		return err
	}
	q := c.QueryParams()
	for _, k := range q["kind"] {
		if _, err := record.ParseDriftKind(k); err != nil {
			return problem(http.StatusBadRequest, err.Error())
		}
	}
	ds, err := r.Drift(c.Request().Context())
	if err != nil {
		return err
	}
	ds = slices.DeleteFunc(ds, func(d record.DriftRecord) bool {
		return len(q["node"]) > 0 && !slices.Contains(q["node"], d.Node) || len(q["kind"]) > 0 && !slices.Contains(q["kind"], string(d.Kind))
	})
	return c.JSON(http.StatusOK, page(mapSlice(ds, wireDrift), offset, limit))
}

func (s *Server) runReconcile(c echo.Context) error {
	r, err := s.reconciler()
	if err != nil {
		return err
	}
	auditWhat(c, AuditWhat{Action: "reconciliation.run", Targets: []string{"reconciliation"}})
	rep, err := r.Reconcile(c.Request().Context(), who(c))
	if err != nil {
		return err
	}
	// What the run changed: drift recorded, cleared, repaired (node/kind).
	if changed := slices.Concat(rep.Detected, rep.Cleared, rep.Repaired); len(changed) > 0 {
		auditWhat(c, AuditWhat{Action: "reconciliation.run", Targets: changed})
	}
	return c.JSON(http.StatusOK, wireSweep(rep))
}

func (s *Server) resolveDrift(c echo.Context) error {
	r, err := s.reconciler()
	if err != nil {
		return err
	}
	node := c.Param("node")
	auditWhat(c, AuditWhat{Action: "drift.resolve", Targets: []string{node}})
	var b DriftResolutionBody
	if err := bindStrict(c, &b); err != nil {
		return err
	}
	if len(node) > record.MaxFilterValueLen {
		return problem(http.StatusBadRequest, fmt.Sprintf("node name of %d bytes: at most %d", len(node), record.MaxFilterValueLen))
	}
	kind, err := record.ParseDriftKind(string(b.Kind))
	if err != nil {
		return problem(http.StatusBadRequest, err.Error())
	}
	res, err := record.ParseResolution(string(b.Resolution))
	if err != nil {
		return problem(http.StatusBadRequest, err.Error())
	}
	auditWhat(c, AuditWhat{Action: "drift.resolve", Verb: string(res), Targets: []string{node + "/" + string(kind)}})
	out, err := r.ResolveDrift(c.Request().Context(), node, kind, res, who(c), requestIDOf(c))
	if err != nil {
		return err
	}
	if out.Task != "" {
		auditWhat(c, AuditWhat{Action: "drift.resolve", Verb: string(res), Task: out.Task, Targets: []string{node + "/" + string(kind)}})
	}
	return c.JSON(http.StatusOK, wireDriftResolved(out))
}

// orphans are the nodes the design d no longer has whose machine a node
// record still holds (not released): GET /nodes lists them after the
// design's, flagged, so that removing a node from the design does not
// hide its machine. The name, stage, outcome and lifecycle filters apply;
// label, tag and rack filters (the design's) select none of them.
func orphans(d *design.Design, recs []record.NodeRecord, q url.Values) []string {
	if len(q["label"])+len(q["tag"])+len(q["rack"]) > 0 {
		return nil
	}
	var out []string
	for _, r := range recs {
		if !orchestrator.Orphaned(d, r) {
			continue
		}
		if v := q["name"]; len(v) > 0 && !slices.Contains(v, r.Name) {
			continue
		}
		if v := q["stage"]; len(v) > 0 && !slices.Contains(v, string(r.Stage)) {
			continue
		}
		if v := q["outcome"]; len(v) > 0 && !slices.Contains(v, string(r.Outcome)) {
			continue
		}
		if v := q["lifecycle"]; len(v) > 0 && !slices.Contains(v, string(r.LifecycleState())) {
			continue
		}
		out = append(out, r.Name)
	}
	slices.Sort(out)
	return out
}

func orphanSummary(r record.NodeRecord) NodeSummary {
	why := "orphan: not in the current design, machine " + r.MachineID + " is still held; `orchestrator destroy --node " + r.Name + "` releases it"
	return NodeSummary{Name: r.Name, Orphan: true, Lifecycle: r.LifecycleState(), LastTask: r.LastTask, Action: r.Action, Stage: r.Stage,
		Outcome: r.Outcome, MachineID: r.MachineID, Observed: r.Observed, Task: r.Task, Frozen: r.Frozen, Reason: why}
}
