package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	maasdrv "github.com/slipway-dev/slipway/drivers/server/maas"
	"github.com/slipway-dev/slipway/drivers/server/sitemux"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/siteregistry"
	"github.com/slipway-dev/slipway/statestore"
)

// serverDriver builds the server driver of the design: the Site's, or,
// with several Sites, one per Site (each with its own endpoint, key and
// limit) behind drivers/server/sitemux, which finds a node's site in the
// current design through siteOf.
func serverDriver(reg registryLike, d *design.Design, base map[string]string, resolve func(string) (drivers.Secret, error),
	bind binder, siteOf func(string) (string, bool), m *sitemux.Metrics) (drivers.Server, error) {
	names := d.SiteNames()
	if len(names) < 2 {
		srv, _, err := oneSiteDriver(reg, d, d.Site, base, resolve, bind)
		return srv, err
	}
	all := map[string]sitemux.Site{}
	for _, name := range names {
		site := d.SiteNamed(name)
		if !hasEndpoint(site, bind) {
			all[name] = sitemux.Site{Driver: sitemux.Unbound{Site: name}}
			continue
		}
		srv, limit, err := oneSiteDriver(reg, d, site, base, resolve, bind)
		if err != nil {
			return nil, fmt.Errorf("site %s: %w", name, err)
		}
		all[name] = sitemux.Site{Driver: srv, Limit: limit}
	}
	if m == nil {
		m = sitemux.NewMetrics()
	}
	return sitemux.NewWith(all, siteOf, m)
}

// oneSiteDriver is one Site's server driver and its concurrency limit
// (its site record's policy; 0: the default).
func oneSiteDriver(reg registryLike, d *design.Design, site *design.Site, base map[string]string,
	resolve func(string) (drivers.Secret, error), bind binder) (drivers.Server, int, error) {
	cfg := drivers.Config{Settings: maps.Clone(base), Secrets: map[string]drivers.Secret{}}
	if cfg.Settings == nil {
		cfg.Settings = map[string]string{}
	}
	ep, err := siteEndpoint(site, bind, resolve)
	if err != nil {
		return nil, 0, err
	}
	cfg.Settings[maasdrv.SettingURL] = ep.url
	if n, ok := d.CommissionRetries(); ok { // the design's lifecycle.commissionRetries
		cfg.Settings[maasdrv.SettingCommissionRetries] = strconv.Itoa(n)
	}
	if ep.key != nil {
		cfg.Secrets[maasdrv.SecretAPIKey] = *ep.key
	}
	maps.Copy(cfg.Settings, eraseSettings(ep.erase))
	if ep.skipBMC != nil { // the site record's policy.skip_bmc_config
		cfg.Settings[maasdrv.SettingSkipBMCConfig] = strconv.FormatBool(*ep.skipBMC)
	}
	srv, err := reg.Server(orDefault(site.Spec.Drivers.Server, "maas"), cfg)
	return srv, ep.limit, err
}

// designSites answers a node's site from the current design, reading it
// again only when the current revision changes.
type designSites struct {
	st statestore.Store

	mu  sync.Mutex
	rev string
	d   *design.Design
}

// siteOf is the Site of node name in the current design.
func (s *designSites) siteOf(name string) (string, bool) {
	d := s.current()
	if d == nil || d.Nodes[name] == nil {
		return "", false
	}
	return d.SiteNameOf(d.Nodes[name]), true
}

func (s *designSites) current() *design.Design {
	ctx := context.Background()
	id, err := statestore.CurrentID(ctx, s.st)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || id == s.rev {
		return s.d
	}
	d, err := CurrentDesign(ctx, s.st, "")
	if err != nil {
		return s.d
	}
	s.rev, s.d = id, d
	return d
}

// hasEndpoint reports whether a Site has a site record or a maas.url (a
// record that is disabled counts: its error is the driver's to give).
func hasEndpoint(site *design.Site, bind binder) bool {
	if site.Spec.MAAS.URL != "" {
		return true
	}
	if bind == nil {
		return false
	}
	_, err := bind(site.Metadata.Name)
	return !errors.Is(err, siteregistry.ErrNotFound)
}

// eraseSettings are the MAAS driver settings of a site record's erase
// policy: how releases that name no policy of their own (the design's
// lifecycle.erase or a node's erase) erase the machine's disks.
func eraseSettings(policy string) map[string]string {
	switch policy {
	case "none":
		return map[string]string{maasdrv.SettingErase: "false"}
	case "quick":
		return map[string]string{maasdrv.SettingQuickErase: "true"}
	case "secure":
		return map[string]string{maasdrv.SettingSecureErase: "true"}
	}
	return nil
}

