package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/internal/storedrec"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
)

// Plans. POST /designs/plan answers what applying a design and then
// deploying it would do, read only (the engine's Plan). An apply computes
// the same plan before it stores anything; one with destructive actions
// is refused (409) unless ?approve= is the approval of exactly those
// (approvalOf: the revision and the actions), and the plan is
// stored with the revision (GET /designs/{rev}/plan), bounded.

// Stored plan bounds: at most maxPlanNodes nodes, destructive first, and
// maxPlanBytes of JSON; the rest are counted (nodes_omitted).
const (
	maxPlanNodes = 1000
	maxPlanBytes = 512 << 10
	// maxPlanWords bounds the destructive actions a refusal's detail
	// names (its destructive field lists up to maxPlanNodes of them).
	maxPlanWords = 5
)

// Collections of the stored plans, keyed by revision ID: the plan, and
// its summary for the history.
const (
	collPlans       = "design-plans"
	collPlanSummary = "design-plan-summaries"
)

// storedPlan is a plan as the store keeps it.
type storedPlan struct {
	record.Plan
	NodesOmitted int `json:"nodes_omitted,omitempty"`
}

var (
	planKind        = storedrec.NewKind("design plan", reflect.TypeFor[storedPlan]())
	planSummaryKind = storedrec.NewKind("design plan summary", reflect.TypeFor[apitypes.PlanSummary]())
)

// approveParam is POST /designs's approval of a destructive plan.
var approveParam = param{Name: "approve", Doc: "the approval of the plan's destructive actions: the plan's `approve` (also in the 409's), " +
	"a digest of its revision and of those actions; without it, or when the apply would now do other destructive actions, " +
	"an apply whose plan has destructive actions is refused (409)"}

func (s *Server) planRoutes() []route {
	busy := []int{http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity, http.StatusServiceUnavailable}
	return []route{
		{Method: "POST", Path: v1 + "/designs/plan", Role: RoleViewer, Upload: true, Response: apitypes.Plan{}, Problems: busy,
			Summary: "what applying a design (tar.gz of the roots, or a JSON list of documents) and then deploying it would do to each node's machine and site, " +
				"destructive actions first; read only; findings on 422", handler: s.planUpload},
		{Method: "GET", Path: v1 + "/designs/:rev/plan", Role: RoleViewer, Response: apitypes.Plan{}, Problems: []int{http.StatusConflict},
			Summary: "the plan stored with a revision when it was applied (404 for one applied before plans were kept)", handler: s.getPlan},
	}
}

// planSlots is how many POST /designs/plan read the provisioner at once.
// A plan reads every machine of the design (10,000 nodes: seconds); a
// viewer's plans hold no design parse slot meanwhile, so they never keep
// an operator's apply, a validate or git sync waiting.
const planSlots = 1

// planUpload answers POST /designs/plan: the upload parsed in a parse
// slot, then planned in a plan slot (a 503 with Retry-After when one is
// not free within DesignWait).
func (s *Server) planUpload(c echo.Context) error {
	ctx := c.Request().Context()
	d, id, err := s.parsePlanned(c)
	if err != nil {
		return err
	}
	if err := s.uploads.takePlan(c); err != nil {
		return err
	}
	defer func() { <-s.uploads.plans }()
	p, err := s.planDesign(ctx, d, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wirePlan(p, 0))
}

// parsePlanned reads, parses and validates the upload of a plan; its
// parse slot is free again when it returns.
func (s *Server) parsePlanned(c echo.Context) (*design.Design, string, error) {
	up, done, err := s.loadUpload(c)
	if err != nil {
		return nil, "", err
	}
	defer done()
	if err := invalidUpload(up); err != nil {
		return nil, "", err
	}
	_, id, err := up.d.Canonical()
	return up.d, id, err
}

