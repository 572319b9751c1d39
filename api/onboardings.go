package api

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/designlayer"
	"github.com/slipway-dev/slipway/onboarding"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/siteregistry"
	"github.com/slipway-dev/slipway/statestore"
)

// Onboardings keeps the onboarding records (package onboarding).
type Onboardings interface {
	NewRecord(req onboarding.Request, by string) (onboarding.Record, error)
	Put(ctx context.Context, r onboarding.Record) error
	Get(ctx context.Context, id string) (onboarding.Record, error)
	List(ctx context.Context) ([]onboarding.Record, error)
}

var errNoOnboardings = problem(http.StatusNotImplemented, "this server keeps no onboardings (it needs site records and the design layer)")

// statusNotSubmitted is an onboarding's status while it has no task.
const statusNotSubmitted = "not_submitted"

func (s *Server) onboardingRoutes() []route {
	admin := auth.RoleAdmin
	base := v1 + "/admin/onboardings"
	bad := []int{http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity, http.StatusNotImplemented}
	return []route{
		{Method: "POST", Path: base, Role: admin, Mutating: true, Request: apitypes.OnboardingRequest{}, OK: []int{http.StatusCreated},
			Response: apitypes.Onboarding{}, Problems: bad,
			Summary: "onboard a node by hostname and BMC address: add it to the design's API-managed layer and deploy it", handler: s.onboardOne},
		{Method: "POST", Path: base + "/batch", Role: admin, Mutating: true, Request: apitypes.OnboardingBatch{}, OK: []int{http.StatusCreated},
			Response: apitypes.Onboarding{}, Problems: bad,
			Summary: "onboard nodes sharing a site, site profile and SKU: rows of {hostname, ipmi_ip}", handler: s.onboardBatch},
		{Method: "GET", Path: base, Role: admin, Response: apitypes.Page[apitypes.Onboarding]{},
			Query:    []param{{Name: "site_id"}, {Name: "hostname"}, {Name: "status", Many: true}, offsetParam, limitParam},
			Problems: []int{http.StatusNotImplemented}, Summary: "onboardings, newest first", handler: s.listOnboardings},
		{Method: "GET", Path: base + "/:id", Role: admin, Response: apitypes.Onboarding{}, Problems: []int{http.StatusNotImplemented},
			Summary: "an onboarding", handler: s.getOnboarding},
		{Method: "POST", Path: base + "/:id/:verb", Role: admin, Mutating: true, OK: []int{http.StatusAccepted}, Response: apitypes.Onboarding{},
			Problems: []int{http.StatusConflict, http.StatusNotImplemented}, Summary: "a workflow verb: " + fmt.Sprint(workflowVerbs), handler: s.onboardingVerb},
	}
}

func (s *Server) onboardOne(c echo.Context) error {
	auditWhat(c, AuditWhat{Action: "onboarding.create", Targets: []string{"onboardings"}}) // until the body names the nodes
	var b apitypes.OnboardingRequest
	if err := bindStrict(c, &b); err != nil {
		return err
	}
	return s.onboard(c, onboarding.Request{SiteID: b.SiteID, ProfileID: b.ProfileID, SKUID: b.SKUID, HostProfile: b.HostProfile,
		Rows: []onboarding.Row{{Hostname: b.Hostname, IPMIIP: b.IPMIIP, Rack: b.Rack, Addresses: b.Addresses}}})
}

func (s *Server) onboardBatch(c echo.Context) error {
	auditWhat(c, AuditWhat{Action: "onboarding.create", Targets: []string{"onboardings"}}) // until the body names the nodes
	var b apitypes.OnboardingBatch
	if err := bindStrict(c, &b); err != nil {
		return err
	}
	return s.onboard(c, b.ToOnboarding())
}

