package gnmi

import (
	"strings"
	"testing"

	gpb "github.com/openconfig/gnmi/proto/gnmi"

	"github.com/slipway-dev/slipway/drivers"
)

// FuzzReadUpdate: whatever JSON a switch answers at any of the paths the
// driver reads is read without a panic, and a port reads as a valid
// PortState (a mode the SDK knows, its trunk without the native VLAN).
func FuzzReadUpdate(f *testing.F) {
	f.Add("interfaces", `{"openconfig-interfaces:interface":[{"name":"p1","config":{"mtu":9000,"enabled":false},"openconfig-if-ethernet:ethernet":{"config":{"openconfig-if-aggregate:aggregate-id":"n-bond0"},"openconfig-vlan:switched-vlan":{"config":{"interface-mode":"TRUNK","native-vlan":12,"trunk-vlans":[12,100,"7",100]}}}},{"name":"n-bond0","config":{"description":"slipway:n/bond0"},"aggregation":{"config":{"lag-type":"openconfig-if-aggregate:LACP"}}}]}`)
	f.Add("lacp/interfaces", `{"interface":[{"name":"n-bond0","config":{"interval":"FAST","lacp-mode":"ACTIVE"}}]}`)
	f.Add("lldp/interfaces", `{"interface":[{"name":"p1","neighbors":{"neighbor":[{"id":"x","state":{"chassis-id":"aa:bb:cc:dd:ee:ff","system-name":"n"}}]}}]}`)
	f.Add("network-instances/network-instance/vlans", `{"vlan":[{"vlan-id":1},{"vlan-id":"100"},{"vlan-id":-3}]}`)
	f.Fuzz(func(t *testing.T, path, value string) {
		s := newSwitchState()
		var el []*gpb.PathElem
		for _, n := range strings.Split(path, "/") {
			el = append(el, &gpb.PathElem{Name: n})
		}
		_ = s.readUpdate(el, &gpb.TypedValue{Value: &gpb.TypedValue_JsonIetfVal{JsonIetfVal: []byte(value)}})
		for name := range s.ifaces {
			st := s.port(drivers.SwitchPort{Switch: "sw", Port: name})
			if st.Found && st.Mode != drivers.ModeAccess && st.Mode != drivers.ModeTrunk {
				t.Fatalf("port %s reads mode %q", name, st.Mode)
			}
			for _, v := range st.Trunk {
				if v == st.VLAN && v != 0 {
					t.Fatalf("port %s: native VLAN %d also tagged", name, v)
				}
			}
		}
	})
}
