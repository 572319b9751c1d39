package introspection

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/slipway-dev/slipway/drivers"
)

func getYAML(t *testing.T, e *env, path string, v any) string {
	t.Helper()
	r := e.do("GET", path, "", nil)
	if r.code != 200 {
		t.Fatalf("%s: %d %s", strings.Replace(path, e.srv.Token("r01-cmp01", "5"), "TOKEN", 1), r.code, r.body)
	}
	if v != nil {
		if err := yaml.Unmarshal(r.body, v); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, r.body)
		}
	}
	return string(r.body)
}

func TestNoCloudSeed(t *testing.T) {
	e := newEnv(t)
	tok := e.issue("r01-cmp01", "5")
	base := "/v1/nocloud/" + tok + "/"
	var meta map[string]any
	getYAML(t, e, base+"meta-data", &meta)
	wantMeta := map[string]any{"instance-id": "r01-cmp01-5", "local-hostname": "r01-cmp01", "public-keys": []any{e.d.Site.Spec.SSHKeys[0]}}
	if diff := cmp.Diff(wantMeta, meta); diff != "" {
		t.Errorf("meta-data (-want +got):\n%s", diff)
	}
	ud, err := e.srv.UserData(t.Context(), e.d, "r01-cmp01", "5")
	if err != nil {
		t.Fatal(err)
	}
	if got := getYAML(t, e, base+"user-data", nil); got != string(ud) {
		t.Errorf("user-data differs from UserData:\n%s", got)
	}
	if got := getYAML(t, e, base+"vendor-data", nil); got != "#cloud-config\n{}\n" {
		t.Errorf("vendor-data %q", got)
	}
}

// cmp01NICs is what commissioning found on r01-cmp01's machine.
var cmp01NICs = drivers.Inventory{MachineID: "abc123", NICs: []drivers.NIC{
	{Alias: "pxe0", Name: "eno1", MAC: "0c:c4:7a:00:00:01"},
	{Alias: "data0", Name: "enp65s0f0", MAC: "0c:c4:7a:00:00:02"},
	{Alias: "data1", Name: "enp65s0f1", MAC: "0c:c4:7a:00:00:03"},
	{Name: "eno2", MAC: "0c:c4:7a:00:00:04"}, // not in the design
}}

func TestNetworkConfig(t *testing.T) {
	e := newEnv(t)
	tok := e.issue("r01-cmp01", "5")
	e.inventory("r01-cmp01", cmp01NICs)
	var nc struct {
		Network struct {
			Version   int
			Ethernets map[string]map[string]any
			Bonds     map[string]map[string]any
			VLANs     map[string]map[string]any `yaml:"vlans"`
		}
	}
	raw := getYAML(t, e, "/v1/nocloud/"+tok+"/network-config", &nc)
	n := nc.Network
	if n.Version != 2 {
		t.Fatalf("version %d:\n%s", n.Version, raw)
	}
	// Matched by MAC, named as the MAAS driver names them: the NIC
	// carrying interface pxe on its own is renamed pxe, bond members keep
	// their kernel names.
	want := map[string]map[string]any{
		"pxe":       {"match": map[string]any{"macaddress": "0c:c4:7a:00:00:01"}, "set-name": "pxe", "mtu": 1500, "dhcp4": true},
		"enp65s0f0": {"match": map[string]any{"macaddress": "0c:c4:7a:00:00:02"}, "set-name": "enp65s0f0", "mtu": 9000},
		"enp65s0f1": {"match": map[string]any{"macaddress": "0c:c4:7a:00:00:03"}, "set-name": "enp65s0f1", "mtu": 9000},
	}
	if diff := cmp.Diff(want, n.Ethernets); diff != "" {
		t.Errorf("ethernets (-want +got):\n%s\n%s", diff, raw)
	}
	wantBonds := map[string]map[string]any{"bond0": {
		"interfaces": []any{"enp65s0f0", "enp65s0f1"},
		"mtu":        9000,
		"parameters": map[string]any{"mode": "802.3ad", "lacp-rate": "fast", "mii-monitor-interval": 100,
			"transmit-hash-policy": "layer3+4", "up-delay": 200, "down-delay": 200},
		"addresses": []any{"10.12.0.101/24"},
		"routes": []any{
			map[string]any{"to": "0.0.0.0/0", "via": "10.12.0.1"},
			map[string]any{"to": "10.0.0.0/24", "via": "10.12.0.254", "metric": 100},
		},
		"nameservers": map[string]any{"addresses": []any{"10.12.0.10", "10.12.0.11"}, "search": []any{"lab.example.net"}},
	}}
	if diff := cmp.Diff(wantBonds, n.Bonds); diff != "" {
		t.Errorf("bonds (-want +got):\n%s\n%s", diff, raw)
	}
	wantVLANs := map[string]map[string]any{"bond0.30": {
		"id": 30, "link": "bond0", "mtu": 9000, "addresses": []any{"10.13.0.101/24"},
		"routes": []any{map[string]any{"to": "10.113.0.0/24", "via": "10.13.0.254", "metric": 100}},
	}}
	if diff := cmp.Diff(wantVLANs, n.VLANs); diff != "" {
		t.Errorf("vlans (-want +got):\n%s\n%s", diff, raw)
	}
}