// onboard adds the request's nodes to the layer in a new revision,
// keeps the record and submits their deploy.
func (s *Server) onboard(c echo.Context, req onboarding.Request) error {
	if s.cfg.Onboardings == nil || s.cfg.Layer == nil || s.cfg.Sites == nil {
		return errNoOnboardings
	}
	ctx := c.Request().Context()
	names := make([]string, len(req.Rows))
	for i, r := range req.Rows {
		names[i] = r.Hostname
	}
	auditWhat(c, AuditWhat{Action: "onboarding.create", Targets: shortList(names)})
	if err := req.Check(); err != nil {
		return problem(http.StatusBadRequest, err.Error())
	}
	rec, err := s.cfg.Onboardings.NewRecord(req, who(c))
	if err != nil {
		return err
	}
	if err := s.addToLayer(c, &rec); err != nil {
		return err
	}
	auditWhat(c, AuditWhat{Action: "onboarding.create", Targets: append([]string{rec.ID}, shortList(names)...)})
	t, err := s.cfg.Engine.Submit(ctx, record.Request{Action: record.ActionDeployNodes, Revision: rec.Revision,
		Filter: record.Filter{Sets: []design.NodeFilter{{Names: names}}}, Requester: who(c), Correlation: requestIDOf(c)})
	if err != nil {
		rec.Error = "the deploy was not submitted: " + err.Error()
	} else {
		rec.Task = t.ID
		auditWhat(c, AuditWhat{Action: "onboarding.create", Verb: string(t.Action), Task: t.ID, Targets: append([]string{rec.ID}, shortList(names)...)})
	}
	if perr := s.cfg.Onboardings.Put(ctx, rec); perr != nil {
		return perr
	}
	c.Response().Header().Set(echo.HeaderLocation, v1+"/admin/onboardings/"+rec.ID)
	w, err := s.onboardingView(ctx, rec, s.engineNode)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, w)
}

func shortList(names []string) []string { return names[:min(len(names), 20)] }

// addToLayer checks the request against the site and the current design,
// builds the design again with the nodes in the layer and applies it,
// one design change at a time. rec gets its site, host profile and
// revision.
func (s *Server) addToLayer(c echo.Context, rec *onboarding.Record) error {
	ctx := c.Request().Context()
	site, profile, err := s.onboardingSite(ctx, rec.Request)
	if err != nil {
		return err
	}
	s.designMu.Lock()
	defer s.designMu.Unlock()
	cur, err := s.cfg.Store.Current(ctx)
	if errors.Is(err, statestore.ErrNotFound) {
		return problem(http.StatusConflict, "no design is applied: apply one (orchestrator apply) before onboarding nodes into it")
	}
	if err != nil {
		return err
	}
	d, err := s.design(ctx, cur.ID)
	if err != nil {
		return err
	}
	hp, err := checkOnboarding(d, rec.Request, site.Name, profile)
	if err != nil {
		return err
	}
	rec.SiteName, rec.HostProfileUsed = site.Name, hp
	src, err := s.cfg.Layer.Sources(ctx, cur.ID)
	if errors.Is(err, designlayer.ErrNoSources) {
		return problem(http.StatusConflict, err.Error())
	}
	if err != nil {
		return err
	}
	entries, err := s.cfg.Layer.Layer(ctx)
	if err != nil {
		return err
	}
	if len(entries)+len(rec.Rows) > designlayer.MaxLayerEntries {
		return problem(http.StatusConflict, fmt.Sprintf("the design layer holds %d documents, at most %d: export it (GET %s/designs/layer), commit it to git and apply",
			len(entries), designlayer.MaxLayerEntries, v1))
	}
	added := layerEntries(*rec, driverspec.Site(d).PXENetwork)
	return s.applyLayer(c, cur, src, slices.Concat(entries, added), added, rec)
}

// onboardingSite is the request's site (enabled) and the name of its
// site profile ("" when neither the request nor the site names one).
func (s *Server) onboardingSite(ctx context.Context, req onboarding.Request) (siteregistry.Record, string, error) {
	site, err := s.cfg.Sites.Get(ctx, req.SiteID)
	if err != nil {
		return siteregistry.Record{}, "", siteErr(err)
	}
	if site.Status != siteregistry.StatusEnabled {
		return siteregistry.Record{}, "", problem(http.StatusConflict, fmt.Sprintf("site %s (%s) is %s: enable it (PATCH %s/admin/maas-sites/%s) first", site.Name, site.ID, site.Status, v1, site.ID))
	}
	if req.ProfileID == "" || s.cfg.SiteParts == nil {
		return site, site.Policy.DefaultProfile, nil
	}
	p, err := s.cfg.SiteParts.Profile(ctx, site.ID, req.ProfileID)
	if err != nil {
		return siteregistry.Record{}, "", siteErr(err)
	}
	return site, p.Name, nil
}

