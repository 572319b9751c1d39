package design

import "testing"

func TestOOBFallbackEndpoint(t *testing.T) {
	n := &Node{}
	n.Spec.OOB = NodeOOB{Address: "10.1.0.5", Port: 8443, Credentials: &Credentials{Username: "admin", Password: "secret:bmc"}}
	if _, ok := n.OOBFallback(); ok {
		t.Fatal("a node without a hardware profile has a fallback")
	}
	n.Spec.Hardware = &HardwareProfileSpec{OOB: HardwareOOB{Type: "redfish", Port: 443, Fallback: &OOBFallback{Type: "ipmi", CipherSuite: 17}}}
	ep, ok := n.OOBFallback()
	want := OOBEndpoint{Type: "ipmi", Protocol: "lanplus", Address: "10.1.0.5", Port: 623, CipherSuite: 17,
		Privilege: "administrator", Username: "admin", PasswordRef: "secret:bmc"}
	// The node's port is its first method's: the fallback keeps its type's.
	if !ok || ep != want {
		t.Fatalf("fallback endpoint %+v %v, want %+v", ep, ok, want)
	}
	if first := n.OOB("ipmi"); first.Type != "redfish" || first.Port != 8443 {
		t.Fatalf("first endpoint %+v", first)
	}
}
