package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/statestore"
)

// errNoDesign is what a serve started on an empty state answers until its
// first design is applied: readiness, and any driver call before then.
var errNoDesign = errors.New("no design applied yet: POST one to /api/v1/designs (`orchestrator apply --server URL ROOT`), " +
	"then set the secrets it names (`orchestrator secret set --server URL NAME`) or create its site record")

// currentOrEmpty is the store's current design and its revision ID; under serve on a state
// where none was applied yet, an empty one instead (empty true): serve
// then starts and takes its first design through the API (issue 35).
func currentOrEmpty(ctx context.Context, c Config, st statestore.Store) (d *design.Design, rev string, empty bool, err error) {
	d, rev, err = currentDesignRev(ctx, st, c.State)
	if err != nil && c.startEmpty && errors.Is(err, statestore.ErrNotFound) {
		return &design.Design{}, "", true, nil
	}
	return d, rev, false, err
}

// emptyDrivers are the drivers of a serve with no design yet: the
// in-tree OOB drivers by type (a profile of the first design names one of
// them; a plugin OOB type needs a restart), no network driver calls, and a
// server driver that answers errNoDesign until the rebinding (rebind.go)
// builds the first design's.
func emptyDrivers(reg registryLike) (orchestrator.Drivers, error) {
	oob, err := reg.OOB("ipmi", drivers.Config{})
	if err != nil {
		return orchestrator.Drivers{}, err
	}
	byType := map[string]drivers.OOB{"ipmi": oob}
	if rf, err := reg.OOB("redfish", drivers.Config{}); err == nil {
		byType["redfish"] = rf
	}
	net, err := reg.Network("noop", drivers.Config{})
	if err != nil {
		return orchestrator.Drivers{}, err
	}
	return orchestrator.Drivers{OOB: oob, OOBByType: byType, Server: noDesign{}, Network: net}, nil
}

// noDesign is the server driver before the first design's is built:
// every call answers its err, errNoDesign (nil) or why the first design's
// drivers could not be built (its MAAS key not set yet, say). The engine
// creates no task before a design exists.
type noDesign struct{ err error }

var _ drivers.Server = noDesign{}

func (d noDesign) why() error {
	if d.err == nil {
		return errNoDesign
	}
	return d.err
}

func (d noDesign) fail(node string) error {
	if node == "" {
		return drivers.Errorf(drivers.Permanent, "%v", d.why())
	}
	return drivers.Errorf(drivers.Permanent, "node %s: %v", node, d.why())
}

func (d noDesign) ProbeSite(context.Context) (drivers.SiteInfo, error) {
	return drivers.SiteInfo{}, d.why()
}

func (d noDesign) PrepareSite(context.Context, drivers.SiteSpec) (drivers.Result, error) {
	return drivers.Result{}, d.fail("")
}

func (d noDesign) IdentifyNode(_ context.Context, n drivers.Node) (drivers.Machine, drivers.Result, error) {
	return drivers.Machine{}, drivers.Result{}, d.fail(n.Name)
}

func (d noDesign) Commission(_ context.Context, n drivers.NodeRef) (drivers.Result, error) {
	return drivers.Result{}, d.fail(n.Name)
}

func (d noDesign) ApplyNetworking(_ context.Context, n drivers.Node) (drivers.Result, error) {
	return drivers.Result{}, d.fail(n.Name)
}

func (d noDesign) ApplyStorage(_ context.Context, n drivers.Node) (drivers.Result, error) {
	return drivers.Result{}, d.fail(n.Name)
}

func (d noDesign) ApplyPlatform(_ context.Context, n drivers.Node) (drivers.Result, error) {
	return drivers.Result{}, d.fail(n.Name)
}

func (d noDesign) Deploy(_ context.Context, n drivers.Node, _ drivers.Deployment) (drivers.Result, error) {
	return drivers.Result{}, d.fail(n.Name)
}

func (d noDesign) Release(_ context.Context, n drivers.NodeRef, _ drivers.Erase) (drivers.Result, error) {
	return drivers.Result{}, d.fail(n.Name)
}

func (d noDesign) Status(context.Context, []drivers.NodeRef) ([]drivers.Machine, error) {
	return nil, d.fail("")
}

// Owned: before any design there is no site, so nothing is owned (the
// reconciliation at start and at each interval finds nothing, instead of
// failing and warning every interval); once a design exists but its
// drivers could not be built, why.
func (d noDesign) Owned(context.Context) ([]drivers.Machine, error) {
	if d.err == nil {
		return nil, nil
	}
	return nil, d.fail("")
}

func (d noDesign) Inventory(_ context.Context, n drivers.Node) (drivers.Inventory, error) {
	return drivers.Inventory{}, d.fail(n.Name)
}

func (d noDesign) Recover(_ context.Context, n drivers.NodeRef, _ drivers.Recovery) (drivers.Result, error) {
	return drivers.Result{}, d.fail(n.Name)
}

var _ drivers.ServerPlanner = noDesign{}

// PlanNodes: there is no provisioner to read yet (why).
func (d noDesign) PlanNodes(context.Context, []drivers.Node) ([]drivers.MachinePlan, error) {
	return nil, fmt.Errorf("%w: %v", drivers.ErrCannotPlan, d.why())
}

// PlanSite: there is no provisioner to read yet (why).
func (d noDesign) PlanSite(context.Context, drivers.SiteSpec) ([]drivers.PlannedChange, error) {
	return nil, fmt.Errorf("%w: %v", drivers.ErrCannotPlan, d.why())
}

// SiteImages fails as every call does: there are no Site drivers yet.
func (d noDesign) SiteImages(_ context.Context, site string) (drivers.ServerImages, error) {
	return nil, drivers.Errorf(drivers.Permanent, "images of site %s: %v", site, d.why())
}
