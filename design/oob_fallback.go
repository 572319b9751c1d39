package design

import (
	"cmp"
	"encoding/hex"
	"strings"
)

// OOBFallback is a hardware model's second out-of-band method: another
// driver on the same BMC (its address and credentials are the node's),
// which the engine uses when the first method does not answer: e.g. a
// model managed over Redfish whose BMC also speaks IPMI.
type OOBFallback struct {
	Type        string `json:"type"`
	Protocol    string `json:"protocol,omitempty" enum:"lanplus|lan"`
	Port        int    `json:"port,omitempty"`
	CipherSuite int    `json:"cipher_suite,omitempty" yaml:"cipherSuite"`
	Privilege   string `json:"privilege,omitempty" enum:"administrator|operator"`

	Pos            Pos `json:"-"`
	TypePos        Pos `json:"-" pos:"type"`
	PortPos        Pos `json:"-" pos:"port"`
	CipherSuitePos Pos `json:"-" pos:"cipherSuite"`
}

// defaultPorts are the ports of the OOB types that have a well-known one;
// a fallback of another type names its port.
var defaultPorts = map[string]int{"ipmi": defaultOOBPort, "redfish": 443}

// OOBFallback returns the node's fallback BMC endpoint: its hardware
// profile's fallback method on the node's BMC address and credentials;
// false when the profile names none.
func (n *Node) OOBFallback() (OOBEndpoint, bool) {
	if n.Spec.Hardware == nil || n.Spec.Hardware.OOB.Fallback == nil {
		return OOBEndpoint{}, false
	}
	f := n.Spec.Hardware.OOB.Fallback
	ep := OOBEndpoint{
		Type:        f.Type,
		Protocol:    cmp.Or(f.Protocol, defaultOOBProtocol),
		Address:     n.Spec.OOB.Address,
		Port:        cmp.Or(f.Port, defaultPorts[f.Type]),
		CipherSuite: cmp.Or(f.CipherSuite, defaultOOBCipherSuite),
		Privilege:   cmp.Or(f.Privilege, defaultOOBPrivilege),
	}
	if c := n.Spec.OOB.Credentials; c != nil {
		ep.Username, ep.PasswordRef = c.Username, c.Password
	}
	hw := n.Spec.Hardware.OOB
	ep.CAFile, ep.Insecure = hw.CAFile, hw.Insecure
	ep.Fingerprint, ep.SystemID = n.Spec.OOB.Fingerprint, n.Spec.OOB.SystemID
	return ep, true
}

// oobFallback checks a hardware profile's fallback OOB method: another
// type than the first method's, with a port when the type has no
// well-known one.
func (v *validator) oobFallback(profile string, o *HardwareOOB) {
	f := o.Fallback
	if f == nil {
		return
	}
	switch {
	case f.Type == "":
		v.r.errorf(RuleOOB, KindHardwareProfile, profile, f.Pos, "oob.fallback needs a type: the OOB driver to use when %s does not answer (e.g. ipmi)", o.Type)
	case f.Type == o.Type:
		v.r.errorf(RuleOOB, KindHardwareProfile, profile, f.TypePos, "oob.fallback.type %s is the profile's own oob.type: name another method (e.g. redfish then ipmi), or remove the fallback", f.Type)
	case f.Port == 0 && defaultPorts[f.Type] == 0:
		v.r.errorf(RuleOOB, KindHardwareProfile, profile, f.Pos, "oob.fallback of type %s needs a port: Slipway knows the default port of ipmi and redfish only", f.Type)
	}
	if f.Port < 0 || f.Port > 65535 {
		v.r.errorf(RuleOOB, KindHardwareProfile, profile, f.PortPos, "oob.fallback.port %d is not a TCP/UDP port (1..65535)", f.Port)
	}
	if f.CipherSuite < 0 || f.CipherSuite > 17 {
		v.r.errorf(RuleOOB, KindHardwareProfile, profile, f.CipherSuitePos, "oob.fallback.cipherSuite %d is not usable: IPMI defines 1..17; use 3 or 17", f.CipherSuite)
	}
}

// validFingerprint: a SHA-256 fingerprint, 64 hex digits, with or
// without colons between the pairs.
func validFingerprint(f string) bool {
	h := strings.ReplaceAll(f, ":", "")
	if len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}
