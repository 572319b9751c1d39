package orchestrator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/internal/testsite"
	"github.com/slipway-dev/slipway/orchestrator"
)

// profiles are site profiles by site and name ("" for the default).
type profiles map[[2]string]orchestrator.SiteProfile

func (p profiles) SiteProfile(_ context.Context, site, name string) (orchestrator.SiteProfile, bool, error) {
	sp, ok := p[[2]string{site, name}]
	return sp, ok, nil
}

// TestSiteProfileAtDeploy: a node whose host profile names a site profile
// deploys the profile's series and kernel, and a node naming none deploys
// its site's default profile's, as the lab's MAAS says of the machines
// (not the engine); a node naming a profile its site lacks fails at the
// stage that needs it, saying which.
func TestSiteProfileAtDeploy(t *testing.T) {
	d := testsite.Example(t)
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
	p := profiles{{site, "h100"}: {Name: "h100", Series: "noble", Kernel: "hwe-24.04"}, {site, ""}: {Name: "base", Series: "focal"}}
	env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) { c.SiteProfiles = p })
	e := engine(t, env)
	run(t, e, orchestrator.Request{Action: orchestrator.ActionPrepareSite}, orchestrator.TaskSucceeded)
	run(t, e, orchestrator.Request{Action: orchestrator.ActionDeployNodes, Filter: orchestrator.Filter{Sets: []design.NodeFilter{{Names: []string{gpu, cmp}}}}},
		orchestrator.TaskSucceeded)
	raw, err := env.MAASCall(t.Context(), "GET", "/machines/", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ms []struct {
		Hostname     string  `json:"hostname"`
		DistroSeries string  `json:"distro_series"`
		HWEKernel    *string `json:"hwe_kernel"`
	}
	if err := json.Unmarshal(raw, &ms); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range ms {
		k := ""
		if m.HWEKernel != nil {
			k = *m.HWEKernel
		}
		got[m.Hostname] = m.DistroSeries + " " + k
	}
	if got[gpu] != "noble hwe-24.04" || got[cmp] != "focal " {
		t.Errorf("the lab's MAAS deployed %s: %q (want the h100 profile's noble hwe-24.04), %s: %q (want the default's focal)", gpu, got[gpu], cmp, got[cmp])
	}

	delete(p, [2]string{site, "h100"})
	_, res := run(t, e, orchestrator.Request{Action: orchestrator.ActionRedeployNodes, Filter: orchestrator.Filter{Sets: []design.NodeFilter{{Names: []string{gpu}}}}},
		orchestrator.TaskFailed)
	if len(res) != 1 || !strings.Contains(res[0].Reason, `site profile "h100", which site `+site+" does not have") {
		t.Errorf("a missing profile: %+v", res)
	}
}

// setProfile makes the node name a site profile, as its host profile's
// siteProfile would once resolved.
func setProfile(d *design.Design, node, profile string) {
	d.Nodes[node].Spec.SiteProfile = profile
}
