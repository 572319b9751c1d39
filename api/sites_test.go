package api_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/siteregistry"
	"github.com/slipway-dev/slipway/statestore"
)

// TestMAASSites: admins create, read, change, disable and re-key site
// records; the API key goes in and never comes out (answers, audit);
// names are unique; the probe checks the site's MAAS with its stored key
// (the lab's: answers; a wrong key: not authenticated); the secret routes
// can't touch a site's key.
func TestMAASSites(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	info := f.Env.Lab.Info()
	admin, op := f.Token[api.RoleAdmin], f.Token[api.RoleOperator]
	base := "/api/v1/admin/maas-sites"
	create := map[string]any{"name": "dc1", "url": info.MAASURL, "api_key": info.APIKey, "policy": map[string]any{"max_concurrent": 8, "erase": "quick"}}
	if code := f.json(t, "POST", base, op, create, nil); code != http.StatusForbidden {
		t.Fatalf("create as an operator: %d", code)
	}
	var rec siteregistry.Record
	if code := f.json(t, "POST", base, admin, create, &rec); code != http.StatusCreated || rec.ID == "" || !rec.Credentials.Set || rec.Policy.Erase != "quick" {
		t.Fatalf("create: %d %+v", code, rec)
	}
	if code := f.json(t, "POST", base, admin, create, nil); code != http.StatusConflict {
		t.Errorf("a second site named dc1: %d", code)
	}
	bad := map[string]any{"name": "dc2", "url": "file:///etc/passwd", "api_key": info.APIKey}
	if code, b := f.do(t, "POST", base, admin, "application/json", mustJSON(bad)); code != http.StatusBadRequest || strings.Contains(string(b), info.APIKey) {
		t.Errorf("a file URL: %d %s", code, b)
	}

	var probe apitypes.MAASSiteProbe
	if code := f.json(t, "POST", base+"/"+rec.ID+"/probe", admin, nil, &probe); code != 200 || !probe.Info.Reachable || !probe.Info.Authenticated ||
		probe.Info.Version == "" || probe.Error != "" {
		t.Fatalf("probe of the lab's MAAS: %d %+v", code, probe)
	}
	if len(probe.Info.DHCPSubnets) != 0 {
		t.Errorf("DHCP before prepare_site: %v, want none", probe.Info.DHCPSubnets)
	}
	if len(probe.Scripts) != 0 {
		t.Errorf("scripts checked with no profile naming any: %+v", probe.Scripts)
	}
	// The scripts the site's profiles name: present (with their version)
	// or not, from the site's own scripts/.
	prof := map[string]any{"name": "burnin", "commissioning_scripts": []string{"maas-lshw", "custom-burnin"}, "testing_scripts": []string{"storage", "none"}}
	if code := f.json(t, "POST", base+"/"+rec.ID+"/profiles", admin, prof, nil); code != http.StatusCreated {
		t.Fatalf("profile: %d", code)
	}
	bad = map[string]any{"name": "evil", "commissioning_scripts": []string{"a,b"}}
	if code := f.json(t, "POST", base+"/"+rec.ID+"/profiles", admin, bad, nil); code != http.StatusBadRequest {
		t.Errorf("a script name with a comma: %d", code)
	}
	probe = apitypes.MAASSiteProbe{}
	f.json(t, "POST", base+"/"+rec.ID+"/probe", admin, nil, &probe)
	checks := map[string]apitypes.ScriptCheck{}
	for _, c := range probe.Scripts {
		checks[c.Name] = c
	}
	if c := checks["maas-lshw"]; !c.Present || len(c.Matches) != 1 || c.Matches[0].Version == "" || c.Matches[0].Type != "commissioning" || c.Profiles[0] != "burnin" {
		t.Errorf("maas-lshw: %+v", c)
	}
	if c, ok := checks["custom-burnin"]; !ok || c.Present {
		t.Errorf("custom-burnin, which the site lacks: %+v", c)
	}
	if c := checks["storage"]; !c.Present || len(c.Matches) < 3 {
		t.Errorf("the storage tag's tests: %+v", c)
	}
	if _, ok := checks["none"]; ok || len(probe.Scripts) != 3 {
		t.Errorf("checks: %+v", probe.Scripts)
	}
	var task struct{ ID string }
	if code := f.json(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], map[string]any{"action": "prepare_site"}, &task); code != http.StatusCreated {
		t.Fatalf("prepare_site: %d", code)
	}
	wait(t, f, task.ID)
	probe = apitypes.MAASSiteProbe{}
	pxe := designtest.Example(t).Networks["pxe"].Spec.CIDR
	if code := f.json(t, "POST", base+"/"+rec.ID+"/probe", admin, nil, &probe); code != 200 || !slices.Contains(probe.Info.DHCPSubnets, pxe) {
		t.Errorf("DHCP after prepare_site: %d %v, want the PXE network %s", code, probe.Info.DHCPSubnets, pxe)
	}
	var rotated siteregistry.Record
	if code := f.json(t, "POST", base+"/"+rec.ID+"/credentials", admin, map[string]string{"api_key": "a:b:wrong"}, &rotated); code != 200 ||
		!rotated.Credentials.Updated.After(rec.Credentials.Updated) {
		t.Fatalf("rotate: %d %+v", code, rotated)
	}
	probe = apitypes.MAASSiteProbe{}
	if code := f.json(t, "POST", base+"/"+rec.ID+"/probe", admin, nil, &probe); code != 200 || probe.Info.Authenticated || probe.Error == "" {
		t.Errorf("probe with a wrong key: %d %+v", code, probe)
	}

	status := "disabled"
	var patched siteregistry.Record
	if code := f.json(t, "PATCH", base+"/"+rec.ID, admin, map[string]any{"status": status, "url": "https://maas.dc1.example/MAAS"}, &patched); code != 200 ||
		patched.Status != "disabled" || patched.URL != "https://maas.dc1.example/MAAS" {
		t.Errorf("patch: %d %+v", code, patched)
	}
	if code := f.json(t, "PATCH", base+"/"+rec.ID, admin, map[string]any{"status": "enabled"}, nil); code != 200 {
		t.Errorf("enable again: %d", code)
	}
	var disabled siteregistry.Record
	if code := f.json(t, "DELETE", base+"/"+rec.ID, admin, nil, &disabled); code != 200 || disabled.Status != "disabled" {
		t.Errorf("delete (disable): %d %+v", code, disabled)
	}
	var all []siteregistry.Record
	if code := f.json(t, "GET", base, admin, nil, &all); code != 200 || len(all) != 1 || all[0].Status != "disabled" {
		t.Errorf("list: %d %+v", code, all)
	}
	if code := f.json(t, "GET", base+"/ms-0000000000", admin, nil, nil); code != http.StatusNotFound {
		t.Errorf("an unknown site: %d", code)
	}
	if code := f.json(t, "PUT", "/api/v1/secrets/"+siteregistry.CredentialSecret(rec.ID), admin, map[string]string{"value": "x:y:z"}, nil); code != http.StatusBadRequest {
		t.Errorf("the secret route writing a site's key: %d", code)
	}
	if code := f.json(t, "DELETE", "/api/v1/secrets/"+siteregistry.CredentialSecret(rec.ID), admin, nil, nil); code != http.StatusBadRequest {
		t.Errorf("the secret route deleting a site's key: %d", code)
	}
	_, listed := f.do(t, "GET", base, admin, "", nil)
	page, _ := f.Store.ReadLog(t.Context(), "audit", 0, 0)
	for _, b := range append([][]byte{listed}, entries(page)...) {
		if strings.Contains(string(b), info.APIKey) || strings.Contains(string(b), "a:b:wrong") {
			t.Fatalf("a site's API key came out: %s", b)
		}
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func entries(log []statestore.LogEntry) [][]byte {
	out := make([][]byte, len(log))
	for i, e := range log {
		out[i] = e.Value
	}
	return out
}

// TestSiteProfilesAndRoCE: profiles through the API; a RoCE bulk upsert
// against the current design (its example GPU node and its NIC aliases)
// is stored, and one with an overlapping pair answers 422 naming both,
// storing nothing.
func TestSiteProfilesAndRoCE(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin := f.Token[api.RoleAdmin]
	d := designtest.Example(t) // the design the fixture stored
	var rec siteregistry.Record
	if code := f.json(t, "POST", "/api/v1/admin/maas-sites", admin, map[string]any{"name": d.Site.Metadata.Name, "url": "http://maas.example:5240/MAAS",
		"api_key": "a:b:c"}, &rec); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	base := "/api/v1/admin/maas-sites/" + rec.ID
	var p siteregistry.Profile
	if code := f.json(t, "POST", base+"/profiles", admin, map[string]any{"name": "gpu", "distro_series": "jammy", "kernel": "hwe-22.04", "roce": true}, &p); code != http.StatusCreated || p.ID == "" {
		t.Fatalf("create profile: %d %+v", code, p)
	}
	if code := f.json(t, "PATCH", base, admin, map[string]any{"policy": map[string]any{"default_profile": "gpu"}}, nil); code != 200 {
		t.Fatalf("set the default profile: %d", code)
	}
	if code, b := f.do(t, "DELETE", base+"/profiles/"+p.ID, admin, "", nil); code != http.StatusConflict {
		t.Errorf("delete the default profile: %d %s", code, b)
	}
	var ps []siteregistry.Profile
	if code := f.json(t, "GET", base+"/profiles", admin, nil, &ps); code != 200 || len(ps) != 1 || !ps[0].RoCE {
		t.Errorf("profiles: %d %+v", code, ps)
	}

	host, iface, iface2 := nodeWithTwoAliases(t, d)
	ok := map[string]any{"items": []map[string]string{{"hostname": host, "interface": iface, "ipv4_cidr": "10.250.0.0/31"}}}
	var got apitypes.RoCEAssignments
	if code := f.json(t, "POST", base+"/roce-assignments", admin, ok, &got); code != 200 || len(got.Items) != 1 || got.Items[0].ID == "" {
		t.Fatalf("upsert: %d %+v", code, got)
	}
	overlapping := map[string]any{"items": []map[string]string{{"hostname": host, "interface": iface2, "ipv4_cidr": "10.250.0.0/31"},
		{"hostname": host, "interface": "no-such-nic", "ipv4_cidr": "10.250.0.4/31"}}}
	code, b := f.do(t, "POST", base+"/roce-assignments", admin, "application/json", mustJSON(overlapping))
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(b), "roce-overlap") ||
		!strings.Contains(string(b), host+" "+iface2+" 10.250.0.0/31 overlaps "+host+" "+iface+" 10.250.0.0/31 (stored)") ||
		!strings.Contains(string(b), "no-such-nic") {
		t.Fatalf("overlapping pair: %d %s", code, b)
	}
	if code := f.json(t, "GET", base+"/roce-assignments?hostname="+host, admin, nil, &got); code != 200 || len(got.Items) != 1 || got.Items[0].IPv4CIDR != "10.250.0.0/31" {
		t.Errorf("after the refusal: %d %+v", code, got)
	}
	if code, _ := f.do(t, "DELETE", base+"/roce-assignments/"+got.Items[0].ID, admin, "", nil); code != http.StatusNoContent {
		t.Errorf("delete: %d", code)
	}
}

