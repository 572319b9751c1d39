package server

import (
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	maasdrv "github.com/slipway-dev/slipway/drivers/server/maas"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// settingsRegistry records the server driver's settings.
type settingsRegistry struct{ server map[string]string }

func (r *settingsRegistry) OOB(string, drivers.Config) (drivers.OOB, error) { return nil, nil }
func (r *settingsRegistry) Server(_ string, cfg drivers.Config) (drivers.Server, error) {
	r.server = cfg.Settings
	return nil, nil
}
func (r *settingsRegistry) Network(string, drivers.Config) (drivers.Network, error) { return nil, nil }

// The Site's lifecycle.commissionRetries reaches the server driver's
// commissionRetries setting; without it the driver keeps its default.
func TestSiteCommissionRetriesReachTheDriver(t *testing.T) {
	two := 2
	for _, tc := range []struct {
		name string
		n    *int
		want string
		set  bool
	}{{"set", &two, "2", true}, {"unset", nil, "", false}} {
		d := &design.Design{Site: &design.Site{Spec: design.SiteSpec{Lifecycle: design.Lifecycle{CommissionRetries: tc.n}}}}
		reg := &settingsRegistry{}
		if _, err := siteDrivers(reg, d, nil, nil, nil, nil, nil); err != nil {
			t.Fatal(err)
		}
		got, set := reg.server[maasdrv.SettingCommissionRetries]
		if got != tc.want || set != tc.set {
			t.Errorf("%s: commissionRetries setting %q (set %v), want %q (set %v)", tc.name, got, set, tc.want, tc.set)
		}
	}
}

// The engine configuration's commissionRetries is the driver's setting
// when the Site sets none; the Site's wins when it does.
func TestConfigCommissionRetriesUnderTheSite(t *testing.T) {
	one, three := 1, 3
	c := Config{InstanceID: "slipway-a", CommissionRetries: &one}
	for _, tc := range []struct {
		name string
		site *int
		want string
	}{{"config only", nil, "1"}, {"the Site's wins", &three, "3"}} {
		d := &design.Design{Site: &design.Site{Spec: design.SiteSpec{Lifecycle: design.Lifecycle{CommissionRetries: tc.site}}}}
		reg := &settingsRegistry{}
		if _, err := siteDrivers(reg, d, c.driverSettings(), nil, nil, nil, nil); err != nil {
			t.Fatal(err)
		}
		if got := reg.server[maasdrv.SettingCommissionRetries]; got != tc.want {
			t.Errorf("%s: commissionRetries setting %q, want %q", tc.name, got, tc.want)
		}
		if got := reg.server[maasdrv.SettingInstance]; got != "slipway-a" {
			t.Errorf("%s: instance setting %q, want slipway-a", tc.name, got)
		}
	}
}

// The configuration's lifecycle defaults are checked with the Site rule's
// bounds and reach the engine's Config.
func TestConfigLifecycleDefaults(t *testing.T) {
	var cfg orchestrator.Config
	good := Config{Erase: "quick", Timeouts: map[string]string{"deploy": "45m", "commission": "1h"}}
	if err := good.lifecycle(&cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Erase != drivers.EraseQuick || cfg.Timeouts[record.StageDeploy] != 45*time.Minute || cfg.Timeouts[record.StageCommission] != time.Hour {
		t.Errorf("erase %q timeouts %v", cfg.Erase, cfg.Timeouts)
	}
	eleven := 11
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Erase: "wipe"}, "config erase"},
		{Config{CommissionRetries: &eleven}, "commissionRetries 11"},
		{Config{Timeouts: map[string]string{"deploi": "1h"}}, "timeouts.deploi: no such stage"},
		{Config{Timeouts: map[string]string{"deploy": "10s"}}, "timeouts.deploy 10s"},
		{Config{Timeouts: map[string]string{"deploy": "soon"}}, "timeouts.deploy"},
	} {
		if err := tc.c.lifecycle(&orchestrator.Config{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %q", tc.c, err, tc.want)
		}
	}
}
