package maas

import (
	"bytes"

	segjson "github.com/segmentio/encoding/json"
)

// The parts of MAAS's JSON the driver reads.

type mMachine struct {
	mMachineState
	OSystem      string         `json:"osystem"`
	DistroSeries string         `json:"distro_series"`
	HWEKernel    *string        `json:"hwe_kernel"`
	Interfaces   []mInterface   `json:"interface_set"`
	BlockDevices []mBlockDevice `json:"blockdevice_set"`
	BootDisk     *mBlockDevice  `json:"boot_disk"`
	BootIface    *mInterface    `json:"boot_interface"`
	Gateways     struct {
		IPv4 struct {
			LinkID *int `json:"link_id"`
		} `json:"ipv4"`
	} `json:"default_gateways"`
}

// mMachineState is the part of a machine that a status read decodes.
type mMachineState struct {
	SystemID   string    `json:"system_id"`
	Hostname   string    `json:"hostname"`
	Status     int       `json:"status"`
	StatusName string    `json:"status_name"`
	StatusMsg  *string   `json:"status_message"`
	Owner      *string   `json:"owner"`
	PowerState string    `json:"power_state"`
	PowerType  string    `json:"power_type"`
	OwnerData  ownerData `json:"owner_data"`
	TagNames   []string  `json:"tag_names"`
	Domain     struct {
		Name string `json:"name"`
	} `json:"domain"`
}

// ownerData is a machine's owner data, decoded into a map of its own
// size: segmentio's decoder makes a new map[string]string with room for
// 64 entries (about 5 KB, for every machine of a listing, held by the
// read cache), unless it is given one. Empty or null: nil.
type ownerData map[string]string

// UnmarshalJSON decodes the owner data object into a map of its size.
func (o *ownerData) UnmarshalJSON(b []byte) error {
	m := map[string]string{} // given: no room made for 64
	if err := segjson.Unmarshal(b, &m); err != nil {
		return err
	}
	if len(m) == 0 {
		m = nil
	}
	*o = m
	return nil
}

// machine is the state as a machine without interfaces and disks.
func (s *mMachineState) machine() mMachine { return mMachine{mMachineState: *s} }

type mInterface struct {
	ID       int            `json:"id"`
	Name     string         `json:"name"`
	Type     string         `json:"type"`
	MAC      string         `json:"mac_address"`
	Parents  []string       `json:"parents"`
	Children []string       `json:"children"`
	MTU      int            `json:"effective_mtu"`
	Params   mParams        `json:"params"`
	VLAN     *mVLAN         `json:"vlan"`
	Links    []mLink        `json:"links"`
	Enabled  bool           `json:"enabled"`
	Extra    map[string]any `json:"-"`
}

type mLink struct {
	ID     int      `json:"id"`
	Mode   string   `json:"mode"`
	IP     string   `json:"ip_address"`
	Subnet *mSubnet `json:"subnet"`
}

type mVLAN struct {
	ID       int     `json:"id"`
	VID      int     `json:"vid"`
	MTU      int     `json:"mtu"`
	FabricID int     `json:"fabric_id"`
	Fabric   string  `json:"fabric"`
	DHCPOn   bool    `json:"dhcp_on"`
	Name     string  `json:"name"`
	Primary  *string `json:"primary_rack"`
}

type mSubnet struct {
	ID        int      `json:"id"`
	Name      string   `json:"name"`
	CIDR      string   `json:"cidr"`
	GatewayIP *string  `json:"gateway_ip"`
	DNS       []string `json:"dns_servers"`
	VLAN      *mVLAN   `json:"vlan"`
}

type mBlockDevice struct {
	ID         int          `json:"id"`
	Name       string       `json:"name"`
	Type       string       `json:"type"`
	Size       int64        `json:"size"`
	Available  int64        `json:"available_size"`
	IDPath     *string      `json:"id_path"`
	Serial     *string      `json:"serial"`
	Model      *string      `json:"model"`
	Partitions []mPartition `json:"partitions"`
	FS         *mFS         `json:"filesystem"`
}

type mPartition struct {
	ID       int    `json:"id"`
	Size     int64  `json:"size"`
	Path     string `json:"path"`
	FS       *mFS   `json:"filesystem"`
	Bootable bool   `json:"bootable"`
}

type mFS struct {
	FSType     string  `json:"fstype"`
	MountPoint *string `json:"mount_point"`
	Label      *string `json:"label"`
	MountOpts  *string `json:"mount_options"`
}

// mParams is an interface's params as MAAS sends them, kept as their
// JSON until read: only a bond's are ever compared (bondMatches), and a
// machine's dozen interfaces each decoded into a map were most of what a
// cached machine held. An empty object (or MAAS's "" for none) keeps
// nothing.
type mParams struct {
	raw []byte         // the JSON object, when not empty
	m   map[string]any // what the driver set (planned bonds), or raw decoded
}

// UnmarshalJSON keeps a copy of the object (the decoder reuses b).
func (p *mParams) UnmarshalJSON(b []byte) error {
	*p = mParams{}
	t := bytes.TrimSpace(b)
	if len(t) == 0 || t[0] != '{' || bytes.Equal(t, []byte("{}")) {
		return nil // "", null or {}: no params
	}
	p.raw = bytes.Clone(t) // the decoder delimited a whole JSON value
	return nil
}

// MarshalJSON writes the params back as an object.
func (p mParams) MarshalJSON() ([]byte, error) {
	switch {
	case p.m != nil:
		return segjson.Marshal(p.m)
	case p.raw != nil:
		return p.raw, nil
	}
	return []byte("{}"), nil
}

// Map is the params as a map (numbers as float64, as encoding/json
// decodes them into any); nil when there are none or they do not decode.
func (p mParams) Map() map[string]any {
	if p.m != nil || p.raw == nil {
		return p.m
	}
	var m map[string]any
	if segjson.Unmarshal(p.raw, &m) != nil {
		return nil
	}
	return m
}

func paramsOf(m map[string]any) mParams { return mParams{m: m} }
