package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
)

func paging(c echo.Context) (offset, limit int, err error) {
	offset, limit = 0, 100
	if v := c.QueryParam("offset"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil || offset < 0 {
			return 0, 0, problem(http.StatusBadRequest, "offset: want a number ≥ 0")
		}
	}
	if v := c.QueryParam("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 10000 {
			return 0, 0, problem(http.StatusBadRequest, "limit: want a number from 1 to 10000")
		}
	}
	return offset, limit, nil
}

func page[T any](items []T, offset, limit int) Page[T] {
	p := Page[T]{Total: len(items), Offset: offset, Limit: limit, Items: []T{}}
	if offset < len(items) {
		p.Items = items[offset:min(offset+limit, len(items))]
	}
	return p
}

// listNodes: ?name=&label=k=v&tag=&rack=&lifecycle=&stage=&outcome=&offset=&limit=
func (s *Server) listNodes(c echo.Context) error {
	ctx := c.Request().Context()
	offset, limit, err := paging(c)
	if err != nil {
		return err
	}
	cur, err := s.currentID(ctx)
	if err != nil {
		if errors.Is(err, statestore.ErrNotFound) {
			return c.JSON(http.StatusOK, page([]NodeSummary{}, offset, limit))
		}
		return err
	}
	d, err := s.design(ctx, cur)
	if err != nil {
		return err
	}
	recs, err := s.cfg.Engine.Nodes(ctx)
	if err != nil {
		return err
	}
	byName := make(map[string]*record.NodeRecord, len(recs)) // into recs: no second copy of every record
	for i := range recs {
		byName[recs[i].Name] = &recs[i]
	}
	recOf := func(name string) record.NodeRecord {
		if r := byName[name]; r != nil {
			return *r
		}
		return record.NodeRecord{}
	}
	q := c.QueryParams()
	f, err := nodeFilterOf(q)
	if err != nil {
		return err
	}
	var match []string // the filter is applied to all; summaries are built for the page only
	for _, name := range d.NodeNames() {
		if f.Matches(d.Nodes[name]) && siteMatches(d, d.Nodes[name], q["site"]) && recordMatches(withStage(recOf(name)), q) {
			match = append(match, name)
		}
	}
	if len(q["site"]) == 0 { // an orphan has left the design, and its Site with it
		match = append(match, orphans(d, recs, q)...) // reconcile.go
	}
	p := page(match, offset, limit)
	items := make([]NodeSummary, 0, len(p.Items))
	for _, name := range p.Items {
		sum := nodeSummary(d.Nodes[name], recOf(name))
		if n := d.Nodes[name]; n != nil {
			sum.Site = d.SiteNameOf(n)
		}
		items = append(items, sum)
	}
	return c.JSON(http.StatusOK, Page[NodeSummary]{Items: items, Total: p.Total, Offset: offset, Limit: limit})
}

// siteMatches: the node is in one of the Sites asked for (none: any).
func siteMatches(d *design.Design, n *design.Node, want []string) bool {
	return len(want) == 0 || slices.Contains(want, d.SiteNameOf(n))
}

// nodeFilterOf is the design filter of a node query: names, tags, racks,
// labels (key=value).
func nodeFilterOf(q url.Values) (design.NodeFilter, error) {
	f := design.NodeFilter{Names: q["name"], Tags: q["tag"], Racks: q["rack"]}
	for _, l := range q["label"] {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return f, problem(http.StatusBadRequest, fmt.Sprintf("label %q: want key=value", l))
		}
		if f.Labels == nil {
			f.Labels = map[string]string{}
		}
		f.Labels[k] = v
	}
	return f, nil
}

// recordMatches: the node's record has a stage, outcome and lifecycle
// state the query allows (any, for a parameter it leaves out).
func recordMatches(r record.NodeRecord, q url.Values) bool {
	allows := func(key, v string) bool { vs := q[key]; return len(vs) == 0 || slices.Contains(vs, v) }
	return allows("stage", string(r.Stage)) && allows("outcome", string(r.Outcome)) && allows("lifecycle", string(r.LifecycleState()))
}

// withStage is r with the pending stage when it has none (a node no task
// has driven yet).
func withStage(r record.NodeRecord) record.NodeRecord {
	if r.Stage == "" {
		r.Stage = record.StagePending
	}
	return r
}

