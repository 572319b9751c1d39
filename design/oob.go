package design

import "dario.cat/mergo"

// OOBEndpoint is what an out-of-band driver needs to reach a node's BMC:
// the node's own settings completed by its hardware profile's.
type OOBEndpoint struct {
	Type        string `json:"type"`
	Protocol    string `json:"protocol"`
	Address     string `json:"address"`
	Port        int    `json:"port"`
	CipherSuite int    `json:"cipherSuite"`
	Privilege   string `json:"privilege"`
	Username    string `json:"username,omitempty"`
	// PasswordRef is a secret reference, never the password.
	PasswordRef string `json:"passwordRef,omitempty"`
}

// OOB returns the node's effective BMC endpoint. Fields the node sets win;
// the rest come from the hardware profile, then from the site's OOB driver
// name and the IPMI defaults. (mergo fills only the empty fields, which is
// exactly "node first, then hardware": a port or cipher suite of 0 is never
// meant.)
func (n *Node) OOB(siteDriver string) OOBEndpoint {
	ep := OOBEndpoint{Address: n.Spec.OOB.Address, Port: n.Spec.OOB.Port}
	if c := n.Spec.OOB.Credentials; c != nil {
		ep.Username, ep.PasswordRef = c.Username, c.Password
	}
	if hw := n.Spec.Hardware; hw != nil {
		from := OOBEndpoint{Type: hw.OOB.Type, Protocol: hw.OOB.Protocol, Port: hw.OOB.Port,
			CipherSuite: hw.OOB.CipherSuite, Privilege: hw.OOB.Privilege}
		_ = mergo.Merge(&ep, from) // cannot fail: same struct type
	}
	_ = mergo.Merge(&ep, OOBEndpoint{Type: siteDriver, Protocol: "lanplus", Port: 623, CipherSuite: 3, Privilege: "administrator"})
	return ep
}
