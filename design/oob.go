package design

import "cmp"

// OOBEndpoint is what an out-of-band driver needs to reach a node's BMC:
// the node's own settings completed by its hardware profile's.
type OOBEndpoint struct {
	Type        string `json:"type"`
	Protocol    string `json:"protocol"`
	Address     string `json:"address"`
	Port        int    `json:"port"`
	CipherSuite int    `json:"cipher_suite" yaml:"cipherSuite"`
	Privilege   string `json:"privilege"`
	Username    string `json:"username,omitempty"`
	// PasswordRef is a secret reference, never the password.
	PasswordRef string `json:"password_ref,omitempty" yaml:"passwordRef"`
	// HTTPS BMCs (redfish): how their certificate is trusted, and the
	// system to drive.
	CAFile      string `json:"ca_file,omitempty" yaml:"caFile"`
	Fingerprint string `json:"fingerprint,omitempty"`
	Insecure    bool   `json:"insecure,omitempty"`
	SystemID    string `json:"system_id,omitempty" yaml:"systemId"`
}

// IPMI defaults of an endpoint that neither the node nor its hardware
// profile completes.
const (
	defaultOOBProtocol    = "lanplus"
	defaultOOBPort        = 623
	defaultOOBCipherSuite = 3
	defaultOOBPrivilege   = "administrator"
)

// OOB returns the node's effective BMC endpoint. Fields the node sets win;
// the rest come from the hardware profile, then from the site's OOB driver
// name and the IPMI defaults. Each field takes the first value that is not
// the zero value (cmp.Or): a port or cipher suite of 0 is never meant.
func (n *Node) OOB(siteDriver string) OOBEndpoint {
	var hw HardwareOOB
	if n.Spec.Hardware != nil {
		hw = n.Spec.Hardware.OOB
	}
	ep := OOBEndpoint{
		Type:        cmp.Or(hw.Type, siteDriver),
		Protocol:    cmp.Or(hw.Protocol, defaultOOBProtocol),
		Address:     n.Spec.OOB.Address,
		Port:        cmp.Or(n.Spec.OOB.Port, hw.Port, defaultPorts[cmp.Or(hw.Type, siteDriver)], defaultOOBPort),
		CipherSuite: cmp.Or(hw.CipherSuite, defaultOOBCipherSuite),
		Privilege:   cmp.Or(hw.Privilege, defaultOOBPrivilege),
	}
	if c := n.Spec.OOB.Credentials; c != nil {
		ep.Username, ep.PasswordRef = c.Username, c.Password
	}
	ep.CAFile, ep.Insecure = hw.CAFile, hw.Insecure
	ep.Fingerprint, ep.SystemID = n.Spec.OOB.Fingerprint, n.Spec.OOB.SystemID
	return ep
}

// SiteOOBDriver is the Site's OOB driver name (drivers.oob), ipmi when
// the design has no Site or the Site names none: the type of a node's BMC
// whose hardware profile names no oob.type.
func (d *Design) SiteOOBDriver() string {
	if d.Site != nil && d.Site.Spec.Drivers.OOB != "" {
		return d.Site.Spec.Drivers.OOB
	}
	return "ipmi"
}
