package apitypes

// Fabric is one page of GET /fabric: the switch ports the current
// design cables to nodes, each once, by switch then port: the
// configuration the node's phase wants, what the switch reports (when
// the network driver reads ports back) and the LLDP finding.
type Fabric struct {
	// Switches: every switch in view (all pages), its port count and
	// VLANs; Error names a switch read for this page that failed.
	Switches []FabricSwitch `json:"switches"`
	// Ports: this page's ports.
	Ports []FabricPort `json:"ports"`
	// Unplanned: nodes whose ports could not be planned (first page).
	Unplanned []FabricNode `json:"unplanned"`
	Total     int          `json:"total"`          // ports in view, all pages
	Next      string       `json:"next,omitempty"` // ?after= for the next page; absent on the last
	// Read: the network driver reads ports back; else ReadNote says why
	// the answer holds the desired configuration only.
	Read     bool   `json:"read"`
	ReadNote string `json:"read_note,omitempty"`
}

// FabricSwitch is one switch of the design's fabric (or its cabling):
// how many cabled ports it has and the VLANs they carry.
type FabricSwitch struct {
	Name  string `json:"name"`
	Site  string `json:"site,omitempty"`
	Ports int    `json:"ports"`
	VLANs []int  `json:"vlans"`
	// Error is why the switch could not be read (for this page's ports).
	Error string `json:"error,omitempty"`
}

// FabricNode is a node whose ports could not be planned.
type FabricNode struct {
	Node  string `json:"node"`
	Site  string `json:"site,omitempty"`
	Phase string `json:"phase"` // provisioning | production | quarantine
	Error string `json:"error"`
}

// FabricPort is one cabled switch port.
type FabricPort struct {
	Switch    string     `json:"switch"`
	Port      string     `json:"port"`
	Node      string     `json:"node"`
	Alias     string     `json:"alias"`               // the node NIC's device alias
	Interface string     `json:"interface,omitempty"` // the node interface (bond or NIC) it belongs to
	Phase     string     `json:"phase"`
	Desired   PortConfig `json:"desired"`
	Observed  *PortState `json:"observed,omitempty"` // absent: not read
	// State: ok, differs (Diff says how), missing (no such port on the
	// switch), unread, unmanaged (the node was never run: nothing is
	// wanted of the port yet).
	State string   `json:"state"`
	Diff  []string `json:"diff,omitempty"`
	// Finding is the LLDP check's verdict: cabled, miscabled,
	// no-neighbor, unread or missing.
	Finding string `json:"finding"`
	// LLDP is what the port's LLDP neighbour says of the cabling, in
	// words ("cabled as designed ...", "neighbour X ..., design says
	// node Y", "no neighbour"), or why the port was not read.
	LLDP string `json:"lldp,omitempty"`
}

// PortConfig is a switch port's configuration.
type PortConfig struct {
	Mode     string `json:"mode"`            // access | trunk
	VLAN     int    `json:"vlan"`            // access VLAN, or the trunk's native VLAN (0: none)
	Trunk    []int  `json:"trunk,omitempty"` // tagged VLANs
	LAG      string `json:"lag,omitempty"`
	LACP     string `json:"lacp,omitempty"` // active, or "" (static)
	LACPRate string `json:"lacp_rate,omitempty"`
	MTU      int    `json:"mtu,omitempty"` // 0: the switch's default
	Enabled  bool   `json:"enabled"`
}

// PortState is a port as the switch reports it.
type PortState struct {
	PortConfig
	Found    bool          `json:"found"` // false: the switch has no such port
	Up       bool          `json:"up"`    // link up
	Neighbor *LLDPNeighbor `json:"neighbor,omitempty"`
}

// LLDPNeighbor is what a port learned from the device at the cable's
// other end (as the switch reports it).
type LLDPNeighbor struct {
	ChassisID  string `json:"chassis_id,omitempty"`
	SystemName string `json:"system_name,omitempty"`
	PortID     string `json:"port_id,omitempty"`
	PortDescr  string `json:"port_description,omitempty"`
}
