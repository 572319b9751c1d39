package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	maasdrv "github.com/slipway-dev/slipway/drivers/server/maas"
	"github.com/slipway-dev/slipway/drivers/server/sitemux"
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
	d, err := currentDesignIn(ctx, s.st, "")
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
