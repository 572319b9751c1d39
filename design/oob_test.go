package design

import "testing"

// TestNodeOOB: each field of the endpoint is the node's, else its
// hardware profile's, else the site driver's name and the IPMI defaults.
func TestNodeOOB(t *testing.T) {
	hw := &HardwareProfileSpec{OOB: HardwareOOB{Type: "redfish", Protocol: "lan", Port: 6230, CipherSuite: 17, Privilege: "operator"}}
	creds := &Credentials{Username: "admin", Password: "secret:bmc"}
	for _, tc := range []struct {
		name string
		spec NodeSpec
		want OOBEndpoint
	}{
		{"defaults", NodeSpec{OOB: NodeOOB{Address: "10.0.0.5"}},
			OOBEndpoint{Type: "ipmi", Protocol: "lanplus", Address: "10.0.0.5", Port: 623, CipherSuite: 3, Privilege: "administrator"}},
		{"hardware profile", NodeSpec{OOB: NodeOOB{Address: "10.0.0.5", Credentials: creds}, Hardware: hw},
			OOBEndpoint{Type: "redfish", Protocol: "lan", Address: "10.0.0.5", Port: 6230, CipherSuite: 17, Privilege: "operator", Username: "admin", PasswordRef: "secret:bmc"}},
		{"node's port wins", NodeSpec{OOB: NodeOOB{Address: "10.0.0.5", Port: 16230}, Hardware: hw},
			OOBEndpoint{Type: "redfish", Protocol: "lan", Address: "10.0.0.5", Port: 16230, CipherSuite: 17, Privilege: "operator"}},
		{"profile without OOB", NodeSpec{OOB: NodeOOB{Port: 1623}, Hardware: &HardwareProfileSpec{}},
			OOBEndpoint{Type: "ipmi", Protocol: "lanplus", Port: 1623, CipherSuite: 3, Privilege: "administrator"}},
	} {
		n := &Node{Spec: tc.spec}
		if got := n.OOB("ipmi"); got != tc.want {
			t.Errorf("%s:\n got  %+v\n want %+v", tc.name, got, tc.want)
		}
	}
}
