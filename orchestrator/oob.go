package orchestrator

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
)

// oobTarget is one method to reach a node's BMC: the driver of the
// method's type and the endpoint it takes.
type oobTarget struct {
	typ string
	drv drivers.OOB
	bmc drivers.BMC
}

// oobTargets returns the node's OOB methods in order: its own (its
// hardware profile's oob.type, else the Site's driver), then its
// profile's fallback when it names one.
func (e *Engine) oobTargets(ctx context.Context, d *design.Design, n *design.Node) ([]oobTarget, error) {
	user, pw, err := e.bmcAuth(ctx, d, n) // bmcauth.go
	if err != nil {
		return nil, err
	}
	site := d.SiteOOBDriver()
	eps := []design.OOBEndpoint{n.OOB(site)}
	if fb, ok := n.OOBFallback(); ok {
		eps = append(eps, fb)
	}
	out := make([]oobTarget, 0, len(eps))
	for _, ep := range eps {
		drv, err := e.oobDriverOf(ep.Type, site)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", n.Metadata.Name, err)
		}
		b := driverspec.BMCAt(n, ep, pw)
		if user != "" { // the node's override
			b.Username = user
		}
		if e.cfg.BMCEndpoint != nil {
			b = e.cfg.BMCEndpoint(ep.Type, b)
		}
		out = append(out, oobTarget{typ: ep.Type, drv: drv, bmc: b})
	}
	return out, nil
}

// oobDriverOf is the OOB driver of type typ: the Site's, or one the
// design's hardware profiles name.
func (e *Engine) oobDriverOf(typ, site string) (drivers.OOB, error) {
	if d, ok := e.cfg.Drivers.OOBByType[typ]; ok && d != nil {
		return d, nil
	}
	if typ == site && e.cfg.Drivers.OOB != nil {
		return e.cfg.Drivers.OOB, nil
	}
	return nil, drivers.Errorf(drivers.Permanent, "no OOB driver %q is loaded (a hardware profile's oob.type or oob.fallback.type names it): install or register it, then retry", typ)
}

// withOOB runs fn on the node's BMC through its first OOB method. When
// that fails with a transient error and the node has a fallback method,
// the two are probed: if the first does not answer and the fallback
// does, fn runs through the fallback, and an event says so. It returns
// the method used.
func (r *nodeRun) withOOB(ctx context.Context, fn func(ctx context.Context, drv drivers.OOB, b drivers.BMC) error) (oobTarget, error) {
	ts, err := r.e.oobTargets(ctx, r.d, r.n)
	if err != nil {
		return oobTarget{}, err
	}
	first := ts[0]
	usingFallback := len(ts) > 1 && r.e.fellBack.recent(r.rec.Name)
	if usingFallback {
		first = ts[1] // the first method did not answer a moment ago
	}
	err = r.e.callBMC(ctx, first.bmc, func(ctx context.Context) error { return fn(ctx, first.drv, first.bmc) })
	if err == nil || len(ts) < 2 || drivers.Classify(err) != drivers.Transient || ctx.Err() != nil {
		return first, err
	}
	first, fb := ts[0], ts[1]
	if usingFallback || r.e.answers(ctx, first) || !r.e.answers(ctx, fb) {
		r.e.fellBack.forget(r.rec.Name)
		return first, err
	}
	r.e.fellBack.note(r.rec.Name)
	r.save(r.event("warn", "oob-fallback", "BMC %s:%d does not answer over %s (%v): using its fallback, %s on port %d",
		first.bmc.Address, first.bmc.Port, first.typ, err, fb.typ, fb.bmc.Port))
	return fb, r.e.callBMC(ctx, fb.bmc, func(ctx context.Context) error { return fn(ctx, fb.drv, fb.bmc) })
}

// oobProbeTimeout bounds the probe that decides a fallback.
const oobProbeTimeout = 20 * time.Second

// answers probes t's BMC: reachable and authorized.
func (e *Engine) answers(ctx context.Context, t oobTarget) bool {
	ctx, cancel := context.WithTimeout(ctx, oobProbeTimeout)
	defer cancel()
	var info drivers.BMCInfo
	err := e.callBMC(ctx, t.bmc, func(ctx context.Context) (err error) {
		info, err = t.drv.Probe(ctx, t.bmc)
		return err
	})
	return err == nil && info.Reachable && info.Authorized
}

// fallbackMemory is how long a node's calls go straight to its fallback
// OOB method after its first method did not answer: the first is probed
// again after it.
const fallbackMemory = 5 * time.Minute

// fallbacks remembers the nodes whose first OOB method did not answer
// lately.
type fallbacks struct {
	mu    sync.Mutex
	since map[string]time.Time
}

func (f *fallbacks) note(node string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.since == nil {
		f.since = map[string]time.Time{}
	}
	f.since[node] = time.Now()
}

func (f *fallbacks) forget(node string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.since, node)
}

// recent reports whether node fell back within fallbackMemory.
func (f *fallbacks) recent(node string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	at, ok := f.since[node]
	if ok && time.Since(at) > fallbackMemory {
		delete(f.since, node)
		return false
	}
	return ok
}

// applyBIOS says, as the start of a step's message, where the hardware
// profile's BIOS settings were applied: the baseline stage (baseline.go)
// staged them, reset the machine and read them back before oob-prepare
// ("" when the profile has none).
func (r *nodeRun) applyBIOS(context.Context) (string, error) {
	hw := r.n.Spec.Hardware
	if hw == nil || hw.BIOS == nil || len(hw.BIOS.Attributes) == 0 {
		return "", nil
	}
	return "bios: applied at the baseline stage; ", nil
}
