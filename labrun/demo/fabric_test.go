package demo

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/design"
	ovsdrv "github.com/slipway-dev/slipway/drivers/network/ovs"
	"github.com/slipway-dev/slipway/sim/ovs/ovstest"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// TestDemoFabricMatrix runs the demo's deployment of the example site
// with its switch fabric in Open vSwitch (configured by the ovs driver)
// and checks the connectivity matrix the pings measured against what the
// design's YAML says: every node addresses pxe, mgmt and storage, so
// every ordered pair of nodes reaches each other on each of them; a
// probe with an address of another network's subnet, on the wrong VLAN,
// reaches nothing; the node destroyed at the end has every port in the
// quarantine VLAN, read back with ovs-vsctl. In CI a missing Open vSwitch
// fails the test (ovstest.Require).
func TestDemoFabricMatrix(t *testing.T) {
	ovstest.Require(t)
	d, fs := build(t, filepath.Join("..", "..", "examples", "site-yaml"))
	if fs.HasErrors() {
		t.Fatal(fs)
	}
	quarantine := d.Site.Spec.Fabric.QuarantineVLAN
	dir := t.TempDir()
	st, err := bolt.Open(filepath.Join(dir, "state.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Deploy(ctx, Options{Design: d, Store: st, StatePath: filepath.Join(dir, "state.db"), TimeScale: 0.002,
		Out: io.Discard, Err: io.Discard, Log: zerolog.Nop(), NewNetwork: ovsdrv.New})
	if err != nil {
		t.Fatal(err)
	}
	if res.Deployed != len(d.Nodes) {
		t.Fatalf("the lab counts %d of %d nodes deployed: %+v", res.Deployed, len(d.Nodes), res.Failures)
	}
	c := res.Fabric
	if c == nil {
		t.Fatal("no connectivity measured for a design with a fabric")
	}
	checkMatrices(t, d, c)
	checkCrossVLAN(t, c)
	if len(c.Quarantine) != 3 { // the destroyed node's pxe0, data0, data1
		t.Errorf("quarantine: %d ports read back, want the destroyed node's 3: %+v", len(c.Quarantine), c.Quarantine)
	}
	for _, q := range c.Quarantine {
		if q.VLAN != quarantine || len(q.Trunk) != 0 {
			t.Errorf("after destroy, %s:%s has VLAN %d trunks %v (ovs-vsctl), want access VLAN %d", q.Switch, q.Port, q.VLAN, q.Trunk, quarantine)
		}
	}
	if !c.Pass || !res.OK() || c.Pings != 3*8*7+48 || c.Unexpected != 0 {
		t.Errorf("the fabric's verdict: pass %v, %d unexpected of %d pings (want 3 x 8 x 7 + 48 probes); run OK %v", c.Pass, c.Unexpected, c.Pings, res.OK())
	}
	// What `demo -o json` prints of it (cmd/orchestrator encodes the Run)
	// reads back the same.
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back Run
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Fabric, res.Fabric) {
		t.Errorf("the run's fabric through JSON: %v\n%+v\nwant %+v", err, back.Fabric, res.Fabric)
	}
}

// checkMatrices: pxe, mgmt and storage each hold every node of the
// design (all of them address the three in nodes-*.yaml), and every
// ordered pair was measured reachable; no other network is carried.
func checkMatrices(t *testing.T, d *design.Design, c *Connectivity) {
	t.Helper()
	all := d.NodeNames()
	var nets []string
	for _, m := range c.Networks {
		nets = append(nets, m.Network)
		got := slices.Clone(m.Nodes)
		slices.Sort(got)
		if !slices.Equal(got, all) {
			t.Errorf("network %s: matrix of %v, want every node %v", m.Network, got, all)
		}
		reached := 0
		for i := range m.Nodes {
			for j := range m.Nodes {
				if i != j && m.Measured[i][j] {
					reached++
				} else if i != j {
					t.Errorf("network %s (VLAN %d): %s %s does not reach %s %s", m.Network, m.VLAN, m.Nodes[i], m.Addresses[i], m.Nodes[j], m.Addresses[j])
				}
			}
		}
		if want := len(all) * (len(all) - 1); reached != want {
			t.Errorf("network %s: %d of %d ordered pairs reached", m.Network, reached, want)
		}
	}
	slices.Sort(nets)
	if want := []string{"mgmt", "pxe", "storage"}; !slices.Equal(nets, want) {
		t.Errorf("networks measured %v, want %v", nets, want)
	}
}

// checkCrossVLAN: one probe per node and ordered pair of the three
// networks (6 pairs), every one isolated.
func checkCrossVLAN(t *testing.T, c *Connectivity) {
	t.Helper()
	if len(c.CrossVLAN) != 6*8 {
		t.Errorf("%d cross-VLAN probes, want 48 (8 nodes x 6 ordered pairs of networks)", len(c.CrossVLAN))
	}
	for _, p := range c.CrossVLAN {
		if p.Measured {
			t.Errorf("cross-VLAN probe reached: %s on %s (VLAN %d) as %s -> %s %s on %s (VLAN %d)",
				p.From, p.Via, p.ViaVLAN, p.Source, p.Target, p.Address, p.To, p.ToVLAN)
		}
	}
}

// TestDemoFabricNeedsOpenVSwitch: without Open vSwitch (here: none on
// the PATH) the demo of a design with a fabric stops before the lab
// starts, naming the packages to install and --no-fabric.
func TestDemoFabricNeedsOpenVSwitch(t *testing.T) {
	d, fs := build(t, filepath.Join("..", "..", "examples", "site-yaml"))
	if fs.HasErrors() {
		t.Fatal(fs)
	}
	t.Setenv("PATH", t.TempDir())
	dir := t.TempDir()
	st, err := bolt.Open(filepath.Join(dir, "state.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = Deploy(context.Background(), Options{Design: d, Store: st, StatePath: filepath.Join(dir, "state.db"), TimeScale: 0.002,
		Out: io.Discard, Err: io.Discard, Log: zerolog.Nop(), NewNetwork: ovsdrv.New})
	if err == nil || !strings.Contains(err.Error(), "apt-get install openvswitch-switch iproute2 iputils-ping") ||
		!strings.Contains(err.Error(), "--no-fabric") {
		t.Fatalf("Deploy without Open vSwitch: %v", err)
	}
}
