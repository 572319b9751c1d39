package main

import (
	"encoding/json"
	"slices"
	"strings"

	gpb "github.com/openconfig/gnmi/proto/gnmi"

	"github.com/slipway-dev/slipway/drivers"
)

// floorSet is the floor's one SetRequest for switch sw: a replace of
// /interfaces carrying every port of nodes as phase wants it and each
// node's LAG interface (production's: the driver leaves it in
// quarantine), in production an update of the LACP of those LAGs, and an
// update creating the VLANs the ports carry. No read, no compare: the
// settings as they end up, in OpenConfig JSON.
func floorSet(sw string, nodes []drivers.Node, ph drivers.Phase) (*gpb.SetRequest, error) {
	var ifs, lacp []any
	var vlans []int
	for _, n := range nodes {
		plan, err := drivers.PortPlan(n, ph)
		if err != nil {
			return nil, err
		}
		prod, err := drivers.PortPlan(n, drivers.PhaseProduction)
		if err != nil {
			return nil, err
		}
		for _, c := range plan {
			ifs = append(ifs, floorPort(n.Name, c))
			for _, v := range c.VLANs() {
				if !slices.Contains(vlans, v) {
					vlans = append(vlans, v)
				}
			}
		}
		seen := map[string]bool{}
		for _, c := range prod {
			if c.LAG == "" || seen[c.LAG] {
				continue
			}
			seen[c.LAG] = true
			name := n.Name + "-" + c.LAG
			ifs = append(ifs, floorLAG(name, c))
			if ph == drivers.PhaseProduction && c.LACP != "" {
				lacp = append(lacp, map[string]any{"name": name, "config": map[string]any{"name": name,
					"interval": strings.ToUpper(c.LACPRate), "lacp-mode": strings.ToUpper(c.LACP)}})
			}
		}
	}
	req := &gpb.SetRequest{Prefix: &gpb.Path{Target: sw}}
	req.Replace = append(req.Replace, floorUpdate([]*gpb.PathElem{{Name: "interfaces"}}, map[string]any{"interface": ifs}))
	if len(lacp) > 0 {
		req.Update = append(req.Update, floorUpdate([]*gpb.PathElem{{Name: "lacp"}, {Name: "interfaces"}}, map[string]any{"interface": lacp}))
	}
	slices.Sort(vlans)
	var vl []any
	for _, v := range vlans {
		vl = append(vl, map[string]any{"vlan-id": v, "config": map[string]any{"vlan-id": v, "name": "bench"}})
	}
	if len(vl) > 0 {
		req.Update = append(req.Update, floorUpdate(gnmiVLANsPath, map[string]any{"vlan": vl}))
	}
	return req, nil
}

func floorUpdate(el []*gpb.PathElem, v any) *gpb.Update {
	b, _ := json.Marshal(v) // maps of strings, numbers and booleans always marshal
	return &gpb.Update{Path: &gpb.Path{Elem: el}, Val: &gpb.TypedValue{Value: &gpb.TypedValue_JsonIetfVal{JsonIetfVal: b}}}
}

// floorSwitchedVLAN is the openconfig-vlan switched-vlan config of c.
func floorSwitchedVLAN(c drivers.PortConfig) map[string]any {
	if c.Mode == drivers.ModeTrunk {
		sv := map[string]any{"interface-mode": "TRUNK", "trunk-vlans": append([]int{}, c.Trunk...)}
		if c.VLAN != 0 {
			sv["native-vlan"] = c.VLAN
		}
		return sv
	}
	return map[string]any{"interface-mode": "ACCESS", "access-vlan": c.VLAN}
}

// floorPort is port c's whole interface entry.
func floorPort(node string, c drivers.PortConfig) map[string]any {
	cfg := map[string]any{"name": c.Port, "type": "iana-if-type:ethernetCsmacd", "enabled": c.Enabled}
	if c.MTU != 0 {
		cfg["mtu"] = c.MTU
	}
	eth := map[string]any{"switched-vlan": map[string]any{"config": floorSwitchedVLAN(c)}}
	if c.LAG != "" {
		eth["config"] = map[string]any{"aggregate-id": node + "-" + c.LAG}
	}
	return map[string]any{"name": c.Port, "config": cfg, "ethernet": eth}
}

// floorLAG is the LAG interface entry of the LAG member c belongs to.
func floorLAG(name string, c drivers.PortConfig) map[string]any {
	cfg := map[string]any{"name": name, "type": "iana-if-type:ieee8023adLag", "enabled": true, "description": "slipway bench"}
	if c.MTU != 0 {
		cfg["mtu"] = c.MTU
	}
	lagType := "STATIC"
	if c.LACP != "" {
		lagType = "LACP"
	}
	return map[string]any{"name": name, "config": cfg,
		"aggregation": map[string]any{"config": map[string]any{"lag-type": lagType}, "switched-vlan": map[string]any{"config": floorSwitchedVLAN(c)}}}
}
