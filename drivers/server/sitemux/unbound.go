package sitemux

import (
	"context"

	"github.com/slipway-dev/slipway/drivers"
)

// Unbound is the driver of a Site with no provisioner endpoint yet (no
// site record and no maas.url): the engine starts, so that an admin can
// create the record through its API, and every call for the site's nodes
// fails saying what to do. It sees no machines (Owned is empty).
type Unbound struct{ Site string }

var _ drivers.Server = Unbound{}

func (u Unbound) err() error {
	return drivers.Errorf(drivers.Permanent, "site %s has no MAAS endpoint: create its site record (POST /api/v1/admin/maas-sites with its name, URL and API key); serve binds it within seconds, then retry", u.Site)
}

// ProbeSite fails: there is nothing to probe.
func (u Unbound) ProbeSite(context.Context) (drivers.SiteInfo, error) {
	return drivers.SiteInfo{}, u.err()
}

// PrepareSite fails.
func (u Unbound) PrepareSite(context.Context, drivers.SiteSpec) (drivers.Result, error) {
	return drivers.Result{}, u.err()
}

// IdentifyNode fails.
func (u Unbound) IdentifyNode(context.Context, drivers.Node) (drivers.Machine, drivers.Result, error) {
	return drivers.Machine{}, drivers.Result{}, u.err()
}

// Commission fails.
func (u Unbound) Commission(context.Context, drivers.NodeRef) (drivers.Result, error) {
	return drivers.Result{}, u.err()
}

// ApplyNetworking fails.
func (u Unbound) ApplyNetworking(context.Context, drivers.Node) (drivers.Result, error) {
	return drivers.Result{}, u.err()
}

// ApplyStorage fails.
func (u Unbound) ApplyStorage(context.Context, drivers.Node) (drivers.Result, error) {
	return drivers.Result{}, u.err()
}

// ApplyPlatform fails.
func (u Unbound) ApplyPlatform(context.Context, drivers.Node) (drivers.Result, error) {
	return drivers.Result{}, u.err()
}

// Deploy fails.
func (u Unbound) Deploy(context.Context, drivers.Node, drivers.Deployment) (drivers.Result, error) {
	return drivers.Result{}, u.err()
}

// Release fails.
func (u Unbound) Release(context.Context, drivers.NodeRef, drivers.Erase) (drivers.Result, error) {
	return drivers.Result{}, u.err()
}

// Status fails.
func (u Unbound) Status(context.Context, []drivers.NodeRef) ([]drivers.Machine, error) {
	return nil, u.err()
}

// Owned is empty: no machine of the site can be seen.
func (u Unbound) Owned(context.Context) ([]drivers.Machine, error) { return nil, nil }

// Inventory fails.
func (u Unbound) Inventory(context.Context, drivers.Node) (drivers.Inventory, error) {
	return drivers.Inventory{}, u.err()
}

// Recover fails.
func (u Unbound) Recover(context.Context, drivers.NodeRef, drivers.Recovery) (drivers.Result, error) {
	return drivers.Result{}, u.err()
}
