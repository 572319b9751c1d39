package api

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/gitsync"
)

// GitSync is the git source serve follows (package gitsync): its status
// (read from the state store, so any replica answers), a webhook
// delivery and an approval (both on the leader: they are mutating).
type GitSync interface {
	Status(ctx context.Context) (gitsync.Status, error)
	Webhook(ctx context.Context, h http.Header, body []byte) (gitsync.WebhookResult, error)
	// Approve: bindings says the caller may approve a credential
	// binding change (an admin, as for POST /designs).
	Approve(ctx context.Context, commit, who string, bindings bool) (gitsync.Event, error)
}

// errNoGit answers the git routes of a server that follows no remote.
var errNoGit = problem(http.StatusNotFound, "this server follows no git remote: add a git: block (url, branch, path) to serve's configuration (docs/gitops.md)")

func (s *Server) gitRoutes() []route {
	none := http.StatusNotFound
	return []route{
		{Method: "GET", Path: v1 + "/git/status", Role: auth.RoleViewer, Response: apitypes.GitStatus{}, Problems: []int{none},
			Summary: "the git source: remote, last fetch, last commit applied, the one held for approval, the last refused or invalid, recent events", handler: s.gitStatus},
		{Method: "POST", Path: v1 + "/git/approve", Role: auth.RoleOperator, Mutating: true, Request: apitypes.GitApproval{}, Response: apitypes.GitEvent{},
			Problems: []int{none, http.StatusConflict},
			Summary:  "apply the commit held for approval (its plan has destructive actions), naming it", handler: s.gitApprove},
		{Method: "POST", Path: v1 + "/git/webhook", Mutating: true, Request: map[string]any{}, Response: apitypes.GitWebhookAnswer{},
			OK: []int{http.StatusOK, http.StatusAccepted}, Problems: []int{http.StatusUnauthorized, none, http.StatusRequestEntityTooLarge},
			Summary: "a GitHub or GitLab push event, verified by its HMAC signature (X-Hub-Signature-256) or token (X-Gitlab-Token): a push to the followed branch starts a round; no bearer token", handler: s.gitWebhook},
	}
}

func (s *Server) gitStatus(c echo.Context) error {
	if s.cfg.Git == nil {
		return errNoGit
	}
	st, err := s.cfg.Git.Status(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, gitStatusOf(st))
}

func (s *Server) gitApprove(c echo.Context) error {
	var b apitypes.GitApproval
	err := bindStrict(c, &b)
	auditWhat(c, AuditWhat{Action: "git.approve", Targets: []string{"commit:" + b.Commit}})
	switch {
	case err != nil:
		return err
	case s.cfg.Git == nil:
		return errNoGit
	}
	ev, err := s.cfg.Git.Approve(c.Request().Context(), b.Commit, who(c), principal(c).Role.Allows(RoleAdmin))
	switch {
	case errors.Is(err, gitsync.ErrNeedsAdmin):
		return problem(http.StatusForbidden, err.Error())
	case errors.Is(err, gitsync.ErrBadCommit):
		return problem(http.StatusBadRequest, err.Error())
	case errors.Is(err, gitsync.ErrNotHeld):
		return problem(http.StatusConflict, err.Error())
	case err != nil:
		return err
	}
	auditWhat(c, AuditWhat{Action: "git.approve", Targets: []string{"commit:" + ev.Commit, "revision:" + ev.Revision}})
	return c.JSON(http.StatusOK, gitEventOf(ev))
}

// gitWebhook reads the body (bounded by the route's limit) before
// verifying it; a delivery not verified gets a 401 and its audit record.
func (s *Server) gitWebhook(c echo.Context) error {
	req := c.Request()
	delivery := req.Header.Get("X-GitHub-Delivery") + req.Header.Get("X-Gitlab-Event-UUID")
	auditWhat(c, AuditWhat{Action: "git.webhook", Targets: []string{"delivery:" + delivery}})
	if s.cfg.Git == nil {
		return errNoGit
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, gitsync.MaxWebhookBody+1))
	if err != nil {
		return err // the body limit's 413
	}
	if len(body) > gitsync.MaxWebhookBody {
		return problem(http.StatusRequestEntityTooLarge, "a webhook body is at most 1 MiB")
	}
	res, err := s.cfg.Git.Webhook(req.Context(), req.Header, body)
	switch {
	case errors.Is(err, gitsync.ErrUnauthorized):
		return problem(http.StatusUnauthorized, err.Error())
	case errors.Is(err, gitsync.ErrNoWebhook):
		return problem(http.StatusNotFound, err.Error())
	case err != nil:
		return err
	}
	status := "ignored"
	switch {
	case res.Started:
		status = "started"
	case res.Status == http.StatusOK:
		status = "handled"
	}
	return c.JSON(res.Status, apitypes.GitWebhookAnswer{Status: status, Message: res.Message})
}

func gitStatusOf(st gitsync.Status) apitypes.GitStatus {
	out := apitypes.GitStatus{Remote: st.Remote, Branch: st.Branch, Path: st.Path, Events: make([]apitypes.GitEvent, 0, len(st.Events))}
	if f := st.LastFetch; f != nil {
		out.LastFetch = &apitypes.GitFetch{Time: f.Time, Commit: f.Commit, Error: f.Error}
	}
	if a := st.Applied; a != nil {
		out.Applied = &apitypes.GitApplied{Commit: a.Commit, Revision: a.Revision, Result: a.Result, Author: a.Author, Message: a.Message, Time: a.Time}
	}
	if h := st.Held; h != nil {
		out.Held = &apitypes.GitHeld{Commit: h.Commit, Revision: h.Revision, Destructive: h.Destructive, Author: h.Author, Message: h.Message, Time: h.Time,
			AdminApproves: h.Bindings}
	}
	if r := st.Rejected; r != nil {
		out.Rejected = &apitypes.GitRejected{Commit: r.Commit, Outcome: r.Outcome, Reason: r.Reason, Findings: r.Findings, Time: r.Time}
	}
	for _, e := range st.Events {
		out.Events = append(out.Events, gitEventOf(e))
	}
	return out
}

func gitEventOf(e gitsync.Event) apitypes.GitEvent {
	return apitypes.GitEvent{Time: e.Time, Trigger: e.Trigger, Commit: e.Commit, Outcome: e.Outcome, Revision: e.Revision, Reason: e.Reason}
}
