package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// Decommission workflows: views over the engine's decommission_nodes
// tasks, not a second engine. A decommission releases the node's machine
// (erasing its disks) and deletes it from the provisioner; a storage
// cleanup only releases and erases it (it stays, Ready). The workflow's ID
// is its task's; its verbs are the task's (retry, resume, rerun,
// restart-clean, cancel) and the node's (adopt, mark-manual-intervention).

// Workflow kinds.
const (
	kindDecommission   = "decommission"
	kindStorageCleanup = "storage-cleanup"
)

// workflowVerbs are the verbs of a workflow.
var workflowVerbs = []string{"retry", "resume", "rerun", "restart-clean", "cancel", "adopt", "mark-manual-intervention"}

func (s *Server) workflowRoutes() []route {
	admin := auth.RoleAdmin
	start := func(path, kind, summary string) route {
		return route{Method: "POST", Path: v1 + "/admin/nodes/:id/" + path, Role: admin, Mutating: true, Request: apitypes.DecommissionRequest{},
			OptionalBody: true, OK: []int{http.StatusCreated}, Response: apitypes.Workflow{},
			Problems: []int{http.StatusConflict, http.StatusUnprocessableEntity}, Summary: summary, handler: s.startDecommission(kind)}
	}
	return []route{
		start("decommission", kindDecommission, "decommission a node: release its machine (disks erased) and delete it from the provisioner"),
		start("storage-cleanup", kindStorageCleanup, "clean a node's storage: release its machine with its disks erased (securely unless told otherwise); it stays in the provisioner"),
	}
}

// decommissionRoutes are the decommission workflows' routes under prefix
// (in table(): under /api/v1/admin, and their aliases under /api/v1).
func (s *Server) decommissionRoutes(prefix string) []route {
	admin := auth.RoleAdmin
	return []route{
		{Method: "GET", Path: prefix + "/decommissions", Role: admin, Response: apitypes.Page[apitypes.Workflow]{},
			Query: []param{{Name: "status", Many: true}, offsetParam, limitParam}, Summary: "decommission workflows, newest first", handler: s.listDecommissions},
		{Method: "GET", Path: prefix + "/decommissions/:id", Role: admin, Response: apitypes.Workflow{}, Summary: "a decommission workflow", handler: s.getDecommission},
		{Method: "POST", Path: prefix + "/decommissions/:id/:verb", Role: admin, Mutating: true, OK: []int{http.StatusAccepted}, Response: apitypes.Workflow{},
			Problems: []int{http.StatusConflict}, Summary: "a workflow verb: " + fmt.Sprint(workflowVerbs), handler: s.decommissionVerb},
	}
}

// startDecommission submits the node's decommission_nodes task.
func (s *Server) startDecommission(kind string) echo.HandlerFunc {
	return func(c echo.Context) error {
		node := c.Param("id")
		auditWhat(c, AuditWhat{Action: "node." + kind, Verb: string(record.ActionDecommissionNodes), Targets: []string{node}})
		var b apitypes.DecommissionRequest
		if err := bindOptional(c, &b); err != nil {
			return err
		}
		opts := &record.TaskOptions{Erase: b.Erase, Delete: kind == kindDecommission}
		if kind == kindStorageCleanup && opts.Erase == "" {
			opts.Erase = string(drivers.EraseSecure)
		}
		if err := opts.Check(record.ActionDecommissionNodes); err != nil {
			return problem(http.StatusBadRequest, err.Error())
		}
		t, err := s.cfg.Engine.Submit(c.Request().Context(), record.Request{Action: record.ActionDecommissionNodes,
			Filter:    record.Filter{Sets: []design.NodeFilter{{Names: []string{node}}}},
			Requester: who(c), Correlation: requestIDOf(c), Options: opts})
		if err != nil {
			if status, _ := statusOf(err); status == http.StatusInternalServerError {
				return problem(http.StatusUnprocessableEntity, err.Error())
			}
			return err
		}
		auditWhat(c, AuditWhat{Action: "node." + kind, Verb: string(t.Action), Task: t.ID, Targets: []string{node}})
		c.Response().Header().Set(echo.HeaderLocation, v1+"/admin/decommissions/"+t.ID)
		return c.JSON(http.StatusCreated, workflowOf(t, nil))
	}
}

func (s *Server) listDecommissions(c echo.Context) error {
	offset, limit, err := paging(c)
	if err != nil {
		return err
	}
	ts, err := s.tasksNewestFirst(c.Request().Context(), c.QueryParams()["status"], func(t record.Task) bool {
		return t.Action == record.ActionDecommissionNodes
	})
	if err != nil {
		return err
	}
	out := make([]apitypes.Workflow, 0, len(ts))
	for _, t := range ts {
		out = append(out, workflowOf(t, nil))
	}
	return c.JSON(http.StatusOK, page(out, offset, limit))
}

func (s *Server) getDecommission(c echo.Context) error {
	w, err := s.decommission(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, w)
}

// decommission is workflow id: its task, which must be a decommission.
func (s *Server) decommission(ctx context.Context, id string) (apitypes.Workflow, error) {
	t, res, err := s.cfg.Engine.Task(ctx, id)
	if err != nil {
		return apitypes.Workflow{}, err
	}
	if t.Action != record.ActionDecommissionNodes {
		return apitypes.Workflow{}, problem(http.StatusNotFound, fmt.Sprintf("task %s is a %s task, not a decommission", t.ID, t.Action))
	}
	return workflowOf(t, res), nil
}

// decommissionVerb applies a task verb to the workflow's task, or a node
// verb to its node.
func (s *Server) decommissionVerb(c echo.Context) error {
	ctx, id, verb := c.Request().Context(), c.Param("id"), c.Param("verb")
	if !slices.Contains(workflowVerbs, verb) {
		return problem(http.StatusNotFound, fmt.Sprintf("unknown workflow verb %s: use %v", verb, workflowVerbs))
	}
	auditWhat(c, AuditWhat{Action: "decommission." + verb, Verb: verb, Task: id, Targets: []string{id}})
	w, err := s.decommission(ctx, id)
	if err != nil {
		return err
	}
	if err := s.workflowVerb(c, id, w.Nodes, verb, "decommission "+id); err != nil {
		return err
	}
	if w, err = s.decommission(ctx, id); err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, w)
}

// workflowVerb applies verb: a node verb to each of nodes, a task verb to
// task. what names the workflow in a manual-intervention mark.
func (s *Server) workflowVerb(c echo.Context, task string, nodes []string, verb, what string) error {
	ctx := c.Request().Context()
	switch verb {
	case "adopt", "mark-manual-intervention":
		for _, n := range nodes {
			var err error
			if verb == "adopt" {
				_, err = s.cfg.Engine.Adopt(ctx, n, "", who(c))
			} else {
				_, err = s.cfg.Engine.MarkManual(ctx, n, "marked through "+what, who(c))
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	_, err := s.cfg.Engine.TaskVerb(ctx, task, record.Verb(verb), who(c))
	return err
}

// workflowOf is a decommission task as a workflow.
func workflowOf(t record.Task, res []record.NodeResult) apitypes.Workflow {
	kind := kindStorageCleanup
	if t.Options != nil && t.Options.Delete {
		kind = kindDecommission
	}
	if res == nil {
		res = []record.NodeResult{}
	}
	nodes := t.Nodes
	if nodes == nil {
		nodes = []string{}
	}
	return apitypes.Workflow{ID: t.ID, Kind: kind, Nodes: nodes, Task: wireTask(t), Results: wireResults(res)}
}
