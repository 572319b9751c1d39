package client

import (
	"context"
	"net/http"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// ---- reconciliation ----

// ReconcileStatus is where reconciliation stands: the last run, the next,
// the open drift by kind.
func (c *Client) ReconcileStatus(ctx context.Context) (apitypes.ReconcileStatus, error) {
	var out apitypes.ReconcileStatus
	return out, c.get(ctx, v1+"/admin/reconciliation/status", nil, &out)
}

// DriftQuery filters the drift list (several values are alternatives).
type DriftQuery struct {
	Node, Kind    []string
	Offset, Limit int // Limit 0: the server's default (100)
}

// Drift lists the open drift records, one page.
func (c *Client) Drift(ctx context.Context, q DriftQuery) (apitypes.Page[apitypes.DriftRecord], error) {
	var out apitypes.Page[apitypes.DriftRecord]
	return out, c.get(ctx, v1+"/admin/reconciliation/drift", query(q.Offset, q.Limit, map[string][]string{"node": q.Node, "kind": q.Kind}), &out)
}

// Reconcile runs a reconciliation on the server now and answers its report.
func (c *Client) Reconcile(ctx context.Context) (apitypes.SweepReport, error) {
	var out apitypes.SweepReport
	return out, c.do(ctx, request{method: http.MethodPost, path: v1 + "/admin/reconciliation/run"}, &out)
}

// ResolveDrift resolves a node's drift of one kind: accept, repair or
// release.
func (c *Client) ResolveDrift(ctx context.Context, node string, kind record.DriftKind, res record.Resolution) (apitypes.DriftResolved, error) {
	var out apitypes.DriftResolved
	in := apitypes.DriftResolutionBody{Kind: kind, Resolution: res}
	return out, c.sendJSON(ctx, http.MethodPost, v1+"/admin/reconciliation/drift/"+seg(node)+"/resolve", in, &out)
}
