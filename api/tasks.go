package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
)

// bindStrict decodes a JSON body, refusing unknown fields.
func bindStrict(c echo.Context, v any) error {
	dec := json.NewDecoder(c.Request().Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return problem(http.StatusRequestEntityTooLarge, "request body over the limit")
		}
		return problem(http.StatusBadRequest, "request body: "+err.Error())
	}
	return nil
}

// bindOptional is bindStrict for a body that may be empty.
func bindOptional(c echo.Context, v any) error {
	r := c.Request()
	if r.ContentLength == 0 {
		return nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return problem(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over the limit of %d bytes", mbe.Limit))
		}
		return problem(http.StatusBadRequest, "request body: "+err.Error())
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return problem(http.StatusBadRequest, "request body: "+err.Error())
	}
	return nil
}

func (s *Server) createTask(c echo.Context) error {
	var b apitypes.TaskRequest
	if err := bindStrict(c, &b); err != nil {
		return err
	}
	a, err := record.ParseAction(string(b.Action))
	if err != nil {
		return problem(http.StatusBadRequest, err.Error())
	}
	auditWhat(c, AuditWhat{Action: "task.create", Verb: string(a)})
	filter, opts := recordFilter(b.NodeFilter), recordOptions(b.Options)
	if err := filter.Validate(); err != nil {
		return problem(http.StatusBadRequest, err.Error())
	}
	if err := opts.Check(a); err != nil {
		return problem(http.StatusBadRequest, err.Error())
	}
	if len(b.DesignRevision) > statestore.IDLen {
		return problem(http.StatusBadRequest, fmt.Sprintf("designRevision is %d bytes long: give a revision ID (%d hex characters) or a prefix of one", len(b.DesignRevision), statestore.IDLen))
	}
	t, err := s.cfg.Engine.Submit(c.Request().Context(), record.Request{Action: a, Filter: filter,
		Revision: b.DesignRevision, Requester: who(c), Correlation: requestIDOf(c), Options: opts})
	if err != nil {
		status, _ := statusOf(err)
		if status == http.StatusInternalServerError { // the engine's refusals are the caller's to fix
			return problem(http.StatusUnprocessableEntity, err.Error())
		}
		return err
	}
	auditWhat(c, AuditWhat{Action: "task.create", Verb: string(a), Task: t.ID, Targets: t.Nodes})
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/tasks/"+t.ID)
	return c.JSON(http.StatusCreated, wireTask(t))
}

func (s *Server) listTasks(c echo.Context) error {
	offset, limit, err := paging(c)
	if err != nil {
		return err
	}
	q := c.QueryParams()
	out, err := s.tasksNewestFirst(c.Request().Context(), q["status"], func(t record.Task) bool {
		ac := q["action"]
		return len(ac) == 0 || slices.Contains(ac, string(t.Action))
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page(wireTasks(out), offset, limit))
}

// tasksNewestFirst are the engine's tasks, newest first, of the statuses
// asked (none: all) that keep accepts.
func (s *Server) tasksNewestFirst(ctx context.Context, status []string, keep func(record.Task) bool) ([]record.Task, error) {
	ts, err := s.cfg.Engine.Tasks(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]record.Task, 0, len(ts))
	for i := len(ts) - 1; i >= 0; i-- {
		if t := ts[i]; (len(status) == 0 || slices.Contains(status, string(t.Status))) && keep(t) {
			out = append(out, t)
		}
	}
	return out, nil
}

func (s *Server) getTask(c echo.Context) error {
	t, res, err := s.cfg.Engine.Task(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	if res == nil {
		res = []record.NodeResult{}
	}
	return c.JSON(http.StatusOK, TaskDetail{Task: wireTask(t), Results: wireResults(res)})
}

func (s *Server) taskVerb(c echo.Context) error {
	v := record.Verb(c.Param("verb"))
	if !slices.Contains(taskVerbs, v) {
		return problem(http.StatusNotFound, "unknown task verb "+string(v)+": use retry, resume, rerun, restart-clean or cancel")
	}
	// The task's events keep the correlation ID of the call that created
	// it; this call's record names the task.
	auditWhat(c, AuditWhat{Action: "task." + string(v), Verb: string(v), Task: c.Param("id"), Targets: []string{c.Param("id")}})
	t, err := s.cfg.Engine.TaskVerb(c.Request().Context(), c.Param("id"), v, who(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, wireTask(t))
}
