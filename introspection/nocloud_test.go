package introspection

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
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
	var meta map[string]string
	getYAML(t, e, base+"meta-data", &meta)
	if diff := cmp.Diff(map[string]string{"instance-id": "r01-cmp01-5", "local-hostname": "r01-cmp01"}, meta); diff != "" {
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

func TestNetworkConfig(t *testing.T) {
	e := newEnv(t)
	tok := e.issue("r01-cmp01", "5")
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
	want := map[string]map[string]any{
		"pxe0":  {"match": map[string]any{"name": "pxe0"}, "mtu": 1500, "dhcp4": true},
		"data0": {"match": map[string]any{"name": "data0"}, "mtu": 9000},
		"data1": {"match": map[string]any{"name": "data1"}, "mtu": 9000},
	}
	if diff := cmp.Diff(want, n.Ethernets); diff != "" {
		t.Errorf("ethernets (-want +got):\n%s\n%s", diff, raw)
	}
	wantBonds := map[string]map[string]any{"bond0": {
		"interfaces": []any{"data0", "data1"},
		"mtu":        9000,
		"parameters": map[string]any{"mode": "802.3ad", "lacp-rate": "fast", "mii-monitor-interval": 100,
			"transmit-hash-policy": "layer3+4", "up-delay": 200, "down-delay": 200},
		"addresses": []any{"10.12.0.101/24"},
		"routes": []any{
			map[string]any{"to": "default", "via": "10.12.0.1"},
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

func TestNetworkConfigDeviceNames(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.DeviceNames = func(_ context.Context, node string) (map[string]string, error) {
			if node != "r01-cmp01" {
				t.Errorf("device names asked for %s", node)
			}
			return map[string]string{"pxe0": "eno1", "data0": "enp65s0f0"}, nil
		}
	})
	tok := e.issue("r01-cmp01", "5")
	var nc struct {
		Network struct{ Ethernets map[string]map[string]any }
	}
	getYAML(t, e, "/v1/nocloud/"+tok+"/network-config", &nc)
	eth := nc.Network.Ethernets
	for alias, kernel := range map[string]string{"pxe0": "eno1", "data0": "enp65s0f0", "data1": "data1"} {
		m, _ := eth[alias]["match"].(map[string]any)
		if m["name"] != kernel {
			t.Errorf("%s matched by %v, want %s", alias, m["name"], kernel)
		}
		if set, _ := eth[alias]["set-name"].(string); (kernel != alias) != (set == alias) {
			t.Errorf("%s: set-name %q", alias, set)
		}
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
