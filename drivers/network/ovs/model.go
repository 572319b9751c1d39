package ovs

import (
	"github.com/ovn-org/libovsdb/model"
)

// The columns of the Open_vSwitch database (vswitch.ovsschema) the driver
// reads and writes, written by hand: libovsdb checks them against the
// server's schema when it connects.

// ovsRoot is the Open_vSwitch table's one row: next_cfg is raised by a
// configuration change, cur_cfg follows once ovs-vswitchd applied it.
type ovsRoot struct {
	UUID    string `ovsdb:"_uuid"`
	CurCfg  int    `ovsdb:"cur_cfg"`
	NextCfg int    `ovsdb:"next_cfg"`
}

type bridge struct {
	UUID  string   `ovsdb:"_uuid"`
	Name  string   `ovsdb:"name"`
	Ports []string `ovsdb:"ports"`
}

type port struct {
	UUID        string            `ovsdb:"_uuid"`
	Name        string            `ovsdb:"name"`
	Interfaces  []string          `ovsdb:"interfaces"`
	Tag         *int              `ovsdb:"tag"`
	Trunks      []int             `ovsdb:"trunks"`
	VLANMode    *string           `ovsdb:"vlan_mode"`
	BondMode    *string           `ovsdb:"bond_mode"`
	LACP        *string           `ovsdb:"lacp"`
	OtherConfig map[string]string `ovsdb:"other_config"`
	ExternalIDs map[string]string `ovsdb:"external_ids"`
}

type iface struct {
	UUID       string  `ovsdb:"_uuid"`
	Name       string  `ovsdb:"name"`
	MTURequest *int    `ovsdb:"mtu_request"`
	MTU        *int    `ovsdb:"mtu"`
	LinkState  *string `ovsdb:"link_state"`
	AdminState *string `ovsdb:"admin_state"`
}

// Table names.
const (
	tableRoot   = "Open_vSwitch"
	tableBridge = "Bridge"
	tablePort   = "Port"
	tableIface  = "Interface"
)

func dbModel() (model.ClientDBModel, error) {
	return model.NewClientDBModel("Open_vSwitch", map[string]model.Model{
		tableRoot:   &ovsRoot{},
		tableBridge: &bridge{},
		tablePort:   &port{},
		tableIface:  &iface{},
	})
}