// nodeWithTwoAliases is a node of d whose hardware profile names at
// least two devices the node can carry a RoCE address on (not a bond's
// member, not beside DHCP), and two of those aliases.
func nodeWithTwoAliases(t *testing.T, d *design.Design) (string, string, string) {
	for _, name := range d.NodeNames() {
		n := d.Nodes[name]
		hp := d.HardwareProfiles[n.Spec.HardwareProfile]
		if hp == nil {
			continue
		}
		aliases := slices.DeleteFunc(slices.Sorted(maps.Keys(hp.Spec.DeviceAliases)), func(a string) bool {
			return driverspec.CheckRoCE(d, n, []driverspec.RoCEAddress{{Interface: a, CIDR: "10.250.0.0/31"}}) != nil
		})
		if len(aliases) >= 2 {
			return name, aliases[0], aliases[1]
		}
	}
	t.Fatal("the example design has no node with two device aliases")
	return "", "", ""
}

// GET /nodes?site= lists the nodes of a Site, each saying its Site.
func TestNodesBySite(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var page struct {
		Items []apitypes.NodeSummary `json:"items"`
		Total int                    `json:"total"`
	}
	site := designtest.Example(t).Site.Metadata.Name
	if code := f.json(t, "GET", "/api/v1/nodes?site="+site, f.Token[api.RoleViewer], nil, &page); code != 200 || page.Total == 0 || page.Items[0].Site != site {
		t.Fatalf("nodes of %s: %d %+v", site, code, page)
	}
	if code := f.json(t, "GET", "/api/v1/nodes?site=elsewhere", f.Token[api.RoleViewer], nil, &page); code != 200 || page.Total != 0 {
		t.Fatalf("nodes of another site: %d %+v", code, page)
	}
}
