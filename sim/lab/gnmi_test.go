package lab

import (
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	gnmidrv "github.com/slipway-dev/slipway/drivers/network/gnmi"
)

// TestGNMITargetOfTheCabling: the lab's gNMI target serves every switch
// the example cables, each cabled port up with the machine's NIC as its
// LLDP neighbour, read by the gnmi driver.
func TestGNMITargetOfTheCabling(t *testing.T) {
	d := exampleDesign(t)
	l, err := Start(t.Context(), Config{Design: d, TimeScale: 0.0005, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.StartGNMI(GNMIOptions{}); err == nil {
		t.Error("a target without credentials started")
	}
	tg, err := l.StartGNMI(GNMIOptions{Username: "admin", Password: "lab-switch-Password"})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	settings, secrets := map[string]string{}, map[string]drivers.Secret{}
	for _, sw := range tg.Switches() {
		drivers.SwitchSettings(drivers.SwitchEndpoint{Name: sw, Address: tg.Addr(), Username: "admin",
			Password: drivers.NewSecret("lab-switch-Password")}, settings, secrets)
	}
	drv, err := gnmidrv.Open(drivers.Config{Settings: settings, Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close()
	var refs []drivers.SwitchPort
	var want []drivers.LLDPNeighbor
	for _, name := range d.NodeNames() {
		m := l.Machine(name)
		for alias, c := range d.Nodes[name].Spec.Cabling {
			for _, nic := range m.Hardware.NICs {
				if nic.Alias == alias {
					refs = append(refs, drivers.SwitchPort{Switch: c.Switch, Port: c.Port})
					want = append(want, drivers.LLDPNeighbor{ChassisID: nic.MAC, SystemName: name, PortID: alias, PortDescr: nic.Name})
				}
			}
		}
	}
	if len(refs) == 0 {
		t.Fatal("the example cables no NIC")
	}
	got, err := drv.ReadPorts(t.Context(), refs)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		if !g.Found || !g.Up || g.Neighbor == nil || *g.Neighbor != want[i] {
			t.Errorf("%s: %+v (neighbour %+v), want up with %+v", refs[i], g, g.Neighbor, want[i])
		}
	}
}

// TestGNMIOption: Config.GNMI starts the target with the lab (Info says
// where, and its user); Close stops it.
func TestGNMIOption(t *testing.T) {
	l, err := Start(t.Context(), Config{Design: exampleDesign(t), TimeScale: 0.0005, Seed: 5,
		GNMI: &GNMIOptions{Username: DefaultSwitchUser, Password: DefaultSwitchPassword}})
	if err != nil {
		t.Fatal(err)
	}
	info := l.Info()
	if info.GNMIAddress == "" || info.GNMIUsername != DefaultSwitchUser || l.GNMI() == nil || len(l.GNMI().Switches()) == 0 {
		t.Fatalf("info %+v, switches %v", info, l.GNMI().Switches())
	}
	settings, secrets := map[string]string{"timeout": "2s"}, map[string]drivers.Secret{}
	for _, sw := range l.GNMI().Switches() {
		drivers.SwitchSettings(drivers.SwitchEndpoint{Name: sw, Address: info.GNMIAddress, Username: DefaultSwitchUser,
			Password: drivers.NewSecret(DefaultSwitchPassword)}, settings, secrets)
	}
	drv, err := gnmidrv.Open(drivers.Config{Settings: settings, Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close()
	if _, err := drv.Probe(t.Context()); err != nil {
		t.Fatalf("probe the lab's switches: %v", err)
	}
	l.Close()
	if _, err := drv.Probe(t.Context()); drivers.Classify(err) != drivers.Transient {
		t.Errorf("probe after the lab closed: %v, want Transient", err)
	}
}
