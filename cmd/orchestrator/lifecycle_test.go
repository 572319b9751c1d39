package main

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	maasdrv "github.com/slipway-dev/slipway/drivers/server/maas"
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
		if _, err := siteDrivers(reg, d, "", nil); err != nil {
			t.Fatal(err)
		}
		got, set := reg.server[maasdrv.SettingCommissionRetries]
		if got != tc.want || set != tc.set {
			t.Errorf("%s: commissionRetries setting %q (set %v), want %q (set %v)", tc.name, got, set, tc.want, tc.set)
		}
	}
}

// The lifecycle commands refuse bad options before they open any state.
func TestLifecycleCommandUsage(t *testing.T) {
	state := t.TempDir() + "/none.db"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"decommission", "--erase", "wipe", "--state", state}, "use none, quick or secure"},
		{[]string{"rescue", "sideways", "--state", state}, "use enter or exit"},
		{[]string{"destroy", "--delete", "--state", state}, "unknown flag: --delete"},
		{[]string{"test", "extra", "--state", state}, "unknown command"},
	} {
		code, out, errs := cli(t, tc.args...)
		if code != exitUsage || !strings.Contains(out+errs, tc.want) {
			t.Errorf("%v: exit %d, output %q %q; want %d saying %q", tc.args, code, out, errs, exitUsage, tc.want)
		}
	}
}
