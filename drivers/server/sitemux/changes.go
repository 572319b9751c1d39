package sitemux

import (
	"context"

	"github.com/slipway-dev/slipway/drivers"
)

var _ drivers.SiteChanger = (*Server)(nil)

// SiteChanges is the changes reader of the site's driver (the only site
// when site is ""), each call under the site's concurrency limit; ok is
// false when the site is unknown or its driver reports no changes.
func (s *Server) SiteChanges(ctx context.Context, site string) (drivers.ServerChanges, bool) {
	if site == "" && len(s.names) == 1 {
		site = s.names[0]
	}
	st := s.sites[site]
	if st == nil {
		return nil, false
	}
	ch, ok := drivers.ChangesAt(ctx, st.drv, site)
	if !ok {
		return nil, false
	}
	return siteChanges{st: st, ch: ch}, true
}

// siteChanges runs a site's Changes calls under its limit.
type siteChanges struct {
	st *site
	ch drivers.ServerChanges
}

func (s siteChanges) Changes(ctx context.Context, cursor string) (drivers.Changes, error) {
	return onSite(ctx, s.st, func() (drivers.Changes, error) { return s.ch.Changes(ctx, cursor) })
}
