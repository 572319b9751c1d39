package api_test

import (
	"net/http"
	"testing"

	"github.com/slipway-dev/slipway/api"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/design/designtest"
)

// TestFabricRoute: GET /fabric answers a viewer the current design's
// cabled ports, each once (every cable of a Site with a fabric, none of
// one without), each read from its switch when the lab's network driver
// reads ports, else unread with the reason said; the switches count
// them; pages of 2 followed by next give the same ports in the same
// order; ?node= and ?switch= narrow; a node or switch the design does
// not have is 404, a cursor or limit that is not one 400; the contract
// wrapper checks every answer against docs/openapi.json.
func TestFabricRoute(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	d := designtest.Example(t)
	if code, _ := f.do(t, "GET", "/api/v1/fabric", "", "", nil); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	var all apitypes.Fabric
	if code := f.json(t, "GET", "/api/v1/fabric?limit=10000", f.Token[api.RoleViewer], nil, &all); code != http.StatusOK {
		t.Fatalf("viewer: %d", code)
	}
	if all.Read == (all.ReadNote != "") || all.Next != "" || all.Total != len(all.Ports) {
		t.Fatalf("fabric: read %v (%q), %d ports of %d, next %q", all.Read, all.ReadNote, len(all.Ports), all.Total, all.Next)
	}
	cables := 0
	for _, n := range d.Nodes {
		if d.SiteOf(n).HasFabric() {
			cables += len(n.Spec.Cabling)
		}
	}
	perSwitch := map[string]int{}
	for _, p := range all.Ports {
		perSwitch[p.Switch]++
		if all.Read != (p.Observed != nil) || (!all.Read && p.State != "unread") || p.Desired.Mode == "" || p.Finding == "" {
			t.Errorf("port %s:%s (the driver reads: %v): %+v", p.Switch, p.Port, all.Read, p)
		}
	}
	for _, sw := range all.Switches {
		if sw.Ports != perSwitch[sw.Name] {
			t.Errorf("switch %s counts %d ports, the answer lists %d", sw.Name, sw.Ports, perSwitch[sw.Name])
		}
	}
	if len(all.Ports) < cables {
		t.Errorf("%d ports listed, the design cables %d on Sites with a fabric", len(all.Ports), cables)
	}
	// Pages of 2, following next: the same ports in the same order.
	var paged []apitypes.FabricPort
	for after, i := "", 0; i <= len(all.Ports); i++ {
		var pg apitypes.Fabric
		if code := f.json(t, "GET", "/api/v1/fabric?limit=2&after="+after, f.Token[api.RoleViewer], nil, &pg); code != http.StatusOK || len(pg.Ports) > 2 {
			t.Fatalf("page %d: %d, %d ports", i, code, len(pg.Ports))
		}
		paged = append(paged, pg.Ports...)
		if after = pg.Next; after == "" {
			break
		}
	}
	if len(paged) != len(all.Ports) {
		t.Fatalf("pages of 2: %d ports, one page %d", len(paged), len(all.Ports))
	}
	for i := range paged {
		if paged[i].Switch != all.Ports[i].Switch || paged[i].Port != all.Ports[i].Port {
			t.Errorf("port %d: %s:%s paged, %s:%s in one page", i, paged[i].Switch, paged[i].Port, all.Ports[i].Switch, all.Ports[i].Port)
		}
	}
	name := d.NodeNames()[0]
	var one apitypes.Fabric
	if code := f.json(t, "GET", "/api/v1/fabric?node="+name+"&node="+name, f.Token[api.RoleViewer], nil, &one); code != http.StatusOK || len(one.Ports) != len(d.Nodes[name].Spec.Cabling) {
		t.Fatalf("?node=%s: %d, %d ports for %d cables", name, code, len(one.Ports), len(d.Nodes[name].Spec.Cabling))
	}
	for _, p := range one.Ports {
		if p.Node != name {
			t.Errorf("?node=%s: port %s:%s of node %s", name, p.Switch, p.Port, p.Node)
		}
	}
	if len(all.Switches) > 0 {
		sw := all.Switches[0]
		var only apitypes.Fabric
		if code := f.json(t, "GET", "/api/v1/fabric?switch="+sw.Name, f.Token[api.RoleViewer], nil, &only); code != http.StatusOK || len(only.Ports) != sw.Ports || len(only.Switches) != 1 {
			t.Errorf("?switch=%s: %d, %d ports (%d counted), %d switches", sw.Name, code, len(only.Ports), sw.Ports, len(only.Switches))
		}
	}
	for q, want := range map[string]int{"node=no-such-node": http.StatusNotFound, "switch=no-such-switch": http.StatusNotFound,
		"after=%21%21": http.StatusBadRequest, "limit=0": http.StatusBadRequest, "limit=10001": http.StatusBadRequest} {
		if code := f.json(t, "GET", "/api/v1/fabric?"+q, f.Token[api.RoleViewer], nil, nil); code != want {
			t.Errorf("?%s: %d, want %d", q, code, want)
		}
	}
}
