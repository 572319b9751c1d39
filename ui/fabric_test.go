package ui_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/ui"
)

// TestNodeViewShowsPorts: the node view of a deployed node lists the
// switch ports the design cables to it, one row per cable with what the
// fake switch holds (the independent state): ok, and for a port changed
// on the switch behind Slipway's back how it differs; a node the design
// cables to nothing says so. Both pass axe-core.
func TestNodeViewShowsPorts(t *testing.T) {
	t.Parallel()
	net := fake.NewNetwork(fake.Script{})
	var d *design.Design
	srv := apitest.Start(t, apitest.WithSeed(21), apitest.WithConfig(func(c *api.Config) { c.UI = ui.Handler() }),
		apitest.WithDesign(func(x *design.Design) { designtest.Fabric(x, "fake", nil); d = x }),
		apitest.WithTune(func(c *orchestrator.Config) { c.Drivers.Network = net }))
	for _, a := range []record.Action{record.ActionPrepareSite, record.ActionDeployNodes} {
		task, err := srv.Engine.Submit(t.Context(), record.Request{Action: a, Requester: "test"})
		if err == nil {
			task, err = srv.Engine.Wait(t.Context(), task.ID)
		}
		if err != nil || task.Status != record.TaskSucceeded {
			t.Fatalf("%s: %s, %v", a, task.Status, err)
		}
	}
	var node, bare string
	for _, name := range d.NodeNames() {
		switch {
		case len(d.Nodes[name].Spec.Cabling) >= 2 && node == "":
			node = name
		case len(d.Nodes[name].Spec.Cabling) == 0 && bare == "":
			bare = name
		}
	}
	if node == "" {
		t.Fatal("no node of the example with a fabric has two cables")
	}
	var changed drivers.SwitchPort
	want := map[string]string{} // switch:port → the state the row must show
	for _, c := range d.Nodes[node].Spec.Cabling {
		p := drivers.SwitchPort{Switch: c.Switch, Port: c.Port}
		st, err := net.ReadPorts(t.Context(), []drivers.SwitchPort{p})
		if err != nil || !st[0].Found {
			t.Fatalf("the fake switch has no port %s: %v", p, err)
		}
		want[p.String()] = "ok"
		if changed.Port == "" {
			changed = p
			want[p.String()] = fmt.Sprintf("differs: vlan 3999, want %d", st[0].VLAN)
			st[0].VLAN = 3999
			net.SetPort(st[0].PortConfig) // behind Slipway's back
		}
	}
	b := newBrowser(t)
	b.signIn(t, srv.URL, srv.Token[api.RoleViewer], len(d.Nodes))
	b.run(t, "the node view's ports", 30*time.Second,
		chromedp.Navigate(srv.URL+"/ui/#/node/"+node),
		chromedp.WaitVisible(chromedp.Search(`//h2[text()="Switch ports"]`)))
	rows := eval[[]string](t, b, `[...document.querySelectorAll('#ports tbody tr')].map(r => r.dataset.port + '|' + r.cells[6].textContent)`)
	if len(rows) != len(want) {
		t.Fatalf("the node view shows %d ports, the design cables %d to %s: %v", len(rows), len(want), node, rows)
	}
	for _, r := range rows {
		port, state, _ := strings.Cut(r, "|")
		if want[port] != state {
			t.Errorf("port %s shows %q, want %q", port, state, want[port])
		}
	}
	checkAccessibility(t, b, "the node view with switch ports")
	if bare != "" {
		b.run(t, "a node cabled to nothing", 30*time.Second,
			chromedp.Navigate(srv.URL+"/ui/#/node/"+bare),
			poll(`[...document.querySelectorAll('#ports p')].some(p => p.textContent.includes('cables no switch port'))`, 20*time.Second))
	}
}
