package gnmi_test

import (
	"fmt"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	gnmidrv "github.com/slipway-dev/slipway/drivers/network/gnmi"
	simgnmi "github.com/slipway-dev/slipway/sim/gnmi"
)

// TestReadManyPortsOfOneSwitch: the fabric view reads a page's ports of
// one switch at once (up to 1,000); a switch bounds the paths of one Get
// (the lab's at 256, as real targets bound theirs), so the driver reads
// many ports as the switch's whole /interfaces in one path. Each port
// reads as the switch has it (the lab's own view).
func TestReadManyPortsOfOneSwitch(t *testing.T) {
	tg := lab(t, simgnmi.Config{})
	const sw, n = "big-leaf", 300
	names := make([]string, n)
	refs := make([]drivers.SwitchPort, n)
	for i := range names {
		names[i] = fmt.Sprintf("Ethernet%d", i)
		refs[i] = drivers.SwitchPort{Switch: sw, Port: names[i]}
	}
	if err := tg.AddSwitch(sw, names...); err != nil {
		t.Fatal(err)
	}
	if err := tg.Tamper(sw, "/interfaces/interface[name=Ethernet299]/config", `{"mtu": 1400}`); err != nil {
		t.Fatal(err)
	}
	settings, secrets := map[string]string{"timeout": "5s"}, map[string]drivers.Secret{}
	drivers.SwitchSettings(drivers.SwitchEndpoint{Name: sw, Address: tg.Addr(), Username: testUser,
		Password: drivers.NewSecret(testPassword)}, settings, secrets)
	d, err := gnmidrv.Open(drivers.Config{Settings: settings, Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got, err := d.ReadPorts(t.Context(), refs)
	if err != nil {
		t.Fatalf("ReadPorts of %d ports: %v", n, err)
	}
	for i, st := range got {
		want, err := tg.Port(sw, names[i])
		if err != nil || !st.Found || st.SwitchPort != refs[i] || st.MTU != want.MTU || st.VLAN != want.AccessVLAN {
			t.Errorf("%s: read %+v, the switch has %+v (%v)", names[i], st, want, err)
		}
	}
	if got[n-1].MTU != 1400 {
		t.Errorf("Ethernet299 read MTU %d, want the 1400 set at the switch", got[n-1].MTU)
	}
}
