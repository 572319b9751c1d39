package api

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/design"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
)

// An apply, from an upload (POST /designs) or from design files already
// on disk (ApplyDir, for git sync), goes the same way: the design is
// built over the API-managed layer and validated; prepareApply computes
// its revision, the credential bindings it changes and its plan; the
// caller decides whether they need an approval it does not have; then
// commitApply stores the sources, the plan and the revision. Nothing is
// stored before that decision, so a refused or held apply leaves no
// trace but its audit record.

// DirApply is an apply of design files already on disk (git sync).
type DirApply struct {
	Dir        string   // the design files, within the design size limits (Config.DesignLimits)
	Roots      []string // provenance as recorded, e.g. "git:https://host/repo#main:site" (no credentials)
	GitCommit  string   // 40 or 64 lowercase hex digits, or ""
	GitAuthor  string   // recorded with the revision (cut to maxGitAuthor bytes)
	GitMessage string   // recorded: its first line, cut to maxGitMessage bytes
	Approve    string   // the approval of a held apply (DirApplied.Approve): what was shown held, and nothing else ("" none)
	Actor      string   // who, for the audit record, e.g. "git-sync"
	// TrustBindings: the source may change credential bindings (where
	// the provisioner and the BMCs are, which secrets go there) without
	// an approval, as an admin's upload may. False: such a change is held
	// until Approve approves it, like a destructive action, as
	// anyone who can push to the repository could otherwise send the
	// stored secrets to an address of theirs.
	TrustBindings bool
	// SitePolicy: the current design's Sites decide whether destructive
	// actions need an approval (lifecycle.destructive: hold, the
	// default, or apply); false: they always do. The incoming design's
	// own policy is never read, so a commit cannot lift its own hold.
	SitePolicy bool
}

// DirApplied is what ApplyDir did.
type DirApplied struct {
	Revision string          // the content address (also when held or unchanged; "" when invalid)
	Result   string          // "created" | "restored" | "unchanged" | "held" | "invalid"
	Plan     *record.Plan    // nil when invalid
	Findings design.Findings // validation findings (file:line, relative to Dir); errors when invalid
	// Held says, when Result is "held", what needs an approval: the
	// plan's destructive actions, the binding changes. Approve is the
	// DirApply.Approve that approves exactly those for Revision;
	// HeldBindings says whether they hold a binding change.
	Held         []string
	Approve      string
	HeldBindings bool
}

// ApplyDir results besides statestore.PutResult's.
const (
	ResultHeld    = "held"
	ResultInvalid = "invalid"
)

// Bounds of what ApplyDir records of a commit.
const (
	maxGitAuthor  = 200
	maxGitMessage = 200
)

// ApplyDir applies the design in req.Dir as POST /designs applies an
// upload: built over the layer, validated, the credential bindings and
// the plan checked, one design change at a time, within the upload
// slots. An invalid design is Result "invalid" with its findings; one
// whose plan has destructive actions (or, unless TrustBindings, that
// changes a credential binding) is "held" unless req.Approve names its
// revision: in both cases nothing is stored. It writes its own audit
// record (req.Actor). The error is for what could not be done at all (a
// directory over the limits, the store failing): nothing was applied.
func (s *Server) ApplyDir(ctx context.Context, req DirApply) (out DirApplied, err error) {
	defer func() { s.auditDir(ctx, req, out, err) }()
	from, err := dirProvenance(req)
	if err != nil {
		return out, err
	}
	s.designMu.Lock()
	defer s.designMu.Unlock()
	if err := s.uploads.take(ctx); err != nil {
		return out, err
	}
	defer s.uploads.release()
	up, err := s.loadDir(ctx, req.Dir)
	if err != nil {
		return out, err
	}
	out.Findings = up.fs
	if up.fs.HasErrors() {
		out.Result = ResultInvalid
		return out, nil
	}
	p, err := s.prepareApply(ctx, up)
	if err != nil {
		return out, err
	}
	out.Revision, out.Plan = p.id, p.plan
	if held := p.needsApproval(req.TrustBindings, req.SitePolicy); len(held) > 0 && req.Approve != approvalOf(p.id, held) {
		out.Result, out.Held, out.Approve = ResultHeld, held, approvalOf(p.id, held)
		out.HeldBindings = !req.TrustBindings && len(p.bindings) > 0
		return out, nil
	}
	res, _, err := s.commitApply(ctx, up, p, from)
	if err != nil {
		return out, err
	}
	out.Result = res.String()
	return out, nil
}

