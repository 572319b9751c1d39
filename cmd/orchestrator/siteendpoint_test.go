package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/sites"
)

// The Site's MAAS endpoint and key come from the site record of its name
// when there is one (a design that also names them is refused: it could
// send the record's key elsewhere); a disabled record stops the engine;
// without a record the design's are used.
func TestSiteEndpointFromRecord(t *testing.T) {
	rec := sites.Endpoint{Record: sites.Record{ID: "ms-0123456789", Name: "dc1", URL: "http://maas.dc1/MAAS"}, APIKey: drivers.NewSecret("c:t:s")}
	bind := func(name string) (sites.Endpoint, error) {
		switch name {
		case "dc1":
			return rec, nil
		case "dc2":
			return sites.Endpoint{}, sites.ErrDisabled
		}
		return sites.Endpoint{}, sites.ErrNotFound
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
	if _, err := siteEndpoint(site("dc2", "", ""), bind, resolve); !errors.Is(err, sites.ErrDisabled) {
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