// checkOnboarding checks the request against the design: the Site, the
// SKU, hostnames and BMC addresses not taken; it answers the host profile.
func checkOnboarding(d *design.Design, req onboarding.Request, siteName, profile string) (string, error) {
	if d.SiteNamed(siteName) == nil {
		return "", problem(http.StatusUnprocessableEntity, fmt.Sprintf("the design has no Site %s: add a Site document of that name to the design in git and apply it", siteName))
	}
	if d.HardwareProfiles[req.SKUID] == nil {
		return "", problem(http.StatusUnprocessableEntity, fmt.Sprintf("sku_id %s is not a HardwareProfile of the design (it has %s)", req.SKUID, shortJoin(slices.Sorted(maps.Keys(d.HardwareProfiles)), 10)))
	}
	bmcs := map[string]string{}
	for name, n := range d.Nodes {
		bmcs[n.Spec.OOB.Address] = name
	}
	var taken []string
	for _, r := range req.Rows {
		if d.Nodes[r.Hostname] != nil {
			taken = append(taken, fmt.Sprintf("node %s is in the design already", r.Hostname))
		}
		if other, ok := bmcs[r.IPMIIP]; ok {
			taken = append(taken, fmt.Sprintf("BMC %s of %s is node %s's", r.IPMIIP, r.Hostname, other))
		}
	}
	if len(taken) > 0 {
		slices.Sort(taken)
		return "", problem(http.StatusConflict, shortJoin(taken, 10)+": onboard only new nodes")
	}
	return hostProfileFor(d, req, siteName, profile)
}

// hostProfileFor is the request's host profile, else the one naming the
// site profile, else the Site's default.
func hostProfileFor(d *design.Design, req onboarding.Request, siteName, profile string) (string, error) {
	if hp := req.HostProfile; hp != "" {
		if d.HostProfiles[hp] == nil {
			return "", problem(http.StatusUnprocessableEntity, fmt.Sprintf("host_profile %s is not a HostProfile of the design", hp))
		}
		return hp, nil
	}
	var naming []string
	for name, p := range d.HostProfiles {
		if profile != "" && p.Spec.SiteProfile == profile {
			naming = append(naming, name)
		}
	}
	slices.Sort(naming)
	switch {
	case len(naming) == 1:
		return naming[0], nil
	case len(naming) > 1:
		return "", problem(http.StatusUnprocessableEntity, fmt.Sprintf("host profiles %s all name site profile %s: say which in host_profile", shortJoin(naming, 10), profile))
	}
	if s := d.SiteNamed(siteName); s != nil && s.Spec.Defaults.HostProfile != "" {
		return s.Spec.Defaults.HostProfile, nil
	}
	if hp := d.Site.Spec.Defaults.HostProfile; hp != "" {
		return hp, nil
	}
	return "", problem(http.StatusUnprocessableEntity, "no host profile: name one in host_profile, name the site profile in a HostProfile's siteProfile, or set the Site's defaults.hostProfile")
}

// layerEntries are the record's Node documents as layer entries.
func layerEntries(rec onboarding.Record, pxeNetwork string) []designlayer.Entry {
	out := make([]designlayer.Entry, len(rec.Rows))
	for i, r := range rec.Rows {
		out[i] = designlayer.Entry{Kind: design.KindNode, Name: r.Hostname, Onboarding: rec.ID, By: rec.By,
			Doc: onboarding.NodeDoc(r, rec.SiteName, rec.HostProfileUsed, rec.SKUID, pxeNetwork)}
	}
	return out
}

// applyLayer builds the design from the current revision's sources and
// the layer with added, and applies it: the layer and the record first,
// then the revision. Findings are a 422 and nothing is written.
func (s *Server) applyLayer(c echo.Context, cur statestore.Revision, src designlayer.Sources, layer, added []designlayer.Entry, rec *onboarding.Record) error {
	ctx := c.Request().Context()
	d, fs, err := designlayer.Build(src, layer)
	if err != nil {
		return err
	}
	if fs.HasErrors() {
		r := result(d, fs)
		return &problemError{status: http.StatusUnprocessableEntity, findings: r.Findings,
			detail: fmt.Sprintf("the design with these nodes has %d errors (in %s: the nodes; elsewhere: the design they join): nothing onboarded", r.Errors, designlayer.LayerFile)}
	}
	body, id, err := d.Canonical()
	if err != nil {
		return err
	}
	rec.Revision = id
	ops, err := s.cfg.Layer.PutOps(added)
	if err != nil {
		return err
	}
	recOp, err := onboarding.PutOp(*rec)
	if err != nil {
		return err
	}
	if err := s.cfg.Layer.Write(ctx, append(ops, recOp)...); err != nil {
		return err
	}
	if err := s.cfg.Layer.CopySources(ctx, cur.ID, id); err != nil {
		return err
	}
	_, err = s.cfg.Store.PutRevision(ctx, statestore.Revision{ID: id, Created: time.Now(), Roots: withLayerRoot(cur.Roots, true),
		GitCommit: cur.GitCommit, GitDirty: cur.GitDirty, Counts: d.Counts(), Design: body})
	return err
}