// registryLike is what siteDrivers needs of the driver registry.
type registryLike interface {
	OOB(name string, cfg drivers.Config) (drivers.OOB, error)
	Server(name string, cfg drivers.Config) (drivers.Server, error)
	Network(name string, cfg drivers.Config) (drivers.Network, error)
}

// siteDrivers builds the drivers the Site names; the MAAS API key and the
// fabric's switch passwords are the Site's secret references, resolved
// here.
// base holds the engine configuration's server driver settings, which the
// Site's override.
func siteDrivers(reg registryLike, d *design.Design, base map[string]string, resolve func(string) (drivers.Secret, error), bind binder,
	siteOf func(string) (string, bool), m *sitemux.Metrics) (orchestrator.Drivers, error) {
	var out orchestrator.Drivers
	if d.Site == nil {
		return out, fmt.Errorf("the design has no Site: it names the drivers and how to reach MAAS")
	}
	names := d.Site.Spec.Drivers
	oob, err := reg.OOB(orDefault(names.OOB, "ipmi"), drivers.Config{})
	if err != nil {
		return out, err
	}
	byType, err := profileOOBDrivers(reg, d, d.SiteOOBDriver())
	if err != nil {
		return out, err
	}
	srv, err := serverDriver(reg, d, base, resolve, bind, siteOf, m)
	if err != nil {
		return out, err
	}
	netName, netCfg, err := networkSpec(d, resolve) // netrebind.go: the fabric's switches
	if err != nil {
		return out, err
	}
	net, err := reg.Network(netName, netCfg)
	if err != nil {
		return out, err
	}
	return orchestrator.Drivers{OOB: oob, OOBByType: byType, Server: srv, Network: net}, nil
}

// binder returns the endpoint of the enabled site record called name
// (sites.Registry.Binding); its error wraps sites.ErrNotFound when there
// is none.
type binder func(name string) (siteregistry.Endpoint, error)

// siteEP is where a Site's server driver reaches its provisioner.
type siteEP struct {
	url   string
	key   *drivers.Secret
	limit int    // the site record's policy.max_concurrent (0: none)
	erase string // the site record's policy.erase ("": none)
	// skipBMC is the site record's policy.skip_bmc_config (nil: none).
	skipBMC *bool
}

// siteEndpoint is the MAAS URL and API key of a Site's server driver: its
// site record's when one has the Site's name (the design then names
// neither: the endpoint and the key are the record's, never the
// design's), else the design's maas.url and maas.apiKey.
func siteEndpoint(site *design.Site, bind binder, resolve func(string) (drivers.Secret, error)) (siteEP, error) {
	m := site.Spec.MAAS
	if bind != nil {
		ep, err := bind(site.Metadata.Name)
		switch {
		case err == nil && (m.URL != "" || m.APIKey != ""):
			return siteEP{}, fmt.Errorf("the Site %s is bound to the site record %s: its MAAS URL and API key are the record's; remove maas.url and maas.apiKey from the design",
				site.Metadata.Name, ep.Record.ID)
		case err == nil:
			return siteEP{url: ep.Record.URL, key: &ep.APIKey, limit: ep.Record.Policy.MaxConcurrent, erase: ep.Record.Policy.Erase,
				skipBMC: ep.Record.Policy.SkipBMCConfig}, nil
		case !errors.Is(err, siteregistry.ErrNotFound):
			return siteEP{}, fmt.Errorf("the Site %s: %w", site.Metadata.Name, err)
		}
	}
	if m.APIKey == "" {
		return siteEP{url: m.URL}, nil
	}
	key, err := resolve(m.APIKey)
	if err != nil {
		return siteEP{}, fmt.Errorf("the Site's maas.apiKey %s: %w", m.APIKey, err)
	}
	return siteEP{url: m.URL, key: &key}, nil
}

// profileOOBDrivers builds the OOB drivers the design's hardware profiles
// name (oob.type, oob.fallback.type) besides the Site's, by name.
func profileOOBDrivers(reg registryLike, d *design.Design, site string) (map[string]drivers.OOB, error) {
	out := map[string]drivers.OOB{}
	for _, name := range slices.Sorted(maps.Keys(d.HardwareProfiles)) {
		o := d.HardwareProfiles[name].Spec.OOB
		types := []string{o.Type}
		if o.Fallback != nil {
			types = append(types, o.Fallback.Type)
		}
		for _, typ := range types {
			if typ == "" || typ == site || out[typ] != nil {
				continue
			}
			drv, err := reg.OOB(typ, drivers.Config{})
			if err != nil {
				return nil, fmt.Errorf("hardware profile %s names the OOB driver %s: %w", name, typ, err)
			}
			out[typ] = drv
		}
	}
	return out, nil
}
