package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/statestore"
)

func result(d *design.Design, fs design.Findings) apitypes.ValidationResult {
	e, w := fs.Count()
	if fs == nil {
		fs = design.Findings{}
	}
	return apitypes.ValidationResult{Valid: !fs.HasErrors(), Errors: e, Warnings: w, Nodes: len(d.Nodes), Findings: apitypes.FromFindings(fs)}
}

func (s *Server) validateDesign(c echo.Context) error {
	up, done, err := s.loadUpload(c)
	if err != nil {
		return err
	}
	defer done()
	return c.JSON(http.StatusOK, result(up.d, up.fs))
}

func (s *Server) applyDesign(c echo.Context) error {
	ctx := c.Request().Context()
	auditWhat(c, AuditWhat{Action: "design.apply"})
	from, err := uploadProvenance(c, principal(c).Name) // provenance.go
	if err != nil {
		return err
	}
	approve := c.QueryParam("approve")
	if approve != "" && (len(approve) != statestore.IDLen || strings.Trim(approve, "0123456789abcdef") != "") {
		return problem(http.StatusBadRequest, fmt.Sprintf("approve %.70q: want the plan's approve (64 hex digits)", approve))
	}
	// One design change at a time: an apply and an onboarding each build
	// over the layer as it is (onboardings.go).
	s.designMu.Lock()
	defer s.designMu.Unlock()
	up, done, err := s.loadUpload(c)
	if err != nil {
		return err
	}
	defer done()
	if err := invalidUpload(up); err != nil { // plan.go
		return err
	}
	p, err := s.prepareApply(ctx, up) // applydir.go
	if err != nil {
		return err
	}
	auditWhat(c, AuditWhat{Action: "design.apply", Targets: []string{p.id}})
	if len(p.bindings) > 0 {
		what := "the design changes where credentials go or which ones are used: " + shortJoin(p.bindings, 5)
		if !principal(c).Role.Allows(RoleAdmin) {
			return problem(http.StatusForbidden, what+"; applying it needs an admin token (docs/api.md, Credential bindings)")
		}
		c.Set(auditDetailKey, "admin applied a credential or endpoint change: "+shortJoin(p.bindings, 5))
	}
	if d := p.needsApproval(true, false); len(d) > 0 && approve != approvalOf(p.id, d) {
		return destructiveRefusal(p.id, d) // plan.go
	}
	res, taken, err := s.commitApply(ctx, up, p, from)
	if err != nil {
		return err
	}
	out := p.applied(res, taken, len(up.kept))
	status := http.StatusCreated
	if res == statestore.Unchanged {
		status = http.StatusOK
	}
	return c.JSON(status, out)
}

func (s *Server) listDesigns(c echo.Context) error {
	h, err := s.cfg.Store.History(c.Request().Context())
	if err != nil {
		return err
	}
	plans, err := s.planSummaries(c.Request().Context()) // plan.go
	if err != nil {
		return err
	}
	out := make([]RevisionSummary, 0, len(h))
	for _, r := range h {
		out = append(out, RevisionSummary{ID: r.ID, Created: r.Created, Applied: r.Applied, Roots: r.Roots, Plan: plans[r.ID],
			GitCommit: r.GitCommit, GitDirty: r.GitDirty, GitAuthor: r.GitAuthor, GitMessage: r.GitMessage, Provenance: provenanceOf(r.Roots, r.GitCommit), Counts: r.Counts, Seq: r.Seq})
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) getDesign(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := s.revision(ctx, c.Param("rev"))
	if err != nil {
		return err
	}
	d, err := s.design(ctx, r.ID)
	if err != nil {
		return err
	}
	plan, err := s.planSummary(ctx, r.ID) // plan.go
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apitypes.RevisionInfo{ID: r.ID, Plan: plan, Created: r.Created, Roots: r.Roots, GitCommit: r.GitCommit,
		GitDirty: r.GitDirty, GitAuthor: r.GitAuthor, GitMessage: r.GitMessage, Provenance: provenanceOf(r.Roots, r.GitCommit),
		Counts: r.Counts, Nodes: d.NodeNames()})
}

func (s *Server) diffDesign(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := s.revision(ctx, c.Param("rev"))
	if err != nil {
		return err
	}
	var prev []byte
	if against := c.QueryParam("against"); against != "" {
		o, err := s.revision(ctx, against)
		if err != nil {
			return err
		}
		prev = o.Design
	} else {
		h, err := s.cfg.Store.History(ctx)
		if err != nil {
			return err
		}
		for i := len(h) - 1; i > 0; i-- {
			if h[i].ID == r.ID {
				o, err := s.cfg.Store.Revision(ctx, h[i-1].ID)
				if err != nil {
					return err
				}
				prev = o.Design
				break
			}
		}
	}
	df, err := design.DiffCanonical(prev, r.Design)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apitypes.FromDiff(df))
}

func (s *Server) designNode(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := s.revision(ctx, c.Param("rev"))
	if err != nil {
		return err
	}
	d, err := s.design(ctx, r.ID)
	if err != nil {
		return err
	}
	n, err := d.RenderNode(c.Param("name"))
	if err != nil {
		return problem(http.StatusNotFound, err.Error())
	}
	return c.JSON(http.StatusOK, apitypes.FromRenderedNode(n))
}

// revision resolves an ID, prefix or "current".
func (s *Server) revision(ctx context.Context, ref string) (statestore.Revision, error) {
	if ref == "current" {
		return s.cfg.Store.Current(ctx)
	}
	if _, err := statestore.NormalizeRef(ref); err != nil {
		return statestore.Revision{}, problem(http.StatusBadRequest, err.Error())
	}
	return s.cfg.Store.Revision(ctx, ref)
}

// currentID is the current revision's ID (without loading its design).
func (s *Server) currentID(ctx context.Context) (string, error) {
	return statestore.CurrentID(ctx, s.cfg.Store)
}

// design returns a revision's design, decoded once and cached.
func (s *Server) design(ctx context.Context, id string) (*design.Design, error) {
	s.mu.Lock()
	d := s.designs[id]
	s.mu.Unlock()
	if d != nil {
		return d, nil
	}
	r, err := s.cfg.Store.Revision(ctx, id)
	if err != nil {
		return nil, err
	}
	// Read only, cached: the nodes share their equal parts (a sixth of
	// a decode of its own at 10,000 nodes, #39).
	d, err = design.DecodeShared(r.Design)
	if err != nil {
		return nil, fmt.Errorf("design revision %s: %w", r.ID, err)
	}
	s.mu.Lock()
	if len(s.designs) > 8 {
		clear(s.designs)
	}
	s.designs[r.ID] = d
	s.mu.Unlock()
	return d, nil
}
