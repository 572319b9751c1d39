package orchestrator_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// profiles are site profiles by site and name ("" for the default).
type profiles map[[2]string]orchestrator.SiteProfile

func (p profiles) SiteProfile(_ context.Context, site, name string) (orchestrator.SiteProfile, bool, error) {
	sp, ok := p[[2]string{site, name}]
	return sp, ok, nil
}

// roce are RoCE addresses by hostname.
type roce map[string][]driverspec.RoCEAddress

func (r roce) RoCEAddresses(_ context.Context, _, host string) ([]driverspec.RoCEAddress, error) {
	return r[host], nil
}

// TestSiteProfileAtDeploy: a node whose host profile names a site profile
// deploys the profile's series and kernel, with its RoCE address linked
// (the profile enables RoCE), and a node naming none deploys its site's
// default profile's, without RoCE, as the lab's MAAS says of the machines
// (not the engine); a node naming a profile its site lacks fails at the
// stage that needs it, saying which.
func TestSiteProfileAtDeploy(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	site := d.Site.Metadata.Name
	gpu, cmp := "", ""
	for _, name := range d.NodeNames() {
		switch d.Nodes[name].Spec.HostProfile {
		case "compute-gpu":
			gpu = name
		case "compute":
			cmp = name
		}
	}
	setProfile(d, gpu, "h100")
	p := profiles{{site, "h100"}: {Name: "h100", Series: "noble", Kernel: "hwe-24.04", RoCE: true,
		CommissioningScripts: []string{"maas-lshw"}, TestingScripts: []string{"none"}}, {site, ""}: {Name: "base", Series: "focal"}}
	// Both nodes have RoCE assignments; only the h100 profile enables RoCE.
	rc := roce{gpu: {{Interface: "bond0", CIDR: "10.250.0.1/31"}}, cmp: {{Interface: "bond0", CIDR: "10.250.0.3/31"}}}
	env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) { c.SiteProfiles, c.RoCE = p, rc })
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{gpu, cmp}}}}},
		record.TaskSucceeded)
	raw, err := env.MAASCall(t.Context(), "GET", "/machines/", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ms []struct {
		SystemID     string  `json:"system_id"`
		Hostname     string  `json:"hostname"`
		DistroSeries string  `json:"distro_series"`
		HWEKernel    *string `json:"hwe_kernel"`
		Interfaces   []struct {
			Links []struct {
				Mode string `json:"mode"`
				IP   string `json:"ip_address"`
			} `json:"links"`
		} `json:"interface_set"`
	}
	if err := json.Unmarshal(raw, &ms); err != nil {
		t.Fatal(err)
	}
	got, roceIPs := map[string]string{}, map[string][]string{}
	for _, m := range ms {
		for _, i := range m.Interfaces {
			for _, l := range i.Links {
				if strings.HasPrefix(l.IP, "10.250.") {
					roceIPs[m.Hostname] = append(roceIPs[m.Hostname], l.Mode+" "+l.IP)
				}
			}
		}
		k := ""
		if m.HWEKernel != nil {
			k = *m.HWEKernel
		}
		got[m.Hostname] = m.DistroSeries + " " + k
	}
	if got[gpu] != "noble hwe-24.04" || got[cmp] != "focal " {
		t.Errorf("the lab's MAAS deployed %s: %q (want the h100 profile's noble hwe-24.04), %s: %q (want the default's focal)", gpu, got[gpu], cmp, got[cmp])
	}
	region := env.Lab.Regions()[0].MAAS // the example's one Site
	for _, m := range ms {              // the scripts each machine's commissioning asked for, as the lab's MAAS kept them
		c := region.LastCommission(m.SystemID)
		comm, test := c.Commissioning, c.Testing
		if m.Hostname == gpu && (!slices.Equal(comm, []string{"maas-lshw"}) || !slices.Equal(test, []string{"none"})) {
			t.Errorf("%s commissioned with %v / %v, want the h100 profile's maas-lshw / none", gpu, comm, test)
		}
		if m.Hostname == cmp && (comm != nil || test != nil) {
			t.Errorf("%s commissioned with %v / %v, want MAAS's defaults", cmp, comm, test)
		}
	}
	if len(roceIPs[gpu]) != 1 || roceIPs[gpu][0] != "static 10.250.0.1" || len(roceIPs[cmp]) != 0 {
		t.Errorf("RoCE links in the lab's MAAS: %v (want %s static 10.250.0.1 only)", roceIPs, gpu)
	}

	delete(p, [2]string{site, "h100"})
	_, res := run(t, e, record.Request{Action: record.ActionRedeployNodes, Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{gpu}}}}},
		record.TaskFailed)
	if len(res) != 1 || !strings.Contains(res[0].Reason, `site profile "h100", which site `+site+" does not have") {
		t.Errorf("a missing profile: %+v", res)
	}
}

// setProfile makes the node name a site profile, as its host profile's
// siteProfile would once resolved.
func setProfile(d *design.Design, node, profile string) {
	d.Nodes[node].Spec.SiteProfile = profile
}
