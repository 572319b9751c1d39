package ovs

import (
	"testing"

	"github.com/slipway-dev/slipway/drivers"
)

// What desired writes reads back through portConfig as the same
// PortConfig, for each kind of port, disabled ones included (PortPlan
// plans none today; a driver's own columns must still round-trip), and
// a disabled port is on the blackhole VLAN carrying nothing else.
func TestColumnsRoundTrip(t *testing.T) {
	sp := drivers.SwitchPort{Switch: "sw", Port: "p1"}
	up := "up"
	for name, c := range map[string]drivers.PortConfig{
		"access":          {Mode: drivers.ModeAccess, VLAN: 10, Enabled: true},
		"trunk native":    {Mode: drivers.ModeTrunk, VLAN: 12, Trunk: []int{30, 100}, Enabled: true, MTU: 9000},
		"trunk no native": {Mode: drivers.ModeTrunk, Trunk: []int{30}, Enabled: true},
		"native only":     {Mode: drivers.ModeTrunk, VLAN: 12, Enabled: true},
		"lacp":            {Mode: drivers.ModeAccess, VLAN: 10, LAG: "bond0", LACP: "active", LACPRate: "fast", Enabled: true},
		"disabled access": {Mode: drivers.ModeAccess, VLAN: 10},
		"disabled trunk":  {Mode: drivers.ModeTrunk, VLAN: 12, Trunk: []int{30, 100}, LAG: "bond0"},
	} {
		t.Run(name, func(t *testing.T) {
			c.SwitchPort = sp
			p := desired(&port{OtherConfig: map[string]string{"keep": "me"}}, want{name: "p1", members: []string{"p1"}, cfg: c}, "n1")
			mtu := c.MTU
			i := &iface{Name: "p1", AdminState: &up}
			if mtu != 0 {
				i.MTURequest, i.MTU = &mtu, &mtu
			}
			if got := portConfig(sp, p, i); !c.Equal(got) {
				t.Errorf("reads %+v, want %+v: %v", got, c, c.Diff(got))
			}
			if p.OtherConfig["keep"] != "me" {
				t.Errorf("other_config lost a key the driver does not own: %v", p.OtherConfig)
			}
			if !c.Enabled && (deref(p.Tag) != blackholeVLAN || deref(p.VLANMode) != "access" || len(p.Trunks) != 0) {
				t.Errorf("disabled: tag %v mode %v trunks %v; want access on %d only", deref(p.Tag), deref(p.VLANMode), p.Trunks, blackholeVLAN)
			}
			if c.Enabled && c.Mode == drivers.ModeTrunk && len(p.Trunks) == 0 {
				t.Error("a trunk written with no trunks: OVS reads it as every VLAN")
			}
		})
	}
}
