package maas

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

// powerTypes are the design's BMC types MAAS powers machines with (its
// power_type of the same name).
var powerTypes = map[string]bool{"ipmi": true, "redfish": true}

// powerParams renders a node's BMC as MAAS's power parameters of its type.
func powerParams(ps *drivers.PowerSettings) url.Values {
	if ps.Type == "redfish" {
		return redfishParams(ps)
	}
	return ipmiParams(ps)
}

// redfishParams are MAAS's redfish power parameters: the BMC's address
// (host:port when not 443; MAAS prefixes https://), the credentials and
// the Redfish system when the node names one (else MAAS finds it).
func redfishParams(ps *drivers.PowerSettings) url.Values {
	addr := ps.Address
	if ps.Port != 0 && ps.Port != 443 {
		addr = net.JoinHostPort(ps.Address, strconv.Itoa(ps.Port))
	}
	v := url.Values{
		"power_parameters_power_address": {addr},
		"power_parameters_power_user":    {ps.Username},
		"power_parameters_power_pass":    {ps.Password.Reveal()},
	}
	if ps.SystemID != "" {
		v.Set("power_parameters_node_id", ps.SystemID)
	}
	return v
}

// ipmiParams are MAAS's ipmi power parameters. MAAS's IPMI power driver
// has no port parameter: a BMC on another port than 623 (such as a
// virtual lab's) is written host:port.
func ipmiParams(ps *drivers.PowerSettings) url.Values {
	addr := ps.Address
	if ps.Port != 0 && ps.Port != 623 {
		addr = net.JoinHostPort(ps.Address, strconv.Itoa(ps.Port))
	}
	driver := "LAN_2_0"
	if ps.Protocol == "lan" {
		driver = "LAN"
	}
	priv := "ADMIN"
	if ps.Privilege == "operator" {
		priv = "OPERATOR"
	}
	boot := "efi"
	if !ps.EFI {
		boot = "legacy"
	}
	cs := ps.CipherSuite
	if cs == 0 {
		cs = 3
	}
	return url.Values{
		"power_parameters_power_address":   {addr},
		"power_parameters_power_user":      {ps.Username},
		"power_parameters_power_pass":      {ps.Password.Reveal()},
		"power_parameters_power_driver":    {driver},
		"power_parameters_cipher_suite_id": {strconv.Itoa(cs)},
		"power_parameters_privilege_level": {priv},
		"power_parameters_power_boot_type": {boot},
	}
}

// ensurePower sets the machine's power parameters from the design when
// they differ (one read; one write when needed). The password is compared,
// never printed.
func (d *Driver) ensurePower(ctx context.Context, m *mMachine, n drivers.Node) (string, error) {
	if n.Power == nil || !powerTypes[n.Power.Type] || n.Power.Address == "" {
		return "", nil
	}
	typ := n.Power.Type
	want := powerParams(n.Power)
	if m.PowerType == typ {
		var have map[string]any
		if err := d.c.call(ctx, http.MethodGet, "machines/"+m.SystemID+"/", "power_parameters", nil, &have); err != nil {
			return "", err
		}
		same := true
		for k, v := range want {
			if fmt.Sprint(have[strings.TrimPrefix(k, "power_parameters_")]) != v[0] {
				same = false
				break
			}
		}
		if same {
			return "", nil
		}
	}
	p := url.Values{"power_type": {typ}}
	for k, v := range want {
		p[k] = v
	}
	if err := d.c.call(ctx, http.MethodPut, "machines/"+m.SystemID+"/", "", p, nil); err != nil {
		return "", err
	}
	m.PowerType = typ
	return "power parameters (" + typ + " " + want.Get("power_parameters_power_address") + ")", nil
}
