package api

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/slipway-dev/slipway/design"
)

// Credential bindings. A design says where credentials go (the
// provisioner's URL and driver, each node's BMC address) and which ones
// (secret references; the secrets boot action templates ask for). An
// operator who could change both could have the server send a stored
// secret to an address of theirs, so a design that changes a binding,
// compared with the current revision (or any binding, when there is
// none), needs the admin role. A later change moves endpoints and
// credentials into admin-owned site records; until then this check
// guards the design.

// auditDetailKey holds, in the request's context, what the audit record
// of a successful call says besides its outcome.
const auditDetailKey = "slipway.audit.detail"

// currentDesign decodes the current revision's design (JSON; nil: there
// is none, and so is the answer).
func currentDesign(prev []byte) (*design.Design, error) {
	if prev == nil {
		return nil, nil
	}
	old := &design.Design{}
	if err := design.RevisionRecord.Decode("", prev, old); err != nil {
		return nil, fmt.Errorf("the current design revision can't be read: %w", err)
	}
	return old, nil
}

// credentialChanges lists the credential bindings of next that prev
// (nil: none) does not have, each naming its field. The HTTP apply
// refuses them unless the caller is an admin (and notes them for the
// audit); git sync holds them for approval (applydir.go).
func credentialChanges(prev, next *design.Design) []string {
	var out []string
	p, n := siteBindings(prev), siteBindings(next)
	for _, f := range [][3]string{{"maas.url", p.url, n.url}, {"maas.apiKey", p.apiKey, n.apiKey},
		{"drivers.server", p.server, n.server}, {"drivers.oob", p.oob, n.oob}} {
		if f[1] != f[2] {
			out = append(out, "the Site's "+f[0])
		}
	}
	if nodes := newBMCBindings(prev, next); len(nodes) > 0 {
		out = append(out, "the BMC address or oob.credentials of node "+shortJoin(nodes, 5))
	}
	if sws := newSwitchBindings(prev, next); len(sws) > 0 {
		out = append(out, "the network driver, address or credentials of fabric switch "+shortJoin(sws, 5))
	}
	return append(out, newTemplateSecrets(prev, next)...)
}

type siteBinding struct{ url, apiKey, server, oob string }

func siteBindings(d *design.Design) siteBinding {
	if d == nil || d.Site == nil {
		return siteBinding{}
	}
	s := d.Site.Spec
	return siteBinding{url: s.MAAS.URL, apiKey: s.MAAS.APIKey, server: s.Drivers.Server, oob: s.Drivers.OOB}
}

// bmcBindings are, for d's nodes that have a password, where it goes:
// each OOB method's type and endpoint, how its certificate is trusted
// (CA file, pinned fingerprint, or none), the user and the password
// reference. Turning a BMC's TLS check off changes where the password
// may go as much as its address does.
func bmcBindings(d *design.Design) map[string]string {
	out := map[string]string{}
	if d == nil {
		return out
	}
	driver := ""
	if d.Site != nil {
		driver = d.Site.Spec.Drivers.OOB
	}
	for name, n := range d.Nodes {
		ep := n.OOB(driver)
		if ep.PasswordRef == "" {
			continue
		}
		out[name] = binding(ep)
		if fb, ok := n.OOBFallback(); ok {
			out[name] += "; fallback " + binding(fb)
		}
	}
	return out
}

func binding(ep design.OOBEndpoint) string {
	return fmt.Sprintf("%s %s %s %s ca=%q fingerprint=%q insecure=%v", ep.Type, net.JoinHostPort(ep.Address, strconv.Itoa(ep.Port)),
		ep.Username, ep.PasswordRef, ep.CAFile, ep.Fingerprint, ep.Insecure)
}

// newBMCBindings names the nodes of next whose BMC password would go to
// an endpoint (or as a reference) no node of prev had it for.
func newBMCBindings(prev, next *design.Design) []string {
	known := map[string]bool{}
	for _, b := range bmcBindings(prev) {
		known[b] = true
	}
	var nodes []string
	for name, b := range bmcBindings(next) {
		if !known[b] {
			nodes = append(nodes, name)
		}
	}
	slices.Sort(nodes)
	return nodes
}

// switchBindings are, for d's fabric switches that have a password
// (by SITE/NAME), where it goes: the network driver (the first Site's,
// which serve builds, and the switch's Site's), the
// switch's address and settings, the user and the password reference.
func switchBindings(d *design.Design) map[string]string {
	out := map[string]string{}
	if d == nil || d.Site == nil {
		return out
	}
	for _, sw := range d.AllSwitches() {
		if sw.Password == "" {
			continue
		}
		// serve's one network driver is the first Site's, and it gets
		// every Site's switches (server/netrebind.go networkSpec).
		drv := d.Site.Spec.Drivers.Network + "/" + d.SiteNamed(sw.Site).Spec.Drivers.Network
		var settings []string
		for _, k := range slices.Sorted(maps.Keys(sw.Settings)) {
			settings = append(settings, strconv.Quote(k)+"="+strconv.Quote(sw.Settings[k]))
		}
		out[sw.Site+"/"+sw.Name] = fmt.Sprintf("%s %q %q %s %s [%s]", drv, sw.Name, sw.Address, sw.Username, sw.Password, strings.Join(settings, " "))
	}
	return out
}

// newSwitchBindings names the switches of next whose password would go
// somewhere (or as a reference) no switch of prev had it for.
func newSwitchBindings(prev, next *design.Design) []string {
	known := map[string]bool{}
	for _, b := range switchBindings(prev) {
		known[b] = true
	}
	var out []string
	for name, b := range switchBindings(next) {
		if !known[b] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// templateSecrets are the secret names d's boot action templates ask for,
// and the actions' templates that ask with a name that is not a constant.
func templateSecrets(d *design.Design) (names, dynamic map[string]bool) {
	names, dynamic = map[string]bool{}, map[string]bool{}
	if d == nil {
		return names, dynamic
	}
	for action, ba := range d.BootActions {
		for i, as := range ba.Spec.Assets {
			if as.Template == "" {
				continue
			}
			ns, dyn, err := design.TemplateSecrets(fmt.Sprintf("%s/assets[%d]", action, i), as.Template)
			for _, n := range ns {
				names[strings.ToLower(n)] = true
			}
			if dyn || err != nil {
				dynamic[action+"\x00"+as.Template] = true
			}
		}
	}
	return names, dynamic
}

// newTemplateSecrets says which secrets next's templates ask for that
// prev's do not, and which templates newly ask with a non-constant name.
func newTemplateSecrets(prev, next *design.Design) []string {
	pn, pd := templateSecrets(prev)
	nn, nd := templateSecrets(next)
	var out []string
	for n := range nn {
		if !pn[strings.ToLower(n)] {
			out = append(out, fmt.Sprintf("a boot action template asks for secret %q", n))
		}
	}
	for k := range nd {
		if !pd[k] {
			action, _, _ := strings.Cut(k, "\x00")
			out = append(out, fmt.Sprintf("boot action %s calls secret with a name that is not a constant", action))
		}
	}
	slices.Sort(out)
	return out
}

// shortJoin joins at most show items, saying how many more there are.
func shortJoin(items []string, show int) string {
	s := strings.Join(items[:min(len(items), show)], ", ")
	if len(items) > show {
		s += fmt.Sprintf(" (and %d more)", len(items)-show)
	}
	return s
}
