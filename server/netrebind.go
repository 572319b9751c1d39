package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/statestore"
)

// networkSpec is the network driver the design names (its first Site's
// drivers.network) and its Config: the switches of every Site's fabric
// (drivers.SwitchSettings), their passwords resolved from the secret
// references. An error names the switch and the reference, never the
// secret.
func networkSpec(d *design.Design, resolve func(string) (drivers.Secret, error)) (string, drivers.Config, error) {
	name := "noop"
	if d.Site != nil {
		name = orDefault(d.Site.Spec.Drivers.Network, "noop")
	}
	eps, err := driverspec.Switches(d, func(sw design.SiteSwitch) (drivers.Secret, error) {
		s, err := resolve(sw.Password)
		if err != nil {
			return drivers.Secret{}, fmt.Errorf("switch %s of Site %s: fabric password %s: %w", sw.Name, sw.Site, sw.Password, err)
		}
		return s, nil
	})
	if err != nil {
		return "", drivers.Config{}, err
	}
	return name, driverspec.NetworkConfig(drivers.Config{}, eps), nil
}

// networkPrint identifies a network driver's name and Config (secrets
// hashed in memory, never kept or logged), so that a design change that
// leaves them alone keeps the driver (a plugin's process) there is.
func networkPrint(name string, cfg drivers.Config) string {
	h := sha256.New()
	fmt.Fprintf(h, "%q\n", name)
	for _, k := range slices.Sorted(maps.Keys(cfg.Settings)) {
		fmt.Fprintf(h, "s %q=%q\n", k, cfg.Settings[k])
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Secrets)) {
		fmt.Fprintf(h, "p %q=%q\n", k, cfg.Secrets[k].Reveal())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// netRebinding is the network driver of the current design, built again
// when an applied design changes its name or its switches (addresses,
// credentials, settings), as the server driver is (rebind.go). Its
// read-back side is the current driver's (drivers.ReaderOf).
type netRebinding struct {
	build   func(name string, cfg drivers.Config) (drivers.Network, error)
	resolve func(string) (drivers.Secret, error)
	st      statestore.Store
	log     zerolog.Logger
	every   time.Duration

	mu      sync.Mutex
	cur     drivers.Network
	rev     string // the design revision cur is built from
	print   string // networkPrint of cur
	failed  string // the revision whose driver could not be built (said once)
	checked time.Time
}

// newNetRebinding starts from cur, the network driver of d, the current
// design (rev its revision ID, "" for none yet).
func newNetRebinding(cur drivers.Network, d *design.Design, rev string, st statestore.Store, log zerolog.Logger,
	resolve func(string) (drivers.Secret, error), build func(name string, cfg drivers.Config) (drivers.Network, error)) *netRebinding {
	r := &netRebinding{build: build, resolve: resolve, st: st, log: log, every: RebindEvery, cur: cur, rev: rev, checked: time.Now()}
	if name, cfg, err := networkSpec(d, resolve); err == nil {
		r.print = networkPrint(name, cfg)
	}
	return r
}

// network is the driver to call now, built again first when the current
// design changed what it is built from. A failed build keeps the driver
// there is and says so (once per revision).
func (r *netRebinding) network(ctx context.Context) drivers.Network {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) < r.every {
		return r.cur
	}
	r.checked = time.Now()
	id, err := statestore.CurrentID(ctx, r.st)
	if err != nil || id == r.rev {
		return r.cur
	}
	d, err := CurrentDesign(ctx, r.st, "")
	if err != nil {
		return r.cur
	}
	name, cfg, err := networkSpec(d, r.resolve)
	if err == nil && networkPrint(name, cfg) == r.print {
		r.rev = id
		return r.cur
	}
	var drv drivers.Network
	if err == nil {
		drv, err = r.build(name, cfg)
	}
	if err != nil {
		if r.failed != id { // looked at again each RebindEvery: a secret set later is taken up
			r.log.Warn().Err(err).Str("revision", id).
				Msg("the design changed the network driver or its switches, but it could not be built: the previous one stays; fix the design or set the secret it names")
		}
		r.failed = id
		return r.cur
	}
	r.cur, r.print, r.rev = drv, networkPrint(name, cfg), id
	r.log.Info().Str("driver", name).Int("switches", len(d.AllSwitches())).Msg("network driver built again: the design's network driver or switches changed")
	return r.cur
}

var (
	_ drivers.Network         = (*netRebinding)(nil)
	_ drivers.ReaderUnwrapper = (*netRebinding)(nil)
)

func (r *netRebinding) Probe(ctx context.Context) (drivers.NetworkInfo, error) {
	return r.network(ctx).Probe(ctx)
}

func (r *netRebinding) ConfigurePorts(ctx context.Context, n drivers.Node, p drivers.Phase) (drivers.Result, error) {
	return r.network(ctx).ConfigurePorts(ctx, n, p)
}

// Reader is the current driver's read-back side.
func (r *netRebinding) Reader() (drivers.NetworkReader, bool) {
	return drivers.ReaderOf(r.network(context.Background()))
}
