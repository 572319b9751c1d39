package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestFabricCommand: `orchestrator fabric` through a served API over the
// lab, the example given a fabric and the fake network driver (its ports
// the independent state): after a deploy every cable is one row, ok; a
// port changed on the switch shows how it differs and the command exits
// 1; -o json is the API's answer; --node narrows; a node the design does
// not have is an error (exit 2, as every failed call).
func TestFabricCommand(t *testing.T) {
	t.Parallel()
	net := fake.NewNetwork(fake.Script{})
	var d *design.Design
	s := apitest.Start(t, apitest.WithSeed(13), apitest.WithDesign(func(x *design.Design) { designtest.Fabric(x, "fake", nil); d = x }),
		apitest.WithTune(func(c *orchestrator.Config) { c.Drivers.Network = net }))
	as := func(args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--server", s.URL, "--token", s.Token[api.RoleViewer]}, args...)...)
	}
	for _, a := range []record.Action{record.ActionPrepareSite, record.ActionDeployNodes} {
		task, err := s.Engine.Submit(t.Context(), record.Request{Action: a, Requester: "test"})
		if err == nil {
			task, err = s.Engine.Wait(t.Context(), task.ID)
		}
		if err != nil || task.Status != record.TaskSucceeded {
			// What went wrong, for a run that cannot be repeated (CI's).
			evs, _ := s.Engine.Events(context.Background(), 0, 1000, task.ID, "")
			for _, ev := range evs {
				if ev.Level != "info" {
					t.Logf("%s %s %s: %s", ev.Node, ev.Level, ev.Kind, ev.Message)
				}
			}
			t.Fatalf("%s: %s, %v", a, task.Status, err)
		}
	}
	cables := map[drivers.SwitchPort]string{}
	for name, n := range d.Nodes {
		for _, c := range n.Spec.Cabling {
			cables[drivers.SwitchPort{Switch: c.Switch, Port: c.Port}] = name
		}
	}
	code, out, errs := as("fabric")
	if code != 0 {
		t.Fatalf("fabric after a clean deploy: exit %d\n%s%s", code, out, errs)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) != len(cables)+1 || !strings.HasPrefix(rows[0], "SWITCH") {
		t.Fatalf("%d rows for %d cables:\n%s", len(rows)-1, len(cables), out)
	}
	for p, node := range cables {
		if !hasRow(rows, p.Switch, p.Port, node, "ok") {
			t.Errorf("no ok row for %s (node %s):\n%s", p, node, out)
		}
	}
	var changed drivers.SwitchPort
	for p := range cables {
		changed = p
		break
	}
	st, err := net.ReadPorts(t.Context(), []drivers.SwitchPort{changed})
	if err != nil {
		t.Fatal(err)
	}
	was := st[0].VLAN
	st[0].VLAN = 3999
	net.SetPort(st[0].PortConfig) // behind Slipway's back
	code, out, errs = as("fabric")
	if code != 1 || !hasRow(strings.Split(out, "\n"), changed.Switch, changed.Port, fmt.Sprintf("differs: vlan 3999, want %d", was)) ||
		!strings.Contains(errs, "differs from the design: 1 finding(s)") {
		t.Errorf("a port changed on the switch: exit %d\n%s%s", code, out, errs)
	}
	t.Logf("orchestrator fabric:\n%s", out)
	code, out, _ = as("fabric", "-o", "json")
	var f apitypes.Fabric
	if err := json.Unmarshal([]byte(out), &f); err != nil || code != 1 || !f.Read {
		t.Fatalf("-o json: exit %d, %v\n%s", code, err, out)
	}
	if len(f.Ports) != len(cables) || f.Total != len(cables) || f.Next != "" {
		t.Errorf("-o json: %d ports (total %d, next %q), %d cables", len(f.Ports), f.Total, f.Next, len(cables))
	}
	code, paged, errs := as("fabric", "--page", "2")
	if code != 1 || fieldsOf(paged) != fieldsOf(out0(t, as)) || !strings.Contains(errs, fmt.Sprintf("fabric: page %d, %d of %d ports", (len(cables)+1)/2, len(cables), len(cables))) {
		t.Errorf("--page 2: exit %d, stderr %s\n%s", code, errs, paged)
	}
	node := cables[changed]
	code, out, _ = as("fabric", "--node", node)
	if code != 1 || strings.Count(strings.TrimSpace(out), "\n") != len(d.Nodes[node].Spec.Cabling) {
		t.Errorf("--node %s: exit %d\n%s", node, code, out)
	}
	if code, _, errs := as("fabric", "--node", "no-such-node"); code != 2 || !strings.Contains(errs, "not in the current design") {
		t.Errorf("--node no-such-node: exit %d: %s", code, errs)
	}
}

// hasRow reports whether a row holds every word, in order.
func hasRow(rows []string, words ...string) bool {
	for _, r := range rows {
		rest, ok := r, true
		for _, w := range words {
			i := strings.Index(rest, w)
			if i < 0 {
				ok = false
				break
			}
			rest = rest[i+len(w):]
		}
		if ok {
			return true
		}
	}
	return false
}

// out0 is `orchestrator fabric`'s table in one page.
func out0(t *testing.T, as func(args ...string) (int, string, string)) string {
	t.Helper()
	_, out, errs := as("fabric")
	if errs != "" && !strings.Contains(errs, "differs from the design") {
		t.Errorf("one page: stderr %s", errs)
	}
	return out
}

// TestFabricCommandFreshSite: on a fresh site (nothing ever run) the
// switch ports hold what they held before Slipway (here access VLAN 1 on
// the fake switch, its independent state): every row is unmanaged and
// the command exits 0.
func TestFabricCommandFreshSite(t *testing.T) {
	t.Parallel()
	net := fake.NewNetwork(fake.Script{})
	var d *design.Design
	s := apitest.Start(t, apitest.WithSeed(14), apitest.WithDesign(func(x *design.Design) { designtest.Fabric(x, "fake", nil); d = x }),
		apitest.WithTune(func(c *orchestrator.Config) { c.Drivers.Network = net }))
	cables := 0
	for _, n := range d.Nodes {
		for _, c := range n.Spec.Cabling {
			net.SetPort(drivers.PortConfig{SwitchPort: drivers.SwitchPort{Switch: c.Switch, Port: c.Port}, Mode: "access", VLAN: 1, Enabled: true})
			cables++
		}
	}
	code, out, errs := cli(t, "--server", s.URL, "--token", s.Token[api.RoleViewer], "fabric")
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(rows) != cables+1 || strings.Count(out, " unmanaged ") != cables {
		t.Errorf("a fresh site: exit %d, %d rows for %d cables\n%s%s", code, len(rows)-1, cables, out, errs)
	}
}

// fieldsOf is a table's words, one line each (the columns of each page
// are aligned on their own).
func fieldsOf(table string) string {
	var out []string
	for _, l := range strings.Split(table, "\n") {
		out = append(out, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(out, "\n")
}