// takePlan takes a plan slot, waiting at most u.wait.
func (u *uploads) takePlan(c echo.Context) error {
	t := time.NewTimer(u.wait)
	defer t.Stop()
	select {
	case u.plans <- struct{}{}:
		return nil
	case <-t.C:
	case <-c.Request().Context().Done():
	}
	c.Response().Header().Set("Retry-After", strconv.Itoa(designRetryAfter))
	c.Response().Header().Set(NotRun, "1") // nothing ran: the client tries again after Retry-After
	return problem(http.StatusServiceUnavailable, fmt.Sprintf("%d plans are being made (each reads the provisioner's machines): try again in %d seconds", planSlots, designRetryAfter))
}

// invalidUpload is the 422 of an upload with errors, nil without.
func invalidUpload(up *upload) error {
	if !up.fs.HasErrors() {
		return nil
	}
	r := result(up.d, up.fs)
	return &problemError{status: http.StatusUnprocessableEntity, findings: r.Findings,
		detail: fmt.Sprintf("the design has %d errors and %d warnings: nothing applied; fix them and apply again", r.Errors, r.Warnings)}
}

// getPlan answers GET /designs/{rev}/plan.
func (s *Server) getPlan(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := s.revision(ctx, c.Param("rev"))
	if err != nil {
		return err
	}
	raw, err := s.cfg.Store.Get(ctx, collPlans, r.ID)
	if errors.Is(err, statestore.ErrNoRecord) {
		return problem(http.StatusNotFound, "no plan is stored with revision "+r.ID[:12]+": it was applied before plans were kept")
	}
	if err != nil {
		return err
	}
	var sp storedPlan
	if err := planKind.Decode("", raw, &sp); err != nil {
		return fmt.Errorf("the plan of revision %s: %w", r.ID[:12], err)
	}
	w := wirePlan(sp.Plan, sp.NodesOmitted)
	w.Approve = "" // a plan of the past (maybe cut): an approval is of a plan made now
	return c.JSON(http.StatusOK, w)
}

// planOps are the writes that store plan p with revision id, bounded.
func planOps(id string, p record.Plan) ([]statestore.Op, error) {
	sp := boundPlan(p)
	raw, err := planKind.Encode(sp)
	if err != nil {
		return nil, err
	}
	sum, err := planSummaryKind.Encode(summarize(p))
	if err != nil {
		return nil, err
	}
	return []statestore.Op{statestore.Put(collPlans, id, raw), statestore.Put(collPlanSummary, id, sum)}, nil
}

// Bounds of a stored plan's parts other than its nodes: each destructive
// action in words, and each site's changes and changed records.
const (
	maxPlanWordBytes  = 160
	maxPlanSiteDetail = 200
)

// boundPlan keeps the plan's first nodes (destructive first) within
// maxPlanNodes and maxPlanBytes, and counts the rest; its destructive
// actions (maxPlanNodes, each cut to maxPlanWordBytes) and each site's
// changes and records (maxPlanSiteDetail) are bounded too, and when the
// nodes alone do not bring it under maxPlanBytes the sites' details go.
// A note says what was cut besides nodes.
func boundPlan(p record.Plan) storedPlan {
	sp := storedPlan{Plan: p}
	sp.Destructive, sp.Sites, sp.Notes = boundParts(p)
	keep := min(len(p.Nodes), maxPlanNodes)
	for {
		sp.Nodes, sp.NodesOmitted = p.Nodes[:keep], len(p.Nodes)-keep
		b, err := json.Marshal(sp)
		switch {
		case err != nil || len(b) <= maxPlanBytes:
			return sp
		case keep > 0:
			keep /= 2
		case !slices.ContainsFunc(sp.Sites, func(s record.SitePlan) bool { return len(s.Changes)+len(s.Records) > 0 }):
			return sp
		default:
			sites := make([]record.SitePlan, len(sp.Sites))
			for i, s := range sp.Sites {
				sites[i] = record.SitePlan{Site: s.Site}
			}
			sp.Sites, sp.Notes = sites, append(slices.Clip(sp.Notes), "stored plan: the sites' changes left out (over its size bound)")
		}
	}
}