// dirProvenance checks and bounds what a DirApply says of its origin.
func dirProvenance(req DirApply) (provenance, error) {
	if err := checkRoots(req.Roots); err != nil {
		return provenance{}, err
	}
	if n := len(req.GitCommit); n != 0 && (n != 40 && n != 64 || strings.Trim(req.GitCommit, "0123456789abcdef") != "") {
		return provenance{}, fmt.Errorf("git commit %.70q: want 40 or 64 lowercase hex digits", req.GitCommit)
	}
	if req.Approve != "" {
		if _, err := statestore.NormalizeRef(req.Approve); err != nil || len(req.Approve) != statestore.IDLen {
			return provenance{}, fmt.Errorf("approve %.70q: want the held apply's approval (64 lowercase hex digits)", req.Approve)
		}
	}
	msg, _, _ := strings.Cut(req.GitMessage, "\n")
	return provenance{roots: req.Roots, commit: req.GitCommit, author: printable(req.GitAuthor, maxGitAuthor),
		message: printable(strings.TrimSpace(msg), maxGitMessage)}, nil
}

// printable is s with invalid UTF-8 and control characters replaced,
// cut to at most n bytes of JSON.
func printable(s string, n int) string { return clampJSON(s, n) }

// loadDir builds the design files under dir (regular files only: a
// symbolic link could read what is not the design) within the upload
// limits; findings name files relative to dir.
func (s *Server) loadDir(ctx context.Context, dir string) (*upload, error) {
	if err := checkDirFiles(dir, s.uploads.lim.Files); err != nil {
		return nil, err
	}
	res, err := yamlingest.LoadLimited(ctx, []string{dir}, s.uploads.lim.Limits)
	if err != nil {
		return nil, fmt.Errorf("design files %s: %w", dir, uploadError(err, dir, s.uploads.lim))
	}
	up := &upload{dir: dir, roots: []string{dir}, res: res}
	if err := s.buildUpload(ctx, up); err != nil {
		return nil, err
	}
	return up, nil
}

// checkDirFiles refuses a design directory with a YAML file that is not
// a regular file, or with more than maxFiles of them.
func checkDirFiles(dir string, maxFiles int) error {
	n := 0
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return fmt.Errorf("design files %s: %w", dir, err)
		case d.IsDir():
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		case filepath.Ext(p) != ".yaml" && filepath.Ext(p) != ".yml":
			return nil
		case !d.Type().IsRegular():
			rel, _ := filepath.Rel(dir, p)
			return fmt.Errorf("design file %s is not a regular file (a symbolic link?): replace it with the file itself", rel)
		}
		if n++; n > maxFiles {
			return fmt.Errorf("design files %s: more than %d YAML files (designMaxFiles)", dir, maxFiles)
		}
		return nil
	})
}

// prepared is an apply computed, nothing stored yet.
type prepared struct {
	d        *design.Design
	fs       design.Findings
	body     []byte
	id       string
	prev     []byte // the current revision's design (nil: none)
	prevID   string
	old      *design.Design // prev decoded (nil: none)
	bindings []string       // the credential bindings the design changes
	plan     *record.Plan
}

// prepareApply computes the revision of a valid upload, the credential
// bindings it changes against the current design and its plan.
func (s *Server) prepareApply(ctx context.Context, up *upload) (*prepared, error) {
	body, id, err := up.d.Canonical()
	if err != nil {
		return nil, err
	}
	p := &prepared{d: up.d, fs: up.fs, body: body, id: id}
	if cur, err := s.cfg.Store.Current(ctx); err == nil {
		p.prev, p.prevID = cur.Design, cur.ID
	} else if !errors.Is(err, statestore.ErrNotFound) {
		return nil, err
	}
	if p.old, err = currentDesign(p.prev); err != nil {
		return nil, err
	}
	p.bindings = credentialChanges(p.old, up.d)
	pl, err := s.planDesign(ctx, up.d, id)
	if err != nil {
		return nil, err
	}
	p.plan = &pl
	return p, nil
}

// needsApproval lists what of the apply needs an approval (approvalOf
// its revision and this list): the plan's destructive actions and, unless trusted, the
// credential binding changes. Applying the current revision again
// changes nothing: it needs none (its destructive actions, still to
// come at the next deploy, were approved when it was applied).
func (p *prepared) needsApproval(trustBindings, sitePolicy bool) []string {
	if p.id == p.prevID {
		return nil
	}
	var out []string
	if len(p.plan.Destructive) > 0 && (!sitePolicy || !p.sitesApply()) {
		out = slices.Clone(p.plan.Destructive)
	}
	if !trustBindings && len(p.bindings) > 0 {
		out = append(out, "credential bindings change: "+shortJoin(p.bindings, 5))
	}
	return out
}

