package design

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// RenderedNode is one fully resolved node as a document: its host profile
// chain applied, defaults filled in and its hardware profile attached under
// spec.hardware. Field names are those of the site YAML.
type RenderedNode struct {
	APIVersion string     `json:"api_version" yaml:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       NodeSpec   `json:"spec"`
}

// RenderNode returns the resolved node called name.
func (d *Design) RenderNode(name string) (RenderedNode, error) {
	n := d.Nodes[name]
	if n == nil {
		return RenderedNode{}, fmt.Errorf("node %q is not in the design (it has %d nodes)", name, len(d.Nodes))
	}
	return RenderedNode{APIVersion: APIVersion, Kind: KindNode, Metadata: n.Metadata, Spec: n.Spec}, nil
}

// Canonical returns the design's canonical JSON and its content address,
// the lowercase hex SHA-256 of that JSON. Equal designs give equal IDs
// whatever their files, order or comments.
func (d *Design) Canonical() ([]byte, string, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return nil, "", fmt.Errorf("encode design: %w", err)
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:]), nil
}

// Counts returns the number of objects of each kind.
func (d *Design) Counts() map[string]int {
	c := map[string]int{
		KindNetwork: len(d.Networks), KindNetworkLink: len(d.NetworkLinks),
		KindHardwareProfile: len(d.HardwareProfiles), KindHostProfile: len(d.HostProfiles),
		KindNode: len(d.Nodes), KindBootAction: len(d.BootActions), KindImage: len(d.Images),
	}
	if d.Site != nil {
		c[KindSite] = 1
	}
	return c
}

// NodeNames returns the names of the design's nodes in order.
func (d *Design) NodeNames() []string { return sortedNames(d.Nodes) }
