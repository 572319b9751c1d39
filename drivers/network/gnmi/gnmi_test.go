package gnmi_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	gnmidrv "github.com/slipway-dev/slipway/drivers/network/gnmi"
	simgnmi "github.com/slipway-dev/slipway/sim/gnmi"
)

const (
	testUser     = "admin"
	testPassword = "gnmi-Secret-7f3a91"
)

// lab starts a gNMI target serving the conformance switch.
func lab(t *testing.T, cfg simgnmi.Config) *simgnmi.Target {
	t.Helper()
	if cfg.Username == "" {
		cfg.Username, cfg.Password = testUser, testPassword
	}
	tg, err := simgnmi.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Close)
	if err := tg.AddSwitch(driverstest.ConformanceSwitch, driverstest.ConformancePorts...); err != nil {
		t.Fatal(err)
	}
	return tg
}

// open builds the driver against the target's address with password.
func open(t *testing.T, addr, password string, extra map[string]string) *gnmidrv.Driver {
	t.Helper()
	settings, secrets := map[string]string{"timeout": "5s"}, map[string]drivers.Secret{}
	drivers.SwitchSettings(drivers.SwitchEndpoint{Name: driverstest.ConformanceSwitch, Address: addr, Username: testUser,
		Password: drivers.NewSecret(password), Settings: extra}, settings, secrets)
	d, err := gnmidrv.Open(drivers.Config{Settings: settings, Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

func TestConformance(t *testing.T) {
	tg := lab(t, simgnmi.Config{Strict: true})
	driverstest.RunNetwork(t, func(t *testing.T) drivers.Network { return open(t, tg.Addr(), testPassword, nil) })
	// The unowned port was never in a request: the switch's own state.
	p9, err := tg.Port(driverstest.ConformanceSwitch, driverstest.UnownedPort)
	if err != nil || p9.AccessVLAN != 1 || p9.Mode != "ACCESS" || p9.MTU != 0 || p9.AggregateID != "" {
		t.Errorf("p9 after the suite: %+v, %v; want untouched (access VLAN 1)", p9, err)
	}
}

// TestConfiguresWhatThePlanSays reads the target's own state after each
// phase: every planned port as PortPlan says, the LAG and its LACP, the
// VLANs created; a second call sends no Set.
func TestConfiguresWhatThePlanSays(t *testing.T) {
	tg := lab(t, simgnmi.Config{Strict: true})
	d := open(t, tg.Addr(), testPassword, nil)
	node := driverstest.NetworkNode()
	sw := driverstest.ConformanceSwitch
	for _, phase := range []drivers.Phase{drivers.PhaseProvisioning, drivers.PhaseProduction, drivers.PhaseQuarantine, drivers.PhaseProduction} {
		r, err := d.ConfigurePorts(t.Context(), node, phase)
		if err != nil || r.Status != drivers.StatusDone {
			t.Fatalf("%s: %+v, %v", phase, r, err)
		}
		plan, _ := drivers.PortPlan(node, phase)
		for _, c := range plan {
			checkPort(t, tg, phase, c)
		}
		sets := tg.Stats(sw).Sets
		r, err = d.ConfigurePorts(t.Context(), node, phase)
		if err != nil || r.Status != drivers.StatusDone || !strings.Contains(r.Message, "already as planned") {
			t.Errorf("%s again: %+v, %v", phase, r, err)
		}
		if got := tg.Stats(sw).Sets; got != sets {
			t.Errorf("%s again sent %d Sets, want none", phase, got-sets)
		}
	}
	vlans, _ := tg.VLANs(sw)
	for _, v := range []int{11, 12, 100, 999} {
		if !slices.Contains(vlans, v) {
			t.Errorf("VLAN %d not created on the switch: %v", v, vlans)
		}
	}
	lag, err := tg.Port(sw, "conformance-node-bond0")
	if err != nil || !lag.IsLAG || lag.LAGType != "LACP" || lag.LACPInterval != "FAST" || lag.LACPMode != "ACTIVE" || lag.MTU != 9000 {
		t.Errorf("the LAG interface: %+v, %v", lag, err)
	}
}

// checkPort compares the target's port with the plan's.
func checkPort(t *testing.T, tg *simgnmi.Target, phase drivers.Phase, c drivers.PortConfig) {
	t.Helper()
	p, err := tg.Port(c.Switch, c.Port)
	if err != nil {
		t.Fatal(err)
	}
	mode, vlan, trunk := "ACCESS", p.AccessVLAN, []int(nil)
	if p.Mode == "TRUNK" {
		mode, vlan, trunk = "TRUNK", p.NativeVLAN, p.TrunkVLANs
	}
	wantLAG := ""
	if c.LAG != "" {
		wantLAG = c.Node + "-" + c.LAG
	}
	if mode != strings.ToUpper(c.Mode) || vlan != c.VLAN || !slices.Equal(trunk, c.Trunk) || p.MTU != c.MTU ||
		p.Enabled != c.Enabled || p.AggregateID != wantLAG {
		t.Errorf("%s: switch has %s as %+v, want %+v", phase, c.SwitchPort, p, c)
	}
}

func TestReadPortsSeesLinkAndLLDP(t *testing.T) {
	tg := lab(t, simgnmi.Config{})
	sw := driverstest.ConformanceSwitch
	n := &simgnmi.Neighbor{ChassisID: "52:54:00:12:34:56", SystemName: "conformance-node", PortID: "eno1", PortDescr: "eno1"}
	if err := tg.SetNeighbor(sw, "p1", n); err != nil {
		t.Fatal(err)
	}
	d := open(t, tg.Addr(), testPassword, nil)
	got, err := d.ReadPorts(t.Context(), []drivers.SwitchPort{{Switch: sw, Port: "p1"}, {Switch: sw, Port: "p2"}})
	if err != nil {
		t.Fatal(err)
	}
	want := drivers.LLDPNeighbor{ChassisID: n.ChassisID, SystemName: n.SystemName, PortID: n.PortID, PortDescr: n.PortDescr}
	if !got[0].Found || !got[0].Up || got[0].Neighbor == nil || *got[0].Neighbor != want {
		t.Errorf("p1: %+v (neighbour %+v), want up with %+v", got[0], got[0].Neighbor, want)
	}
	if !got[1].Found || got[1].Up || got[1].Neighbor != nil {
		t.Errorf("p2: %+v, want found, down, no neighbour", got[1])
	}
}

// TestTamperedPortIsSeenAndRepaired: a port changed at the switch reads
// changed, and ConfigurePorts puts it back with one Set.
func TestTamperedPortIsSeenAndRepaired(t *testing.T) {
	tg := lab(t, simgnmi.Config{})
	d := open(t, tg.Addr(), testPassword, nil)
	node := driverstest.NetworkNode()
	sw := driverstest.ConformanceSwitch
	if _, err := d.ConfigurePorts(t.Context(), node, drivers.PhaseProvisioning); err != nil {
		t.Fatal(err)
	}
	if err := tg.Tamper(sw, "/interfaces/interface[name=p1]/ethernet/switched-vlan/config", `{"access-vlan": 42}`); err != nil {
		t.Fatal(err)
	}
	got, err := d.ReadPorts(t.Context(), []drivers.SwitchPort{{Switch: sw, Port: "p1"}})
	if err != nil || got[0].VLAN != 42 {
		t.Fatalf("after tampering: %+v, %v; want VLAN 42", got, err)
	}
	sets := tg.Stats(sw).Sets
	if _, err := d.ConfigurePorts(t.Context(), node, drivers.PhaseProvisioning); err != nil {
		t.Fatal(err)
	}
	p, _ := tg.Port(sw, "p1")
	if p.AccessVLAN != driverstest.ConformancePXEVLAN || tg.Stats(sw).Sets != sets+1 {
		t.Errorf("repair: p1 %+v after %d Sets, want VLAN %d after one", p, tg.Stats(sw).Sets-sets, driverstest.ConformancePXEVLAN)
	}
}

func TestSwitchDownIsTransient(t *testing.T) {
	tg := lab(t, simgnmi.Config{})
	d := open(t, tg.Addr(), testPassword, nil)
	tg.Close()
	_, err := d.ConfigurePorts(t.Context(), driverstest.NetworkNode(), drivers.PhaseProduction)
	wantErr(t, err, drivers.Transient, driverstest.ConformanceSwitch, tg.Addr(), "does not answer", "switch.conformance-sw.address")
	_, err = d.Probe(t.Context())
	wantErr(t, err, drivers.Transient, driverstest.ConformanceSwitch, "does not answer")
}

func TestWrongPasswordIsPermanent(t *testing.T) {
	tg := lab(t, simgnmi.Config{})
	wrong := "not-the-Password-19"
	d := open(t, tg.Addr(), wrong, nil)
	_, err := d.ConfigurePorts(t.Context(), driverstest.NetworkNode(), drivers.PhaseProduction)
	wantErr(t, err, drivers.Permanent, driverstest.ConformanceSwitch, "check secret switch.conformance-sw.password")
	if err != nil && strings.Contains(err.Error(), wrong) {
		t.Errorf("error reveals the password: %v", err)
	}
	if tg.AuthFailures() == 0 {
		t.Error("the target saw no refused credentials")
	}
	if n := tg.Stats(driverstest.ConformanceSwitch).Gets; n != 0 {
		t.Errorf("the target answered %d Gets to wrong credentials", n)
	}
}

func TestVLANRefusedIsPermanent(t *testing.T) {
	tg := lab(t, simgnmi.Config{MaxVLAN: 900})
	d := open(t, tg.Addr(), testPassword, nil)
	_, err := d.ConfigurePorts(t.Context(), driverstest.NetworkNode(), drivers.PhaseQuarantine)
	wantErr(t, err, drivers.Permanent, driverstest.ConformanceSwitch, "VLAN 999", "p1, p2, p3", "conformance-node")
	p, _ := tg.Port(driverstest.ConformanceSwitch, "p1")
	if p.AccessVLAN != 1 || tg.Stats(driverstest.ConformanceSwitch).Sets != 0 {
		t.Errorf("a refused Set changed the switch: p1 %+v", p)
	}
}

// TestPortTheSwitchLacks: a node cabled to a port the switch does not
// have fails Permanent naming the port and node; nothing is set; the
// port reads as not found beside one that is.
func TestPortTheSwitchLacks(t *testing.T) {
	tg := lab(t, simgnmi.Config{})
	d := open(t, tg.Addr(), testPassword, nil)
	node := driverstest.NetworkNode()
	node.Interfaces[1].Devices[1].Port = "p44"
	_, err := d.ConfigurePorts(t.Context(), node, drivers.PhaseProduction)
	wantErr(t, err, drivers.Permanent, "no port p44", "conformance-node", "ens1f1", "cabling")
	if n := tg.Stats(driverstest.ConformanceSwitch).Sets; n != 0 {
		t.Errorf("%d Sets for a node cabled to a missing port", n)
	}
	got, err := d.ReadPorts(t.Context(), []drivers.SwitchPort{{Switch: driverstest.ConformanceSwitch, Port: "p44"},
		{Switch: driverstest.ConformanceSwitch, Port: "p1"}})
	if err != nil || got[0].Found || !got[1].Found {
		t.Errorf("ReadPorts(p44, p1): %+v, %v; want not found, found", got, err)
	}
}

func TestUnknownSwitchAndSetting(t *testing.T) {
	tg := lab(t, simgnmi.Config{})
	nd, err := gnmidrv.New(drivers.Config{Settings: map[string]string{"switch.a.address": tg.Addr(), "switch.a.colour": "red"}})
	wantErr(t, err, drivers.Permanent, "switch.a.colour")
	if nd != nil {
		t.Errorf("New failed but returned a driver: %#v", nd)
	}
	d := open(t, tg.Addr(), testPassword, nil)
	_, err = d.ReadPorts(t.Context(), []drivers.SwitchPort{{Switch: "leaf-9", Port: "p1"}})
	wantErr(t, err, drivers.Permanent, "leaf-9", "switch.leaf-9.address")
}

func wantErr(t *testing.T, err error, class drivers.Class, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want a %s one", class)
	}
	if got := drivers.Classify(err); got != class {
		t.Errorf("class %s, want %s: %v", got, class, err)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if strings.Contains(err.Error(), testPassword) {
		t.Errorf("error reveals the password: %v", err)
	}
}

func driverNode() drivers.Node { return driverstest.NetworkNode() }
