package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/lab"
	"github.com/slipway-dev/slipway/siteregistry"
)

// exampleWithout is the example design as a tar.gz (one root, "site")
// without the Node documents named.
func exampleWithout(t *testing.T, nodes ...string) []byte {
	t.Helper()
	dropped := 0
	ar := exampleTar(t, func(s string) string {
		var keep []string
		for _, doc := range strings.Split(s, "\n---\n") {
			if slices.ContainsFunc(nodes, func(n string) bool {
				return strings.Contains(doc, "kind: Node") && strings.Contains(doc, "name: "+n+"\n")
			}) {
				dropped++
			} else {
				keep = append(keep, doc)
			}
		}
		return strings.Join(keep, "\n---\n")
	})
	if dropped != len(nodes) {
		t.Fatalf("dropped %d of the nodes %v", dropped, nodes)
	}
	return ar
}

// labMachine is what the lab's own MAAS regions and machine say of a
// hostname: its MAAS status, and whether its node agent finished every
// action.
func labMachine(f *fixture, host string) (status string, agentDone bool) {
	for _, r := range f.Env.Lab.Regions() {
		for _, m := range r.MAAS.Machines() {
			if m.Hostname == host {
				status = m.Status
			}
		}
	}
	if m := f.Env.Lab.Machine(host); m != nil {
		agentDone = m.Bootstrap().State == lab.BootstrapDone
	}
	return status, agentDone
}

