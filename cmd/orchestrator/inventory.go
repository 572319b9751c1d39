package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/api"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/statestore"
)

// inventoryCmd: `inventory NODE` prints what commissioning found on the
// node's machine; `inventory --diff [--profile HW]` the facts in which
// nodes of a hardware profile differ from most of its nodes. Through the
// API with --server, else from the state database.
func (a *app) inventoryCmd() *cobra.Command {
	var sf stateFlags
	var output, profile string
	var diff bool
	cmd := &cobra.Command{
		Use:   "inventory (NODE | --diff [--profile HW]) [-o table|json|yaml]",
		Short: "Print the hardware commissioning found on a node's machine, or the odd ones out of a hardware profile",
		Long: `Inventory prints what commissioning found on a node's machine, as the
engine recorded it when commissioning ended: system (DMI vendor, product,
serial), BIOS and BMC firmware, CPUs, memory, GPUs and other accelerators
(PCI address, NUMA node), disks, and NICs (driver, firmware, negotiated
speed, link, and the switch port LLDP heard).

--diff compares the nodes of each hardware profile of the current design
(or only --profile's) and prints the facts in which a node differs from
the majority of its profile's nodes: a missing GPU, an old NIC firmware, a
smaller disk. Serials, MACs and LLDP neighbours differ by nature and are
not compared. Nodes not commissioned yet are left out.

With --server it needs a viewer token.`,
		Args: func(cmd *cobra.Command, argv []string) error {
			switch {
			case diff && len(argv) > 0:
				return errors.New("inventory --diff takes no node: it compares the nodes of each hardware profile (choose one with --profile)")
			case !diff && len(argv) != 1:
				return errors.New("inventory takes one node (or --diff)")
			case !diff && profile != "":
				return errors.New("--profile goes with --diff")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.call(cmd.Context(), &sf, readState, output, func(s *session, output string) error {
				if diff {
					return a.inventoryDiff(cmd.Context(), s.c, profile, output)
				}
				ni, err := s.c.Inventory(cmd.Context(), argv[0])
				if err != nil {
					return apiErr(err)
				}
				return a.emit(output, ni, func() error { printInventory(a.stdout, ni); return nil })
			})
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	cmd.Flags().BoolVar(&diff, "diff", false, "compare the nodes of each hardware profile and print the odd ones out")
	cmd.Flags().StringVar(&profile, "profile", "", "with --diff: only this hardware profile's nodes")
	return cmd
}

// inventoryDiffReport is --diff's answer for -o json and yaml.
type inventoryDiffReport struct {
	Profiles []orchestrator.ProfileDiff `json:"profiles"`
}

// inventoryDiff reads the inventories of the current design's nodes
// through the API (each answer names the node's hardware profile) and
// compares them by profile (orchestrator.DiffProfiles); only's alone,
// when set.
func (a *app) inventoryDiff(ctx context.Context, c *client.Client, only, output string) error {
	rev, err := c.Design(ctx, "current")
	if err != nil {
		return apiErr(err)
	}
	res, err := c.Inventories(ctx, rev.Nodes)
	if err != nil {
		return apiErr(err)
	}
	nodes := make([]orchestrator.ProfileNode, 0, len(res))
	for _, r := range res {
		pn := orchestrator.ProfileNode{Node: r.Inventory.Node, Profile: r.Inventory.HardwareProfile}
		if r.Commissioned {
			inv := r.Inventory.Inventory.ToDriver()
			pn.Inventory = &inv
		}
		nodes = append(nodes, pn)
	}
	rep := inventoryDiffReport{Profiles: orchestrator.DiffProfiles(nodes, only)}
	if only != "" && len(rep.Profiles) == 0 {
		return usageErr(fmt.Errorf("--profile %q: no node of the current design has that hardware profile", only))
	}
	return a.emit(output, rep, func() error { a.printInventoryDiff(rep); return nil })
}

func (a *app) printInventoryDiff(rep inventoryDiffReport) {
	for _, pd := range rep.Profiles {
		fmt.Fprintf(a.stdout, "hardware profile %s: %d node(s) inventoried", orDefault(pd.Profile, "(none)"), pd.Nodes)
		if len(pd.NotInventoried) > 0 {
			fmt.Fprintf(a.stdout, ", %d not commissioned yet", len(pd.NotInventoried))
		}
		if len(pd.OddOnesOut) == 0 {
			fmt.Fprintln(a.stdout, ": no odd ones out")
			continue
		}
		fmt.Fprintln(a.stdout, ":")
		tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NODE\tFIELD\tVALUE\tMAJORITY\tOF")
		for _, o := range pd.OddOnesOut {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", printable(o.Node), printable(o.Field), printable(orDefault(o.Value, "-")),
				printable(orDefault(o.Majority, "(no majority)")), o.Of)
		}
		tw.Flush()
	}
}

// printInventory writes a node's inventory as short tables.
func printInventory(w io.Writer, ni api.NodeInventory) {
	inv := ni.Inventory
	p := printable
	fmt.Fprintf(w, "node %s  machine %s", p(ni.Node), p(inv.MachineID))
	if ni.HardwareProfile != "" {
		fmt.Fprintf(w, "  hardware profile %s", p(ni.HardwareProfile))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  system\t%s\n", p(joinNonEmpty(" ", inv.System.Vendor, inv.System.Product, paren("serial", inv.System.Serial))))
	fmt.Fprintf(tw, "  firmware\t%s\n", p(orDefault(joinNonEmpty(" ", prefixed("BIOS ", joinNonEmpty(" ", inv.Firmware.BIOSVendor, inv.Firmware.BIOSVersion, paren("", inv.Firmware.BIOSDate))),
		prefixed("BMC ", inv.Firmware.BMCVersion)), "-")))
	fmt.Fprintf(tw, "  cpu\t%d x %s, %d cores, %d threads\n", inv.CPU.Sockets, p(orDefault(inv.CPU.Model, "?")), inv.CPU.Cores, inv.CPU.Threads)
	fmt.Fprintf(tw, "  memory\t%s\n", formatBytes(inv.MemoryMiB<<20))
	tw.Flush()
	if len(inv.GPUs) > 0 {
		fmt.Fprintf(w, "GPUs (%d)\n", len(inv.GPUs))
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  ADDRESS\tNUMA\tVENDOR\tMODEL\tID")
		for _, g := range inv.GPUs {
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\n", p(g.Address), g.NUMANode, p(g.Vendor), p(g.Model), p(joinNonEmpty(":", g.VendorID, g.ProductID)))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "NICs (%d)\n", len(inv.NICs))
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ALIAS\tNAME\tMAC\tPCI\tDRIVER\tFIRMWARE\tSPEED\tLINK\tNEIGHBOR")
	for _, n := range inv.NICs {
		link, speed, nb := "down", "-", "-"
		if n.LinkUp {
			link = "up"
		}
		if n.SpeedMbps > 0 {
			speed = fmt.Sprintf("%dG", n.SpeedMbps/1000)
			if n.SpeedMbps < 1000 {
				speed = fmt.Sprintf("%dM", n.SpeedMbps)
			}
		}
		if n.Neighbor != nil {
			nb = n.Neighbor.Switch + " " + n.Neighbor.Port
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p(orDefault(n.Alias, "-")), p(n.Name), p(n.MAC), p(orDefault(n.PCIAddress, "-")),
			p(orDefault(n.Driver, "-")), p(orDefault(n.Firmware, "-")), speed, link, p(nb))
	}
	tw.Flush()
	fmt.Fprintf(w, "Disks (%d)\n", len(inv.Disks))
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ALIAS\tNAME\tMODEL\tSIZE\tBUS\tTYPE\tSERIAL")
	for _, d := range inv.Disks {
		kind := "ssd"
		if d.Rotational {
			kind = "hdd"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", p(orDefault(d.Alias, "-")), p(d.Name), p(orDefault(d.Model, "-")), decimalSize(d.SizeBytes),
			p(orDefault(d.BusAddress, "-")), kind, p(orDefault(d.Serial, "-")))
	}
	tw.Flush()
}

// decimalSize is a disk's size as vendors state it (1.92 TB).
func decimalSize(n int64) string {
	for _, u := range []struct {
		name string
		size float64
	}{{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}} {
		if float64(n) >= u.size {
			return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", float64(n)/u.size), "0"), ".") + " " + u.name
		}
	}
	return fmt.Sprintf("%d B", n)
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, s := range parts {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, sep)
}

func paren(label, s string) string {
	if s == "" {
		return ""
	}
	if label != "" {
		return "(" + label + " " + s + ")"
	}
	return "(" + s + ")"
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// printGPUInventory prints the inventory of the first of the nodes whose
// machine has GPUs (the demo's), under a heading; nothing when none has.
func (a *app) printGPUInventory(ctx context.Context, st statestore.Store, nodes []string) {
	for _, n := range nodes {
		ni, err := storedInventory(ctx, st, n)
		if err != nil || len(ni.Inventory.GPUs) == 0 {
			continue
		}
		fmt.Fprintf(a.stdout, "\n== Inventory of a GPU node (orchestrator inventory %s; --diff for the odd ones out)\n", n)
		printInventory(a.stdout, ni)
		return
	}
}

// storedInventory reads a node's inventory straight from a state store
// (the demo's, which runs the lab's engine in process), with the node's
// hardware profile in the current design.
func storedInventory(ctx context.Context, st statestore.Store, node string) (api.NodeInventory, error) {
	inv, ok, err := orchestrator.NodeInventory(ctx, st, node)
	if err != nil || !ok {
		return api.NodeInventory{}, fmt.Errorf("node %q has no inventory (%v)", node, err)
	}
	ni := api.NodeInventory{Node: node, Inventory: apitypes.FromInventory(inv)}
	if rev, err := st.Current(ctx); err == nil {
		if d, err := design.DecodeRevision(rev.Design); err == nil && d.Nodes[node] != nil {
			ni.HardwareProfile = d.Nodes[node].Spec.HardwareProfile
		}
	}
	return ni, nil
}
