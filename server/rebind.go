package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/siteregistry"
	"github.com/slipway-dev/slipway/statestore"
)

// RebindEvery is how often the server driver looks whether what it was
// built from changed.
const RebindEvery = 2 * time.Second

// rebinding is the server driver of the current design's Sites, built
// again when what it was built from changes: an apply that adds or
// changes a Site, or a site record created, enabled, disabled, given a
// new key, URL or policy. So a running serve drives a new site without a
// restart. It looks at most once per RebindEvery; a call in flight ends
// on the driver it started on (for a moment after a change, a site's
// calls may run under the old and the new limit).
type rebinding struct {
	build func(d *design.Design) (drivers.Server, error)
	st    statestore.Store
	reg   *siteregistry.Registry // nil: no site records
	log   zerolog.Logger
	every time.Duration

	mu      sync.Mutex
	cur     drivers.Server
	stamp   string
	checked time.Time
}

// newRebinding starts from cur, the driver of the current design and
// site records as they are now.
func newRebinding(ctx context.Context, st statestore.Store, reg *siteregistry.Registry, cur drivers.Server, log zerolog.Logger,
	build func(d *design.Design) (drivers.Server, error)) (*rebinding, error) {
	r := &rebinding{build: build, st: st, reg: reg, log: log, every: RebindEvery, cur: cur}
	stamp, err := r.stampNow(ctx)
	if err != nil {
		return nil, err
	}
	r.stamp, r.checked = stamp, time.Now()
	return r, nil
}

// stampNow names what the driver is built from: the current revision and
// each site record's ID, status and last change.
func (r *rebinding) stampNow(ctx context.Context) (string, error) {
	id, err := statestore.CurrentID(ctx, r.st)
	if errors.Is(err, statestore.ErrNotFound) {
		id = "" // no design yet (nodesign.go): the first one changes the stamp
	} else if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(id)
	if r.reg != nil {
		recs, err := r.reg.List(ctx)
		if err != nil {
			return "", err
		}
		for _, rec := range recs {
			fmt.Fprintf(&b, "|%s %s %s", rec.ID, rec.Status, rec.Updated.Format(time.RFC3339Nano))
		}
	}
	return b.String(), nil
}

// server is the driver to call now, built again first when its sources
// changed. A failed look or build keeps the driver there is (and says so).
func (r *rebinding) server(ctx context.Context) drivers.Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, first := r.cur.(noDesign); !first && time.Since(r.checked) < r.every {
		return r.cur // before the first design's drivers: every call looks (a task right after the first apply)
	}
	r.checked = time.Now()
	stamp, err := r.stampNow(ctx)
	if err != nil || stamp == r.stamp {
		return r.cur
	}
	d, err := CurrentDesign(ctx, r.st, "")
	if err == nil {
		var srv drivers.Server
		if srv, err = r.build(d); err == nil {
			r.cur, r.stamp = srv, stamp
			r.log.Info().Strs("sites", d.SiteNames()).Msg("server drivers built again: the design's Sites or their site records changed")
			return r.cur
		}
	}
	if nd, first := r.cur.(noDesign); first {
		return r.notBuilt(nd, stamp, err)
	}
	r.log.Warn().Err(err).Msg("the design's Sites or their site records changed, but their drivers could not be built: the previous ones stay; fix the record or the design")
	r.stamp = stamp // not again until the next change
	return r.cur
}

// notBuilt is the driver there is before the first design's were built
// (nodesign.go), after a look that could not build them: with no design
// yet, the same; else one answering why, looked at again at every call
// (the secret or site record the design names may be set at any time).
func (r *rebinding) notBuilt(nd noDesign, stamp string, err error) drivers.Server {
	if errors.Is(err, statestore.ErrNotFound) {
		r.stamp = stamp
		return r.cur
	}
	why := fmt.Errorf("the design's server drivers could not be built: %w; set the secret or site record it names", err)
	if nd.err == nil || nd.err.Error() != why.Error() {
		r.log.Warn().Err(err).Msg("the first design's server drivers could not be built: set the secret or site record it names")
	}
	r.cur = noDesign{err: why}
	return r.cur
}

var _ drivers.Server = (*rebinding)(nil)