// TestOnboarding: a node the lab has but the applied design lacks is
// onboarded by hostname and BMC address: it joins the design's
// API-managed layer in a new revision (designs, diff, the exported YAML
// show it), its machine PXE-enlists itself and is found by its BMC, and
// the lab's own MAAS says it is Deployed with its node agent done. The
// next upload that defines the node takes it over from the layer.
func TestOnboarding(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin, op := f.Token[api.RoleAdmin], f.Token[api.RoleOperator]
	const host, bmc = "r02-cmp01", "10.10.0.111"
	var rec siteregistry.Record
	if code := f.json(t, "POST", "/api/v1/admin/maas-sites", admin, map[string]any{"name": "lab", "url": f.Env.Lab.Info().MAASURL,
		"api_key": f.Env.Lab.Info().APIKey}, &rec); code != http.StatusCreated {
		t.Fatalf("site: %d", code)
	}
	prof := siteProfile(t, f, rec.ID)
	one := map[string]any{"site_id": rec.ID, "profile_id": prof, "sku_id": "supermicro-as2024", "host_profile": "compute", "hostname": host, "ipmi_ip": bmc,
		"rack": "r02", "addresses": map[string]string{"mgmt": "10.12.0.111", "storage": "10.13.0.111"}}

	// The harness stored the revision itself: no sources to build over.
	fresh := map[string]any{"site_id": rec.ID, "profile_id": prof, "sku_id": "supermicro-as2024", "host_profile": "compute", "hostname": "r09-new", "ipmi_ip": "10.10.0.199"}
	code, b := f.do(t, "POST", "/api/v1/admin/onboardings", admin, "application/json", mustJSON(fresh))
	if code != http.StatusConflict || !strings.Contains(string(b), "apply the design from git again") {
		t.Fatalf("onboarding over a revision without sources: %d %s", code, b)
	}
	if code, b := f.do(t, "POST", "/api/v1/designs", op, "application/gzip", exampleWithout(t, host)); code != http.StatusCreated {
		t.Fatalf("apply without %s: %d %s", host, code, b)
	}
	var task record.Task
	if code := f.json(t, "POST", "/api/v1/tasks", op, map[string]any{"action": "prepare_site"}, &task); code != http.StatusCreated {
		t.Fatalf("prepare_site: %d", code)
	}
	wait(t, f, task.ID)

	refusals := []struct {
		name   string
		change map[string]any
		status int
		want   string
	}{
		{"operator", nil, http.StatusForbidden, ""},
		{"taken hostname", map[string]any{"hostname": "r01-cmp01"}, http.StatusConflict, "node r01-cmp01 is in the design already"},
		{"taken BMC", map[string]any{"ipmi_ip": "10.10.0.112"}, http.StatusConflict, "BMC 10.10.0.112 of r02-cmp01 is node r02-cmp02's"},
		{"unknown SKU", map[string]any{"sku_id": "hp-dl380"}, http.StatusUnprocessableEntity, "not a HardwareProfile"},
		{"bad BMC", map[string]any{"ipmi_ip": "10.10.0"}, http.StatusBadRequest, "not an IP address"},
		{"unknown site", map[string]any{"site_id": "ms-0000000000"}, http.StatusNotFound, ""},
		{"no site_id", map[string]any{"site_id": ""}, http.StatusBadRequest, "site_id is required"},
		{"no profile_id", map[string]any{"profile_id": ""}, http.StatusBadRequest, "profile_id (a site profile of the site) is required"},
		{"no sku_id", map[string]any{"sku_id": ""}, http.StatusBadRequest, "sku_id (a HardwareProfile of the design) is required"},
		{"unknown profile", map[string]any{"profile_id": "sp-0000000000"}, http.StatusNotFound, ""},
		{"address taken", map[string]any{"addresses": map[string]string{"mgmt": "10.12.0.112"}}, http.StatusUnprocessableEntity, "api-layer/documents.yaml"},
	}
	for _, r := range refusals {
		body := map[string]any{}
		for k, v := range one {
			body[k] = v
		}
		for k, v := range r.change {
			body[k] = v
		}
		tok := admin
		if r.name == "operator" {
			tok = op
		}
		code, b := f.do(t, "POST", "/api/v1/admin/onboardings", tok, "application/json", mustJSON(body))
		if code != r.status || !strings.Contains(string(b), r.want) {
			t.Errorf("%s: %d %s, want %d with %q", r.name, code, b, r.status, r.want)
		}
	}
	if code, b := f.do(t, "GET", "/api/v1/designs/layer", admin, "", nil); code != 200 || strings.Contains(string(b), "kind: Node") {
		t.Fatalf("the layer after refusals: %d %s", code, b)
	}

	var w apitypes.Onboarding // through the batch route: rows share the site, SKU and profile
	batch := map[string]any{"site_id": rec.ID, "sku_id": "supermicro-as2024", "host_profile": "compute", "rows": []map[string]any{
		{"hostname": host, "ipmi_ip": bmc, "rack": "r02", "addresses": one["addresses"]}}}
	if code, b := f.do(t, "POST", "/api/v1/admin/onboardings/batch", admin, "application/json", mustJSON(batch)); code != http.StatusBadRequest ||
		!strings.Contains(string(b), "profile_id (a site profile of the site) is required") {
		t.Fatalf("a batch without profile_id: %d %s", code, b)
	}
	batch["profile_id"] = prof
	if code := f.json(t, "POST", "/api/v1/admin/onboardings/batch", admin, batch, &w); code != http.StatusCreated || w.Task == nil ||
		w.Onboarding.HostProfileUsed != "compute" || w.Onboarding.SiteName != "lab" {
		t.Fatalf("onboard: %d %+v", code, w)
	}
	wait(t, f, w.Task.ID)
	if st, _ := labMachine(f, host); st != "Deployed" {
		t.Fatalf("the lab says %s is %q", host, st)
	}
	testtool.WaitUntil(t, func() bool { _, done := labMachine(f, host); return done }, host+"'s node agent done")
	var got apitypes.Onboarding
	if code := f.json(t, "GET", "/api/v1/admin/onboardings/"+w.ID, admin, nil, &got); code != 200 || got.Status != "succeeded" || len(got.Results) != 1 {
		t.Fatalf("get: %d %+v", code, got)
	}
	var page apitypes.Page[apitypes.Onboarding]
	if code := f.json(t, "GET", "/api/v1/admin/onboardings?hostname="+host, admin, nil, &page); code != 200 || page.Total != 1 {
		t.Fatalf("list: %d %+v", code, page)
	}
	if code := f.json(t, "GET", "/api/v1/admin/onboardings?hostname=r01-cmp01", admin, nil, &page); code != 200 || page.Total != 0 {
		t.Fatalf("list of another host: %d %+v", code, page)
	}

	// The revision, its diff and the exported layer show the node.
	var revs []apitypes.RevisionSummary
	f.json(t, "GET", "/api/v1/designs", admin, nil, &revs)
	if last := revs[len(revs)-1]; last.ID != w.Onboarding.Revision || !strings.Contains(strings.Join(last.Roots, ","), "api-layer") {
		t.Errorf("designs: the last is %+v, want %s with the api-layer root", last, w.Onboarding.Revision)
	}
	if code, b := f.do(t, "GET", "/api/v1/designs/"+w.Onboarding.Revision+"/diff", admin, "", nil); code != 200 || !strings.Contains(string(b), host) {
		t.Errorf("diff: %d %s", code, b)
	}
	code, layer := f.do(t, "GET", "/api/v1/designs/layer", admin, "", nil)
	if code != 200 || !strings.Contains(string(layer), "name: "+host) || !strings.Contains(string(layer), "address: "+bmc) {
		t.Fatalf("layer: %d %s", code, layer)
	}
	if code, b := f.do(t, "POST", "/api/v1/admin/onboardings", admin, "application/json", mustJSON(one)); code != http.StatusConflict {
		t.Errorf("onboarding it twice: %d %s", code, b)
	}

	// Committed to git: the full design defines the node; it leaves the
	// layer. Its storage there is not the onboarding's, on a deployed
	// machine: a redeploy, applied once approved.
	var refused api.Problem
	code, b = f.do(t, "POST", "/api/v1/designs", op, "application/gzip", exampleWithout(t))
	if err := json.Unmarshal(b, &refused); err != nil || code != http.StatusConflict || len(refused.Destructive) != 1 ||
		!strings.HasPrefix(refused.Destructive[0], "redeploy "+host) || len(refused.Approve) != 64 {
		t.Fatalf("apply of the full design, unapproved: %d %s; want 409 naming the redeploy of %s", code, b, host)
	}
	var applied apitypes.Applied
	code, b = f.do(t, "POST", "/api/v1/designs?approve="+refused.Approve, op, "application/gzip", exampleWithout(t))
	if err := json.Unmarshal(b, &applied); err != nil || code != http.StatusCreated || len(applied.LayerTakenOver) != 1 || applied.LayerTakenOver[0] != "Node/"+host {
		t.Fatalf("apply of the full design: %d %s", code, b)
	}
	if code, b := f.do(t, "GET", "/api/v1/designs/layer", admin, "", nil); code != 200 || strings.Contains(string(b), "kind: Node") {
		t.Errorf("the layer after the take-over: %d %s", code, b)
	}
}

// siteProfile creates a profile in site and answers its ID: an
// onboarding names one (profile_id is required).
func siteProfile(t *testing.T, f *fixture, site string) string {
	t.Helper()
	var p siteregistry.Profile
	if code := f.json(t, "POST", "/api/v1/admin/maas-sites/"+site+"/profiles", f.Token[api.RoleAdmin], map[string]any{"name": "std"}, &p); code != http.StatusCreated || p.ID == "" {
		t.Fatalf("create a site profile: %d %+v", code, p)
	}
	return p.ID
}
