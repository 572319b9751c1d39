package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/siteregistry"
)

// The Site's MAAS endpoint and key come from the site record of its name
// when there is one (a design that also names them is refused: it could
// send the record's key elsewhere); a disabled record stops the engine;
// without a record the design's are used.
func TestSiteEndpointFromRecord(t *testing.T) {
	rec := siteregistry.Endpoint{Record: siteregistry.Record{ID: "ms-0123456789", Name: "dc1", URL: "http://maas.dc1/MAAS"}, APIKey: drivers.NewSecret("c:t:s")}
	bind := func(name string) (siteregistry.Endpoint, error) {
		switch name {
		case "dc1":
			return rec, nil
		case "dc2":
			return siteregistry.Endpoint{}, siteregistry.ErrDisabled
		}
		return siteregistry.Endpoint{}, siteregistry.ErrNotFound
	}
	resolve := func(ref string) (drivers.Secret, error) { return drivers.NewSecret("from-design"), nil }
	site := func(name, url, key string) *design.Site {
		return &design.Site{Metadata: design.ObjectMeta{Name: name}, Spec: design.SiteSpec{MAAS: design.MAASConfig{URL: url, APIKey: key}}}
	}
	ep, err := siteEndpoint(site("dc1", "", ""), bind, resolve)
	if err != nil || ep.url != rec.Record.URL || ep.key.Reveal() != "c:t:s" {
		t.Fatalf("bound: %q %v", ep.url, err)
	}
	if _, err := siteEndpoint(site("dc1", "http://evil.example/MAAS", ""), bind, resolve); err == nil || !strings.Contains(err.Error(), "remove maas.url") {
		t.Fatalf("bound, with the design's URL too: %v", err)
	}
	if _, err := siteEndpoint(site("dc2", "", ""), bind, resolve); !errors.Is(err, siteregistry.ErrDisabled) {
		t.Fatalf("disabled: %v", err)
	}
	ep, err = siteEndpoint(site("lab", "http://127.0.0.1:5240/MAAS", "secret:maas-key"), bind, resolve)
	if err != nil || ep.url != "http://127.0.0.1:5240/MAAS" || ep.key.Reveal() != "from-design" {
		t.Fatalf("unbound: %q %v", ep.url, err)
	}
}

// A site record's erase policy becomes its MAAS driver's default erase.
func TestEraseSettings(t *testing.T) {
	for policy, want := range map[string]string{"none": "erase=false", "quick": "quickErase=true", "secure": "secureErase=true", "": ""} {
		got := ""
		for k, v := range eraseSettings(policy) {
			got = k + "=" + v
		}
		if got != want {
			t.Errorf("policy %q: %q, want %q", policy, got, want)
		}
	}
}

// cfgRegistry records the configuration its server driver is built with.
type cfgRegistry struct{ got drivers.Config }

func (r *cfgRegistry) OOB(string, drivers.Config) (drivers.OOB, error) { return nil, nil }
func (r *cfgRegistry) Network(string, drivers.Config) (drivers.Network, error) {
	return nil, nil
}
func (r *cfgRegistry) Server(_ string, cfg drivers.Config) (drivers.Server, error) {
	r.got = cfg
	return nil, nil
}

// A site record's policy reaches its MAAS driver's settings: erase,
// skip_bmc_config (unset: the driver's default), max_concurrent.
func TestSitePolicySettings(t *testing.T) {
	no := false
	d := &design.Design{Site: &design.Site{Metadata: design.ObjectMeta{Name: "dc1"}}}
	for _, c := range []struct {
		policy siteregistry.Policy
		want   map[string]string
	}{
		{siteregistry.Policy{SkipBMCConfig: &no, Erase: "quick"}, map[string]string{"skipBMCConfig": "false", "quickErase": "true"}},
		{siteregistry.Policy{MaxConcurrent: 7}, map[string]string{"skipBMCConfig": "", "quickErase": ""}},
	} {
		bind := func(string) (siteregistry.Endpoint, error) {
			return siteregistry.Endpoint{Record: siteregistry.Record{ID: "ms-0123456789", Name: "dc1", URL: "http://maas.dc1/MAAS", Policy: c.policy},
				APIKey: drivers.NewSecret("c:t:s")}, nil
		}
		reg := &cfgRegistry{}
		_, limit, err := oneSiteDriver(reg, d, d.Site, nil, nil, bind)
		if err != nil || limit != c.policy.MaxConcurrent {
			t.Fatalf("%+v: limit %d %v", c.policy, limit, err)
		}
		for k, v := range c.want {
			if reg.got.Settings[k] != v {
				t.Errorf("%+v: setting %s=%q, want %q", c.policy, k, reg.got.Settings[k], v)
			}
		}
	}
}
