package api_test

import (
	"net/http"
	"testing"

	"github.com/slipway-dev/slipway/api"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/design/designtest"
)

// TestFabricRoute: GET /fabric answers a viewer the current design's
// nodes with their cabled ports (every cable of a Site with a fabric,
// none of one without), each read from its switch when the lab's network
// driver reads ports, else unread with the reason said, narrows to
// ?node= and refuses a node the design does not have; the contract
// wrapper checks every answer against docs/openapi.json.
func TestFabricRoute(t *testing.T) {
	f := newFixture(t)
	d := designtest.Example(t)
	if code, _ := f.do(t, "GET", "/api/v1/fabric", "", "", nil); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	var all apitypes.Fabric
	if code := f.json(t, "GET", "/api/v1/fabric", f.Token[api.RoleViewer], nil, &all); code != http.StatusOK {
		t.Fatalf("viewer: %d", code)
	}
	if len(all.Nodes) != len(d.Nodes) || all.Read == (all.ReadNote != "") {
		t.Fatalf("fabric: %d nodes (design %d), read %v (%q)", len(all.Nodes), len(d.Nodes), all.Read, all.ReadNote)
	}
	cables, ports := 0, 0
	for _, n := range d.Nodes {
		if d.SiteOf(n).HasFabric() {
			cables += len(n.Spec.Cabling)
		}
	}
	for _, sw := range all.Switches {
		for _, p := range sw.Ports {
			ports++
			if all.Read != (p.Observed != nil) || (!all.Read && p.State != "unread") || p.Desired.Mode == "" {
				t.Errorf("port %s:%s (the driver reads: %v): %+v", p.Switch, p.Port, all.Read, p)
			}
		}
	}
	if ports < cables {
		t.Errorf("%d ports listed, the design cables %d on Sites with a fabric", ports, cables)
	}
	name := d.NodeNames()[0]
	var one apitypes.Fabric
	if code := f.json(t, "GET", "/api/v1/fabric?node="+name+"&node="+name, f.Token[api.RoleViewer], nil, &one); code != http.StatusOK || len(one.Nodes) != 1 || one.Nodes[0].Node != name {
		t.Fatalf("?node=%s: %d %+v", name, code, one.Nodes)
	}
	if code := f.json(t, "GET", "/api/v1/fabric?node=no-such-node", f.Token[api.RoleViewer], nil, nil); code != http.StatusNotFound {
		t.Errorf("?node=no-such-node: %d, want 404", code)
	}
}
