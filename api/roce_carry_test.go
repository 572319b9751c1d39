package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/siteregistry"
)

// TestRoCEUpsertRefusesWhatTheNodeCannotCarry: an address on a bond's
// member, or on the NIC of an interface that takes DHCP, is what a deploy
// would refuse; the upsert refuses it (single item or in a batch) with a
// 422 naming the node, the interface and the address, and stores nothing
// of the batch, while the same address on the bond itself is stored.
func TestRoCEUpsertRefusesWhatTheNodeCannotCarry(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin := f.Token[api.RoleAdmin]
	d := designtest.Example(t) // the design the fixture stored
	var rec siteregistry.Record
	if code := f.json(t, "POST", "/api/v1/admin/maas-sites", admin, map[string]any{"name": d.Site.Metadata.Name, "url": "http://maas.example:5240/MAAS",
		"api_key": "a:b:c"}, &rec); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	base := "/api/v1/admin/maas-sites/" + rec.ID + "/roce-assignments"
	host := ""
	for _, name := range d.NodeNames() { // a node with a bond of data0 and data1 and DHCP on pxe0's interface
		if in, ok := d.Nodes[name].Spec.Interfaces["bond0"]; ok && len(in.Devices) == 2 && in.Devices[0] == "data0" {
			host = name
			break
		}
	}
	if host == "" {
		t.Fatal("the example design has no node bonding data0 and data1 in bond0")
	}
	item := func(iface, cidr string) map[string]string {
		return map[string]string{"hostname": host, "interface": iface, "ipv4_cidr": cidr}
	}
	code, b := f.do(t, "POST", base, admin, "application/json", mustJSON(map[string]any{"items": []map[string]string{item("data0", "10.250.0.0/31")}}))
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(b), host+" data0 10.250.0.0/31") || !strings.Contains(string(b), "member of bonded interface bond0") {
		t.Errorf("one address on a bond's member: %d %s", code, b)
	}
	batch := []map[string]string{item("bond0", "10.250.0.4/31"), item("data1", "10.250.0.2/31"), item("pxe0", "10.250.0.6/31")}
	code, b = f.do(t, "POST", base, admin, "application/json", mustJSON(map[string]any{"items": batch}))
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(b), host+" data1 10.250.0.2/31") ||
		!strings.Contains(string(b), host+" pxe0 10.250.0.6/31") || !strings.Contains(string(b), "takes DHCP") || strings.Contains(string(b), "bond0 10.250.0.4/31") {
		t.Errorf("a batch with a bond member and a DHCP NIC: %d %s", code, b)
	}
	var got apitypes.RoCEAssignments
	if code := f.json(t, "GET", base, admin, nil, &got); code != 200 || len(got.Items) != 0 {
		t.Fatalf("after the refusals: %d %+v, want nothing stored", code, got)
	}
	if code := f.json(t, "POST", base, admin, map[string]any{"items": batch[:1]}, &got); code != 200 || len(got.Items) != 1 {
		t.Errorf("the address on the bond: %d %+v", code, got)
	}
}
