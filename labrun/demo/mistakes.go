package demo

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/slipway-dev/slipway/design"
)

// WriteMistakes writes into dir a layer over d (the demo's site) that
// gives its first two nodes the same BMC address and its first network a
// CIDR with host bits: validation reports both at once, with file and
// line, before any hardware is touched.
func WriteMistakes(dir string, d *design.Design) error {
	names := d.NodeNames()
	nets := make([]string, 0, len(d.Networks))
	for n := range d.Networks {
		nets = append(nets, n)
	}
	sort.Strings(nets)
	if len(names) < 2 || len(nets) == 0 {
		return fmt.Errorf("the demo site needs two nodes and a network")
	}
	first, second := d.Nodes[names[0]], d.Nodes[names[1]]
	cidr := d.Networks[nets[0]].Spec.CIDR
	ip, _, _ := strings.Cut(cidr, "/")
	body := fmt.Sprintf(`# A site layer with two mistakes, written by 'orchestrator demo'.
apiVersion: slipway/v1
kind: Node
metadata: {name: %s}
spec:
  oob: {address: %s}
---
apiVersion: slipway/v1
kind: Network
metadata: {name: %s}
spec:
  cidr: %s
`, second.Metadata.Name, first.Spec.OOB.Address, nets[0], strings.Replace(cidr, ip, strings.TrimSuffix(ip, "0")+"7", 1))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "mistakes.yaml"), []byte(body), 0o644)
}
