// Package gensite writes synthetic, valid site designs of any size, for
// benchmarks, load tests and the virtual lab: N nodes in racks of 40, about
// N/100 leaf host profiles, each at the end of a chain 4 profiles deep.
package gensite

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
)

// NodesPerRack is how many nodes one rack file holds.
const NodesPerRack = 40

// Options shape a synthetic site.
type Options struct {
	Nodes int
	// Sites splits the racks among this many Sites, round-robin (0 or 1:
	// one Site). Site 1 is "synthetic", site k "synthetic-k".
	Sites int
}

// SiteName is the name of generated Site k (1-based).
func SiteName(k int) string {
	if k <= 1 {
		return "synthetic"
	}
	return fmt.Sprintf("synthetic-%d", k)
}

// Profiles returns how many leaf host profiles a site of n nodes gets.
func Profiles(n int) int { return max(1, n/100) }

// Write writes the site into dir (created if missing) and returns the files.
func Write(dir string, o Options) ([]string, error) {
	if o.Nodes < 1 {
		return nil, fmt.Errorf("gen-site needs at least 1 node, got %d", o.Nodes)
	}
	if o.Nodes > 500000 {
		return nil, fmt.Errorf("gen-site writes at most 500000 nodes, got %d", o.Nodes)
	}
	if o.Sites < 0 || o.Sites > 64 {
		return nil, fmt.Errorf("gen-site writes 1 to 64 Sites, got %d", o.Sites)
	}
	sites := max(o.Sites, 1)
	if err := os.MkdirAll(filepath.Join(dir, "nodes"), 0o755); err != nil {
		return nil, err
	}
	var files []string
	write := func(name string, fill func(w *bufio.Writer)) error {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, 1<<16)
		fill(w)
		if err := w.Flush(); err != nil {
			f.Close()
			return err
		}
		files = append(files, p)
		return f.Close()
	}
	if err := write("site.yaml", func(w *bufio.Writer) { site(w, sites) }); err != nil {
		return nil, err
	}
	if err := write("networks.yaml", networks); err != nil {
		return nil, err
	}
	if err := write("hardware.yaml", hardware); err != nil {
		return nil, err
	}
	if err := write("profiles.yaml", func(w *bufio.Writer) { profiles(w, Profiles(o.Nodes)) }); err != nil {
		return nil, err
	}
	if err := write("bootactions.yaml", bootActions); err != nil {
		return nil, err
	}
	for first := 0; first < o.Nodes; first += NodesPerRack {
		rack := first / NodesPerRack
		last := min(first+NodesPerRack, o.Nodes)
		err := write(fmt.Sprintf("nodes/rack-%04d.yaml", rack), func(w *bufio.Writer) {
			for i := first; i < last; i++ {
				node(w, i, rack, Profiles(o.Nodes))
				if sites > 1 {
					fmt.Fprintf(w, "  site: %s\n", SiteName(rack%sites+1))
				}
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return files, nil
}

func site(w *bufio.Writer, sites int) {
	defer func() {
		for k := 2; k <= sites; k++ { // the first Site keeps the design-wide settings
			fmt.Fprintf(w, `---
apiVersion: slipway/v1
kind: Site
metadata: {name: %s}
spec:
  domain: s%d.synthetic.example.net
  maas: {url: "http://127.0.0.1:5240/%s/MAAS", apiKey: "secret:maas-api-key"}
`, SiteName(k), k, SiteName(k))
		}
	}()
	fmt.Fprint(w, `# Synthetic site written by 'orchestrator gen-site'.
apiVersion: slipway/v1
kind: Site
metadata: {name: synthetic}
spec:
  domain: synthetic.example.net
  dns: {servers: [10.64.0.2, 10.64.0.3]}
  ntp: {servers: [ntp1.example.net]}
  maas: {url: "http://127.0.0.1:5240/MAAS", apiKey: "secret:maas-api-key"}
  defaults:
    platform: {image: jammy, kernel: ga-22.04}
`)
}

// Networks are /12s so that any size the generator accepts fits.
func networks(w *bufio.Writer) {
	for _, n := range []struct {
		name, cidr, first, last string
		vlan, mtu               int
	}{
		{"oob", "10.96.0.0/12", "10.96.0.16", "10.111.255.254", 10, 1500},
		{"pxe", "10.48.0.0/12", "", "", 0, 1500},
		{"mgmt", "10.64.0.0/12", "10.64.0.16", "10.79.255.254", 20, 1500},
		{"storage", "10.80.0.0/12", "10.80.0.16", "10.95.255.254", 30, 9000},
	} {
		p := netip.MustParsePrefix(n.cidr)
		gw := p.Addr().Next()
		fmt.Fprintf(w, "---\napiVersion: slipway/v1\nkind: Network\nmetadata: {name: %s}\nspec:\n  cidr: %s\n  mtu: %d\n  gateway: %s\n", n.name, n.cidr, n.mtu, gw)
		if n.vlan > 0 {
			fmt.Fprintf(w, "  vlan: %d\n", n.vlan)
		}
		if n.first != "" {
			fmt.Fprintf(w, "  ranges:\n    - {type: reserved, start: %s, end: %s}\n    - {type: static, start: %s, end: %s}\n",
				gw.Next(), p.Addr().Next().Next().Next().Next(), n.first, n.last)
		} else {
			fmt.Fprintf(w, "  ranges:\n    - {type: dhcp, start: %s, end: 10.63.255.254}\n", gw.Next())
		}
	}
	fmt.Fprint(w, `---
apiVersion: slipway/v1
kind: NetworkLink
metadata: {name: pxe-link}
spec:
  allowedNetworks: [pxe]
---
apiVersion: slipway/v1
kind: NetworkLink
metadata: {name: data-bond}
spec:
  mtu: 9000
  bonding: {mode: 802.3ad, hash: layer3+4, lacpRate: fast, miimon: 100, updelay: 200, downdelay: 200}
  trunking: {mode: 802.1q}
  allowedNetworks: [mgmt, storage]
`)
}

func hardware(w *bufio.Writer) {
	for i, name := range []string{"gen-a", "gen-b"} {
		fmt.Fprintf(w, `---
apiVersion: slipway/v1
kind: HardwareProfile
metadata: {name: %s}
spec:
  vendor: Example
  model: X%d
  oob: {protocol: lanplus, cipherSuite: 3}
  pxe: {interface: pxe0}
  deviceAliases:
    pxe0: {bus: pci, address: "0000:1%d:00.0"}
    data0: {bus: pci, address: "0000:3%d:00.0"}
    data1: {bus: pci, address: "0000:3%d:00.1"}
    bootdisk: {bus: nvme, address: "0000:5%d:00.0"}
`, name, i+1, i, i, i, i)
	}
}

func profiles(w *bufio.Writer, leaves int) {
	fmt.Fprint(w, `apiVersion: slipway/v1
kind: HostProfile
metadata: {name: base, labels: {managed-by: slipway}}
spec:
  hardwareProfile: gen-a
  primaryNetwork: mgmt
  oob:
    credentials: {username: admin, password: "secret:bmc-admin"}
  interfaces:
    pxe: {link: pxe-link, devices: [pxe0], networks: [pxe]}
    bond0: {link: data-bond, devices: [data0, data1], networks: [mgmt, storage]}
  # MAAS's lvm layout plus a logical volume: the MAAS driver applies it
  # with set_storage_layout and adds /var (drivers/server/maas/storage_layout.go)
  storage:
    devices:
      bootdisk:
        partitions:
          efi: {size: 512mi, bootable: true, filesystem: {fstype: fat32, mountpoint: /boot/efi}}
          boot: {size: 1g, bootable: true, filesystem: {fstype: ext4, mountpoint: /boot}}
          pv0: {size: ">20g", volumeGroup: vg0}
    volumeGroups:
      vg0:
        logicalVolumes:
          root: {size: 40g, filesystem: {fstype: ext4, mountpoint: /}}
          var: {size: ">10g", filesystem: {fstype: xfs, mountpoint: /var}}
  tags: [synthetic]
  ownerData: {owner: synthetic}
`)
	tierProfiles(w, leaves)
}

// tierProfiles writes the host profiles below base: a tier and a role
// per ten leaves, then the leaves.
func tierProfiles(w *bufio.Writer, leaves int) {
	mids := max(1, leaves/10)
	for m := 0; m < mids; m++ {
		hw := "gen-a"
		if m%2 == 1 {
			hw = "gen-b"
		}
		fmt.Fprintf(w, `---
apiVersion: slipway/v1
kind: HostProfile
metadata: {name: tier-%d}
spec:
  parent: base
  hardwareProfile: %s
  platform: {kernelParams: {console: ttyS0, nomodeset: true}}
  tags: [tier-%d]
---
apiVersion: slipway/v1
kind: HostProfile
metadata: {name: role-%d}
spec:
  parent: tier-%d
  storage:
    volumeGroups:
      vg0:
        logicalVolumes:
          tmp: {size: 5%%, filesystem: {fstype: ext4, mountpoint: /tmp}}
  ownerData: {role: role-%d}
`, m, hw, m, m, m, m)
	}
	for l := 0; l < leaves; l++ {
		fmt.Fprintf(w, `---
apiVersion: slipway/v1
kind: HostProfile
metadata: {name: leaf-%d}
spec:
  parent: role-%d
  tags: [leaf-%d, "!synthetic"]
  ownerData: {leaf: "%d"}
`, l, l%mids, l, l)
	}
}

func bootActions(w *bufio.Writer) {
	fmt.Fprint(w, `apiVersion: slipway/v1
kind: BootAction
metadata: {name: bootstrap}
spec:
  signaling: true
  assets:
    - path: /etc/slipway/node.env
      type: file
      permissions: "0644"
      template: |
        HOSTNAME={{ .Node.Hostname }}
        REPORT_URL={{ .Action.ReportURL }}
`)
}

// addr returns the i-th host address of a /12 starting at base, skipping
// the reserved first 16.
func addr(base [4]byte, i int) string {
	n := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	n += uint32(16 + i)
	return fmt.Sprintf("%d.%d.%d.%d", n>>24, n>>16&0xff, n>>8&0xff, n&0xff)
}

func node(w *bufio.Writer, i, rack, leaves int) {
	fmt.Fprintf(w, `---
apiVersion: slipway/v1
kind: Node
metadata: {name: n%06d, labels: {rack: r%04d}}
spec:
  hostProfile: leaf-%d
  rack: r%04d
  bootMac: "02:00:%02x:%02x:%02x:%02x"
  oob: {address: %s}
  addressing:
    - {network: pxe, address: dhcp}
    - {network: mgmt, address: %s}
    - {network: storage, address: %s}
`, i, rack, i%leaves, rack, byte(i>>24), byte(i>>16), byte(i>>8), byte(i),
		addr([4]byte{10, 96, 0, 0}, i), addr([4]byte{10, 64, 0, 0}, i), addr([4]byte{10, 80, 0, 0}, i))
}