func (r *rebinding) ProbeSite(ctx context.Context) (drivers.SiteInfo, error) {
	return r.server(ctx).ProbeSite(ctx)
}

func (r *rebinding) PrepareSite(ctx context.Context, s drivers.SiteSpec) (drivers.Result, error) {
	return r.server(ctx).PrepareSite(ctx, s)
}

func (r *rebinding) IdentifyNode(ctx context.Context, n drivers.Node) (drivers.Machine, drivers.Result, error) {
	return r.server(ctx).IdentifyNode(ctx, n)
}

func (r *rebinding) Commission(ctx context.Context, n drivers.NodeRef) (drivers.Result, error) {
	return r.server(ctx).Commission(ctx, n)
}

func (r *rebinding) ApplyNetworking(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	return r.server(ctx).ApplyNetworking(ctx, n)
}

func (r *rebinding) ApplyStorage(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	return r.server(ctx).ApplyStorage(ctx, n)
}

func (r *rebinding) ApplyPlatform(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	return r.server(ctx).ApplyPlatform(ctx, n)
}

func (r *rebinding) Deploy(ctx context.Context, n drivers.Node, dep drivers.Deployment) (drivers.Result, error) {
	return r.server(ctx).Deploy(ctx, n, dep)
}

func (r *rebinding) Release(ctx context.Context, n drivers.NodeRef, e drivers.Erase) (drivers.Result, error) {
	return r.server(ctx).Release(ctx, n, e)
}

func (r *rebinding) Status(ctx context.Context, refs []drivers.NodeRef) ([]drivers.Machine, error) {
	return r.server(ctx).Status(ctx, refs)
}

func (r *rebinding) Owned(ctx context.Context) ([]drivers.Machine, error) {
	return r.server(ctx).Owned(ctx)
}

func (r *rebinding) Inventory(ctx context.Context, n drivers.Node) (drivers.Inventory, error) {
	return r.server(ctx).Inventory(ctx, n)
}

func (r *rebinding) Recover(ctx context.Context, n drivers.NodeRef, a drivers.Recovery) (drivers.Result, error) {
	return r.server(ctx).Recover(ctx, n, a)
}

// RepairMachine repairs through the driver there is now, when it can.
func (r *rebinding) RepairMachine(ctx context.Context, n drivers.Node, parts []string) (drivers.Result, error) {
	fix, ok := r.server(ctx).(interface {
		RepairMachine(context.Context, drivers.Node, []string) (drivers.Result, error)
	})
	if !ok {
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "the server driver cannot repair a deployed machine; redeploy node %s", n.Name)
	}
	return fix.RepairMachine(ctx, n, parts)
}

var _ drivers.SiteImager = (*rebinding)(nil)

// SiteImages is the boot images of the site's driver there is now.
func (r *rebinding) SiteImages(ctx context.Context, site string) (drivers.ServerImages, error) {
	return drivers.ImagesAt(ctx, r.server(ctx), site)
}

var _ drivers.SiteChanger = (*rebinding)(nil)

// SiteChanges is the changes reader of the site's driver there is now.
func (r *rebinding) SiteChanges(ctx context.Context, site string) (drivers.ServerChanges, bool) {
	return drivers.ChangesAt(ctx, r.server(ctx), site)
}

var _ drivers.ServerPlanner = (*rebinding)(nil)

// planner is the driver there is now as a planner, or an error wrapping
// drivers.ErrCannotPlan.
func (r *rebinding) planner(ctx context.Context) (drivers.ServerPlanner, error) {
	p, ok := r.server(ctx).(drivers.ServerPlanner)
	if !ok {
		return nil, drivers.ErrCannotPlan
	}
	return p, nil
}

// PlanNodes plans through the driver there is now, when it can.
func (r *rebinding) PlanNodes(ctx context.Context, nodes []drivers.Node) ([]drivers.MachinePlan, error) {
	p, err := r.planner(ctx)
	if err != nil {
		return nil, err
	}
	return p.PlanNodes(ctx, nodes)
}

// PlanSite plans through the driver there is now, when it can.
func (r *rebinding) PlanSite(ctx context.Context, s drivers.SiteSpec) ([]drivers.PlannedChange, error) {
	p, err := r.planner(ctx)
	if err != nil {
		return nil, err
	}
	return p.PlanSite(ctx, s)
}
