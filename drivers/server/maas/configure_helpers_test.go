package maas

import (
	"context"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/sim/lab"
)

// networkedNodes are the design's nodes (sorted by name) enlisted,
// commissioned and with their networking applied: at their storage step.
// Each machine is powered on once its create has enlisted it (powered on
// first, it may enlist itself before the create on a loaded machine).
func networkedNodes(t *testing.T, l *lab.Lab, drv *Driver, d *design.Design) []drivers.Node {
	t.Helper()
	names := slices.Sorted(maps.Keys(d.Nodes))
	var nodes []drivers.Node
	for _, name := range names {
		n := driverspec.Node(d, d.Nodes[name], "")
		n.MachineID = identify(t, drv, n).MachineID
		pxeBoot(l.Machine(name))
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		mustDone(t, "Commission", func(ctx context.Context) (drivers.Result, error) { return drv.Commission(ctx, n.NodeRef) })
	}
	cfgSubnets(t, drv, driverspec.Site(d))
	for _, n := range nodes {
		mustDone(t, "ApplyNetworking", func(ctx context.Context) (drivers.Result, error) { return drv.ApplyNetworking(ctx, n) })
	}
	return nodes
}

// cfgDesign loads the example site design.
func cfgDesign(t *testing.T) *design.Design { return designtest.Example(t) }

// cfgLab starts a lab from the design and a driver on its MAAS.
func cfgLab(t testing.TB, d *design.Design, tune ...func(*lab.Config)) (*lab.Lab, *Driver) {
	t.Helper()
	cfg := lab.Config{Design: d, TimeScale: 0.0005, Seed: 5}
	for _, f := range tune {
		f(&cfg)
	}
	l, err := lab.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	info := l.Info()
	drv, err := NewDriver(drivers.Config{Settings: map[string]string{SettingURL: info.MAASURL, SettingTimeout: "10s"},
		Secrets: map[string]drivers.Secret{SecretAPIKey: drivers.NewSecret(info.APIKey)}})
	if err != nil {
		t.Fatal(err)
	}
	return l, drv
}

func cfgWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func cfgCall(t *testing.T, d *Driver, method, path, op string, p url.Values, out any) {
	t.Helper()
	if err := d.c.call(t.Context(), method, path, op, p, out); err != nil {
		t.Fatalf("%s %s op=%s: %v", method, path, op, err)
	}
}

func cfgMachine(t *testing.T, d *Driver, id string) mMachine {
	t.Helper()
	var m mMachine
	cfgCall(t, d, http.MethodGet, "machines/"+id+"/", "", nil, &m)
	return m
}

// cfgCommission PXE-boots the node's machine, finds it by MAC and
// commissions it to Ready; it returns the system ID.
func cfgCommission(t *testing.T, l *lab.Lab, d *Driver, node string) string {
	t.Helper()
	id := cfgEnlisted(t, l, d, node)
	cfgCall(t, d, http.MethodPost, "machines/"+id+"/", "commission", nil, nil)
	cfgWait(t, "Ready", func() bool { return cfgMachine(t, d, id).StatusName == "Ready" })
	return id
}

// cfgEnlisted PXE-boots the node's lab machine and waits for it to enlist
// itself (New); it returns the machine's system ID.
func cfgEnlisted(t *testing.T, l *lab.Lab, d *Driver, node string) string {
	t.Helper()
	m := l.Machine(node)
	m.SetBootDevice("pxe", false, true)
	m.PowerOn()
	var id string
	cfgWait(t, "enlistment", func() bool {
		var ms []mMachine
		if err := d.c.call(t.Context(), http.MethodGet, "machines/", "", url.Values{"mac_address": {m.Hardware.NICs[0].MAC}}, &ms); err != nil || len(ms) != 1 {
			return false
		}
		id = ms[0].SystemID
		return ms[0].StatusName == "New"
	})
	return id
}

// cfgSubnets prepares the site from the design: pxe on the pxe-link
// fabric, mgmt untagged and storage/public on their VLANs of the data-bond
// fabric (the fabrics commissioning found, named after the links).
func cfgSubnets(t testing.TB, d *Driver, site drivers.SiteSpec) {
	t.Helper()
	r, err := d.PrepareSite(t.Context(), site)
	if err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("PrepareSite: %+v %v", r, err)
	}
}

// cfgWrites counts the POST, PUT and DELETE requests MAAS served so far,
// and all requests.
func cfgWrites(l *lab.Lab) (writes, total int) {
	s := l.MAAS.Stats().Snapshot()
	for _, r := range s.Requests {
		if len(r.Request) > 3 && r.Request[:3] != "GET" {
			writes += r.Count
		}
	}
	return writes, s.Total
}