// A node whose NICs were never inventoried gets no network-config (404:
// cloud-init then keeps its fallback) rather than one naming NICs that
// may not exist; one whose inventory lacks a design device gets 409.
func TestNetworkConfigNeedsInventory(t *testing.T) {
	e := newEnv(t)
	tok := e.issue("r01-cmp01", "5")
	if r := e.do("GET", "/v1/nocloud/"+tok+"/network-config", "", nil); r.code != 404 || !strings.Contains(string(r.body), "inventoried") {
		t.Errorf("without an inventory: %d %s", r.code, r.body)
	}
	partial := cmp01NICs
	partial.NICs = partial.NICs[1:]
	e.inventory("r01-cmp01", partial)
	if r := e.do("GET", "/v1/nocloud/"+tok+"/network-config", "", nil); r.code != 409 || !strings.Contains(string(r.body), "device pxe0") {
		t.Errorf("without pxe0 in the inventory: %d %s", r.code, r.body)
	}
}

func TestSelf(t *testing.T) {
	e := newEnv(t)
	s := e.self(e.issue("r01-gpu01", "9"))
	n := e.d.Nodes["r01-gpu01"]
	if s.Name != "r01-gpu01" || s.FQDN != "r01-gpu01.lab.example.net" || s.Domain != "lab.example.net" ||
		s.Rack != "r01" || s.Deployment != "9" || s.PrimaryNetwork != "mgmt" || s.Platform.Kernel != n.Spec.Platform.Kernel {
		t.Errorf("self: %+v", s)
	}
	if diff := cmp.Diff(n.Metadata.Labels, s.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(n.Spec.Tags, s.Tags); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	var bond *Interface
	for i := range s.Interfaces {
		if s.Interfaces[i].Name == "bond0" {
			bond = &s.Interfaces[i]
		}
	}
	if bond == nil || len(bond.Devices) != 2 || bond.Devices[0].Alias != "data0" || bond.Devices[0].Bus != "pci" ||
		bond.Devices[0].Address != n.Spec.Hardware.DeviceAliases["data0"].Address || bond.Link.BondMode != "802.3ad" ||
		bond.Link.Trunking != "802.1q" || bond.Link.MTU != 9000 {
		t.Fatalf("bond0: %+v", bond)
	}
	var storage *Network
	for i := range bond.Networks {
		if bond.Networks[i].Name == "storage" {
			storage = &bond.Networks[i]
		}
	}
	if storage == nil || storage.Address != "10.13.0.104" || storage.CIDR != "10.13.0.0/24" || storage.Prefix != 24 ||
		storage.VLAN != 30 || !storage.Tagged || storage.MTU != 9000 || storage.Gateway != "10.13.0.1" || len(storage.Routes) != 1 {
		t.Errorf("storage: %+v", storage)
	}
	if len(s.Storage.Devices) == 0 || len(s.Storage.VolumeGroups) == 0 {
		t.Errorf("storage layout: %+v", s.Storage)
	}
	if len(s.BootActions) != len(e.d.BootActionsFor(n)) {
		t.Errorf("boot actions %+v", s.BootActions)
	}
	if len(s.DNS.Servers) != 2 || len(s.NTPServers) != 2 {
		t.Errorf("dns %+v ntp %v", s.DNS, s.NTPServers)
	}
	// Nothing of the BMC or its credentials.
	raw := e.do("GET", "/v1/self", e.srv.Token("r01-gpu01", "9"), nil).body
	for _, leak := range []string{n.Spec.OOB.Address, "secret:", "bmc-admin", "password"} {
		if strings.Contains(string(raw), leak) {
			t.Errorf("/v1/self holds %q", leak)
		}
	}
}