// boundParts are p's destructive actions, sites and notes within the
// stored plan's bounds (new slices: p's are not changed).
func boundParts(p record.Plan) ([]string, []record.SitePlan, []string) {
	notes := slices.Clone(p.Notes)
	var words []string
	for _, d := range p.Destructive[:min(len(p.Destructive), maxPlanNodes)] {
		words = append(words, clampJSON(d, maxPlanWordBytes))
	}
	if n := len(p.Destructive) - len(words); n > 0 {
		notes = append(notes, fmt.Sprintf("stored plan: %d more destructive actions left out", n))
	}
	var sites []record.SitePlan
	cut := false
	for _, s := range p.Sites {
		c, r := s.Changes[:min(len(s.Changes), maxPlanSiteDetail)], s.Records[:min(len(s.Records), maxPlanSiteDetail)]
		cut = cut || len(c) < len(s.Changes) || len(r) < len(s.Records)
		sites = append(sites, record.SitePlan{Site: s.Site, Changes: c, Records: r})
	}
	if cut {
		notes = append(notes, fmt.Sprintf("stored plan: each site's changes and records cut to %d", maxPlanSiteDetail))
	}
	return words, sites, notes
}

func summarize(p record.Plan) apitypes.PlanSummary {
	counts := map[string]int{}
	for a, n := range p.Counts {
		counts[string(a)] = n
	}
	return apitypes.PlanSummary{Counts: counts, Destructive: len(p.Destructive), Changed: p.Changed()}
}

// planSummaries are the stored plans' summaries by revision ID.
func (s *Server) planSummaries(ctx context.Context) (map[string]*apitypes.PlanSummary, error) {
	recs, err := s.cfg.Store.List(ctx, collPlanSummary, "")
	if err != nil {
		return nil, err
	}
	out := make(map[string]*apitypes.PlanSummary, len(recs))
	for _, r := range recs {
		var ps apitypes.PlanSummary
		if err := planSummaryKind.Decode("", r.Value, &ps); err != nil {
			return nil, fmt.Errorf("the plan summary of revision %.12s: %w", r.Key, err)
		}
		out[r.Key] = &ps
	}
	return out, nil
}

// planSummary is one revision's stored plan summary (nil: none).
func (s *Server) planSummary(ctx context.Context, id string) (*apitypes.PlanSummary, error) {
	raw, err := s.cfg.Store.Get(ctx, collPlanSummary, id)
	if errors.Is(err, statestore.ErrNoRecord) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ps apitypes.PlanSummary
	if err := planSummaryKind.Decode("", raw, &ps); err != nil {
		return nil, fmt.Errorf("the plan summary of revision %.12s: %w", id, err)
	}
	return &ps, nil
}

// approvalOf is the approval of applying revision id with what needs
// one (the plan's destructive actions, the credential binding changes):
// a digest of both, so that an approval given for what was shown does
// not pass when the same revision would now do more (the machines, the
// records or the current revision changed between plan and apply).
func approvalOf(id string, needs []string) string {
	h := sha256.New()
	_, _ = io.WriteString(h, "slipway approval\x00"+id)
	for _, n := range needs {
		_, _ = io.WriteString(h, "\x00"+n)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// planApproval is what ?approve= must be to apply plan p: "" when it
// needs none (no destructive action, or the current revision again).
func planApproval(p record.Plan) string {
	if len(p.Destructive) == 0 || p.From == p.To {
		return ""
	}
	return approvalOf(p.To, p.Destructive)
}

// destructiveRefusal is the 409 of an apply whose plan has destructive
// actions the request did not approve.
func destructiveRefusal(id string, destructive []string) error {
	approve := approvalOf(id, destructive) // of the whole list; what the answer says of it is bounded
	listed, _, _ := boundParts(record.Plan{Destructive: destructive})
	words := listed[:min(len(listed), maxPlanWords)]
	more := ""
	if n := len(destructive) - len(words); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	return &problemError{status: http.StatusConflict, approve: approve, destructive: listed,
		detail: fmt.Sprintf("the plan of revision %s has %d destructive actions: %s%s; nothing applied: review the plan (orchestrator plan) "+
			"and apply again with approve=%s (orchestrator apply --approve)", id[:12], len(destructive), strings.Join(words, "; "), more, approve)}
}