func (s *Server) listOnboardings(c echo.Context) error {
	if s.cfg.Onboardings == nil {
		return errNoOnboardings
	}
	ctx := c.Request().Context()
	offset, limit, err := paging(c)
	if err != nil {
		return err
	}
	all, err := s.cfg.Onboardings.List(ctx)
	if err != nil {
		return err
	}
	nodes, err := s.nodeIndex(ctx)
	if err != nil {
		return err
	}
	site, host, status := c.QueryParam("site_id"), c.QueryParam("hostname"), c.QueryParams()["status"]
	out := []apitypes.Onboarding{}
	for _, r := range all {
		if (site != "" && r.SiteID != site) || (host != "" && !slices.Contains(r.Nodes(), host)) {
			continue
		}
		w, err := s.onboardingView(ctx, r, nodes)
		if err != nil {
			return err
		}
		if len(status) == 0 || slices.Contains(status, w.Status) {
			out = append(out, w)
		}
	}
	return c.JSON(http.StatusOK, page(out, offset, limit))
}

func (s *Server) getOnboarding(c echo.Context) error {
	w, err := s.onboardingByID(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, w)
}

func (s *Server) onboardingByID(ctx context.Context, id string) (apitypes.Onboarding, error) {
	if s.cfg.Onboardings == nil {
		return apitypes.Onboarding{}, errNoOnboardings
	}
	r, err := s.cfg.Onboardings.Get(ctx, id)
	if errors.Is(err, onboarding.ErrNotFound) {
		return apitypes.Onboarding{}, problem(http.StatusNotFound, err.Error())
	}
	if err != nil {
		return apitypes.Onboarding{}, err
	}
	return s.onboardingView(ctx, r, s.engineNode)
}

// onboardingView is the record with its task; its status follows its
// nodes once the task ended (onboardingStatus).
func (s *Server) onboardingView(ctx context.Context, r onboarding.Record, nodes nodeLookup) (apitypes.Onboarding, error) {
	w := apitypes.Onboarding{ID: r.ID, Onboarding: apitypes.FromOnboardingRecord(r), Status: statusNotSubmitted, Results: []apitypes.NodeResult{}}
	if r.Task == "" {
		return w, nil
	}
	t, res, err := s.cfg.Engine.Task(ctx, r.Task)
	if err != nil {
		return apitypes.Onboarding{}, err
	}
	wt := wireTask(t)
	w.Task = &wt
	if w.Status, err = onboardingStatus(ctx, r, t.Status, nodes); err != nil {
		return apitypes.Onboarding{}, err
	}
	if res != nil {
		w.Results = wireResults(res)
	}
	return w, nil
}

// onboardingVerb applies a workflow verb to the onboarding's task or nodes.
func (s *Server) onboardingVerb(c echo.Context) error {
	ctx, id, verb := c.Request().Context(), c.Param("id"), c.Param("verb")
	if !slices.Contains(workflowVerbs, verb) {
		return problem(http.StatusNotFound, fmt.Sprintf("unknown workflow verb %s: use %v", verb, workflowVerbs))
	}
	auditWhat(c, AuditWhat{Action: "onboarding." + verb, Verb: verb, Targets: []string{id}})
	w, err := s.onboardingByID(ctx, id)
	if err != nil {
		return err
	}
	if w.Task == nil {
		return problem(http.StatusConflict, fmt.Sprintf("onboarding %s has no deploy task (%s): deploy its nodes with POST %s/tasks", id, w.Onboarding.Error, v1))
	}
	auditWhat(c, AuditWhat{Action: "onboarding." + verb, Verb: verb, Task: w.Task.ID, Targets: []string{id}})
	if err := s.workflowVerb(c, w.Task.ID, w.Onboarding.Nodes(), verb, "onboarding "+id); err != nil {
		return err
	}
	if w, err = s.onboardingByID(ctx, id); err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, w)
}