// nodeSummary is a design node's summary with its record (an orphan's
// when n is nil).
func nodeSummary(n *design.Node, r record.NodeRecord) NodeSummary {
	if n == nil {
		return orphanSummary(r)
	}
	r = withStage(r)
	return NodeSummary{Name: n.Metadata.Name, Rack: n.Spec.Rack, Labels: n.Metadata.Labels, Tags: n.Spec.Tags,
		Lifecycle: r.LifecycleState(), LastTask: r.LastTask, Action: r.Action, Stage: r.Stage, Outcome: r.Outcome, MachineID: r.MachineID, Observed: r.Observed, Task: r.Task, Frozen: r.Frozen, Reason: r.Reason}
}

func (s *Server) getNode(c echo.Context) error {
	ctx := c.Request().Context()
	name := c.Param("name")
	out := NodeDetail{Name: name, Events: []apitypes.Event{}}
	if cur, err := s.currentID(ctx); err == nil {
		d, err := s.design(ctx, cur)
		if err != nil {
			return err
		}
		out.Revision = cur
		if rn, err := d.RenderNode(name); err == nil {
			wn := apitypes.FromRenderedNode(rn)
			out.Design = &wn
		}
	}
	rec, err := s.cfg.Engine.Node(ctx, name)
	switch {
	case err == nil:
		wr := wireNodeRecord(rec)
		out.Record = &wr
	case !errors.Is(err, orchestrator.ErrNotFound):
		return err
	}
	if out.Design == nil && out.Record == nil {
		return problem(http.StatusNotFound, fmt.Sprintf("node %q is neither in the current design nor known to the engine", name))
	}
	evs, err := s.cfg.Engine.Events(ctx, 0, 0, "", name)
	if err != nil {
		return err
	}
	out.Events = append(out.Events, wireEvents(evs[max(0, len(evs)-20):])...)
	return c.JSON(http.StatusOK, out)
}

// maxReason bounds a mark-manual-intervention reason, in bytes.
const maxReason = 1024

// maxMachineID bounds an adopted machine's ID, in bytes.
const maxMachineID = 200

// rebootstrap answers with the node's new bootstrap environment and user
// data. They hold the node's introspection token, with which its boot
// actions' rendered secrets can be fetched: the route is for admins,
// like the secrets, and the answer is never logged or audited.
func (s *Server) rebootstrap(c echo.Context) error {
	auditWhat(c, AuditWhat{Action: "node.rebootstrap", Verb: "rebootstrap", Targets: []string{c.Param("name")}})
	out, err := s.cfg.Engine.Rebootstrap(c.Request().Context(), c.Param("name"), who(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wireRebootstrapped(out))
}

func (s *Server) nodeVerb(verb string) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		auditWhat(c, AuditWhat{Action: "node." + verb, Verb: verb, Targets: []string{c.Param("name")}})
		var b apitypes.NodeVerbRequest
		if err := bindOptional(c, &b); err != nil {
			return err
		}
		if len(b.Machine) > maxMachineID {
			return problem(http.StatusBadRequest, fmt.Sprintf("machine (%d bytes) too long: use at most %d", len(b.Machine), maxMachineID))
		}
		if len(b.Reason) > maxReason || len(b.Revision) > statestore.IDLen {
			return problem(http.StatusBadRequest, fmt.Sprintf("reason (%d bytes) or designRevision (%d) too long: use at most %d and %d", len(b.Reason), len(b.Revision), maxReason, statestore.IDLen))
		}
		name := c.Param("name")
		var rec record.NodeRecord
		var err error
		switch verb {
		case "adopt":
			if b.Machine != "" { // the audit record names the machine attached too
				auditWhat(c, AuditWhat{Action: "node." + verb, Verb: verb, Targets: []string{name, "machine:" + b.Machine}})
			}
			rec, err = s.cfg.Engine.AdoptMachine(ctx, name, b.Machine, b.Revision, who(c))
		case "mark-manual-intervention":
			rec, err = s.cfg.Engine.MarkManual(ctx, name, b.Reason, who(c))
		default:
			rec, err = s.cfg.Engine.ReleaseManual(ctx, name, who(c))
		}
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, wireNodeRecord(rec))
	}
}

// BootData renders what the introspection API serves a node (the
// introspection server is one). Its errors may carry an HTTPStatus.
type BootData interface {
	BootData(ctx context.Context, node, part string) ([]byte, string, error)
}

func (s *Server) bootData(c echo.Context) error {
	if s.cfg.BootData == nil {
		return problem(http.StatusNotImplemented, "this server does not serve the introspection API (set introspectionListen)")
	}
	b, ctype, err := s.cfg.BootData.BootData(c.Request().Context(), c.Param("name"), c.Param("part"))
	var st interface{ HTTPStatus() int }
	switch {
	case errors.As(err, &st):
		return problem(st.HTTPStatus(), err.Error())
	case err != nil:
		return err
	}
	return c.Blob(http.StatusOK, ctype, b)
}