// sitesApply says whether the current design's Site of every node the
// plan releases or redeploys says lifecycle.destructive: apply (false
// with no current design).
func (p *prepared) sitesApply() bool {
	cur := p.old
	if cur == nil || cur.Site == nil {
		return false
	}
	for _, n := range p.plan.Nodes {
		if !n.Action.Destructive() {
			continue
		}
		site := cur.Site
		if s, ok := cur.Sites[n.Site]; ok {
			site = s
		} else if len(cur.Sites) > 1 || n.Site != "" && n.Site != cur.Site.Metadata.Name {
			return false
		}
		if site.Spec.Lifecycle.Destructive != "apply" {
			return false
		}
	}
	return true
}

// commitApply stores the upload's sources and the revision, and takes
// the entries the upload defines out of the layer.
func (s *Server) commitApply(ctx context.Context, up *upload, p *prepared, from provenance) (statestore.PutResult, []string, error) {
	if err := s.saveSources(ctx, up, p.id); err != nil { // layer.go
		return statestore.Unchanged, nil, err
	}
	if p.id != p.prevID { // plan.go: kept with the revision (an unchanged apply keeps the one stored)
		ops, err := planOps(p.id, *p.plan)
		if err != nil {
			return statestore.Unchanged, nil, err
		}
		if _, err := s.cfg.Store.Write(ctx, ops...); err != nil {
			return statestore.Unchanged, nil, err
		}
	}
	res, err := s.cfg.Store.PutRevision(ctx, statestore.Revision{ID: p.id, Created: time.Now(), Roots: withLayerRoot(from.roots, len(up.kept) > 0),
		GitCommit: from.commit, GitDirty: from.dirty, GitAuthor: from.author, GitMessage: from.message, Counts: p.d.Counts(), Design: p.body})
	if err != nil {
		return statestore.Unchanged, nil, err
	}
	taken, err := s.takeOver(ctx, up)
	return res, taken, err
}

// applied is the answer of an apply that stored res.
func (p *prepared) applied(res statestore.PutResult, taken []string, kept int) apitypes.Applied {
	out := apitypes.Applied{Revision: p.id, Result: res.String(), Warnings: apitypes.FromFindings(p.fs), LayerTakenOver: taken, LayerKept: kept}
	if res != statestore.Unchanged {
		if df, err := design.DiffCanonical(p.prev, p.body); err == nil {
			wd := apitypes.FromDiff(df)
			out.Diff = &wd
		}
		wp := wirePlan(*p.plan, 0)
		out.Plan = &wp
	}
	return out
}

// planDesign is the engine's plan of applying d as revision id.
func (s *Server) planDesign(ctx context.Context, d *design.Design, id string) (record.Plan, error) {
	p, err := s.cfg.Engine.Plan(ctx, d, id)
	if err != nil {
		return p, fmt.Errorf("planning revision %.12s: %w (nothing was changed): try again", id, err)
	}
	return p, nil
}

// auditDir writes the audit record of an ApplyDir.
func (s *Server) auditDir(ctx context.Context, req DirApply, out DirApplied, err error) {
	status, detail := http.StatusCreated, ""
	switch {
	case err != nil:
		status, detail = http.StatusInternalServerError, err.Error()
		var pe *problemError
		if errors.As(err, &pe) {
			status = pe.status
		}
	case out.Result == ResultInvalid:
		e, w := out.Findings.Count()
		status, detail = http.StatusUnprocessableEntity, fmt.Sprintf("the design has %d errors and %d warnings: nothing applied", e, w)
	case out.Result == ResultHeld:
		status, detail = http.StatusConflict, "held for approval of revision "+out.Revision+": "+strings.Join(out.Held, "; ")
	case out.Result != statestore.Created.String():
		status = http.StatusOK
	}
	outcome := "ok"
	if status >= 400 {
		outcome = "failed"
	}
	path := ""
	if len(req.Roots) > 0 {
		path = req.Roots[0]
	}
	rec := AuditRecord{Time: time.Now().UTC(), RequestID: rand.Text(), Who: Principal{ID: req.Actor, Name: req.Actor},
		Method: "APPLY", Route: "ApplyDir", Path: strings.Map(safeRune, path), Status: status, Outcome: outcome, Detail: detail,
		Action: "design.apply"}
	if out.Revision != "" {
		rec.Targets = []string{out.Revision}
	}
	bound(&rec)
	_ = s.writeAuditCtx(ctx, rec)
}
