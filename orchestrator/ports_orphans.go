package orchestrator

import (
	"context"
	"errors"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/statestore"
)

// A node removed from the design keeps its machine (orphan drift) until
// destroy releases it, deployed on the ports of the last design that had
// it. Those ports are the orphan's until then, whatever the current
// design cables to them: the provisioning and production stages of
// another node do not take them (the cable may have moved in the design
// before it moved in the rack), and tell the operator to destroy the
// orphan first, whose quarantine leaves the ports the design gives
// another node (spareOthers).

// currentDesignErr is the current design, nil when none was applied;
// an error when the store could not say.
func (e *Engine) currentDesignErr(ctx context.Context) (*design.Design, error) {
	rev, err := statestore.CurrentID(ctx, e.cfg.Store)
	if errors.Is(err, statestore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d, _, err := e.design(ctx, rev)
	return d, err
}

// orphanPortsOf are the switch ports of the orphans, by port: the
// orphan's name. Read once per task run (a retry reads them again).
func (r *nodeRun) orphanPortsOf(ctx context.Context) (map[drivers.SwitchPort]string, error) {
	r.run.portsMu.Lock()
	defer r.run.portsMu.Unlock()
	if r.run.orphanPorts != nil {
		return r.run.orphanPorts, nil
	}
	cur, err := r.e.currentDesignErr(ctx)
	if err != nil {
		return nil, err
	}
	recs, err := r.e.rec.nodes(ctx)
	if err != nil {
		return nil, err
	}
	out := map[drivers.SwitchPort]string{}
	for _, rec := range recs {
		if !Orphaned(cur, rec) {
			continue
		}
		if d, n := r.e.lastDesignOf(ctx, rec.Name); n != nil && d.SiteOf(n).HasFabric() {
			for _, c := range n.Spec.Cabling {
				out[drivers.SwitchPort{Switch: c.Switch, Port: c.Port}] = rec.Name
			}
		}
	}
	r.run.orphanPorts = out
	return out, nil
}

// orphanGuard fails the node's port stage, before any switch call, when
// one of its planned ports is still an orphan's; ok when none is.
func (r *nodeRun) orphanGuard(ctx context.Context, dn drivers.Node) (step, bool, error) {
	if !r.d.SiteOf(r.n).HasFabric() {
		return step{}, true, nil
	}
	owners, err := r.orphanPortsOf(ctx)
	if err != nil {
		return step{}, false, drivers.Errorf(drivers.Transient, "node %s: reading which switch ports nodes removed from the design still hold: %v", r.rec.Name, err)
	}
	if len(owners) == 0 {
		return step{}, true, nil
	}
	for _, in := range dn.Interfaces {
		for _, dv := range in.Devices {
			o := owners[drivers.SwitchPort{Switch: dv.Switch, Port: dv.Port}]
			if o == "" || o == r.rec.Name {
				continue
			}
			return failed("node %s, stage %s: switch port %s:%s (%s) is still node %s's: the design no longer has %s, but its machine is held, deployed "+
				"on that port, which is left as it is; destroy it first (`orchestrator destroy --node %s`: its quarantine leaves the ports the design "+
				"gives another node), then `orchestrator retry %s`", r.rec.Name, r.rec.Stage, dv.Switch, dv.Port, dv.Alias, o, o, o, r.run.id), false, nil
		}
	}
	return step{}, true, nil
}
