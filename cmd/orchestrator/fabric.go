package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
)

// fabricCmd is `orchestrator fabric`: the switches, the ports the design
// cables to nodes, what each port must be and what the switch reports,
// and the LLDP findings (GET /api/v1/fabric, every page).
func (a *app) fabricCmd() *cobra.Command {
	var sf stateFlags
	var output string
	var q client.FabricQuery
	cmd := &cobra.Command{
		Use:   "fabric",
		Short: "List the switch ports the design cables to nodes: what each must be, what the switch reports, LLDP findings",
		Long: "One row per cabled port: switch, port, node, NIC alias, mode, VLANs (the native or access VLAN first, tagged ones after),\n" +
			"LAG, state (ok, or how the switch differs from what the node's phase wants) and what the port's LLDP neighbour says.\n" +
			"The desired configuration follows the node's phase: provisioning until deployed, production once deployed,\n" +
			"quarantine once released; a node never run is unmanaged (nothing is wanted of its ports yet). A network driver that\n" +
			"cannot read ports back gives the desired configuration only. The rows come a page at a time (--page ports each),\n" +
			"printed as they come, with the ports read so far on stderr when there is more than one page; -o json and -o yaml\n" +
			"print every page together as one answer (its ports all, no next).\n" +
			"Exit status: 0 when nothing is found wrong, 1 when a port differs or is missing, a neighbour is not the designed node,\n" +
			"a switch did not answer or a node's ports cannot be planned; 2 when the fabric could not be asked (as every command).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd.Context(), &sf, readState, output, func(s *session, output string) error {
				return a.fabric(cmd.Context(), s, q, output)
			})
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	cmd.Flags().StringSliceVar(&q.Nodes, "node", nil, "only these nodes' ports")
	cmd.Flags().StringSliceVar(&q.Switches, "switch", nil, "only these switches' ports")
	cmd.Flags().IntVar(&q.Limit, "page", 0, "ports asked for at a time (default the server's, 1000)")
	return cmd
}

// fabric follows every page of the fabric, printing each as it comes
// (or, for -o json|yaml, all of them as one answer), then exits 1 when
// something was found wrong.
func (a *app) fabric(ctx context.Context, s *session, q client.FabricQuery, output string) error {
	all := apitypes.Fabric{Ports: []apitypes.FabricPort{}, Unplanned: []apitypes.FabricNode{}}
	failed := map[string]string{} // switch → its error, from any page
	pages, seen, tw := 0, 0, tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	said := time.Now() // the first progress line after a second
	err := s.c.FabricPages(ctx, q, func(f apitypes.Fabric) error {
		pages, seen = pages+1, seen+len(f.Ports)
		for _, sw := range f.Switches {
			if sw.Error != "" {
				failed[sw.Name] = sw.Error
			}
		}
		all.Switches, all.Total, all.Read, all.ReadNote = f.Switches, f.Total, f.Read, f.ReadNote
		all.Unplanned = append(all.Unplanned, f.Unplanned...)
		if output == "json" || output == "yaml" {
			all.Ports = append(all.Ports, f.Ports...)
		} else {
			all.Ports = append(all.Ports, problemPorts(f.Ports)...) // for the count only
			if err := a.printFabricPage(tw, f, pages == 1); err != nil {
				return err
			}
		}
		if (f.Next != "" && time.Since(said) >= time.Second) || (f.Next == "" && pages > 1) { // once a second, and the last
			fmt.Fprintf(a.stderr, "fabric: page %d, %d of %d ports\n", pages, seen, f.Total)
			said = time.Now()
		}
		return nil
	})
	if err != nil {
		return apiErr(err)
	}
	for i := range all.Switches {
		all.Switches[i].Error = failed[all.Switches[i].Name]
	}
	if err := a.emit(output, all, func() error { return a.printFabricNotes(all) }); err != nil {
		return err
	}
	if n := fabricProblems(all); n > 0 {
		return &exitError{code: exitInvalid, err: fmt.Errorf("the fabric differs from the design: %d finding(s) above", n)}
	}
	return nil
}

// problemPorts are the ports fabricProblems counts.
func problemPorts(ps []apitypes.FabricPort) []apitypes.FabricPort {
	var out []apitypes.FabricPort
	for _, p := range ps {
		if p.State == "differs" || p.Finding == "miscabled" || p.Finding == "missing" {
			out = append(out, p)
		}
	}
	return out
}

// printFabricPage prints a page's rows (under the header on the first).
func (a *app) printFabricPage(tw *tabwriter.Writer, f apitypes.Fabric, first bool) error {
	if first && f.Total == 0 {
		_, err := fmt.Fprintln(a.stdout, "no switch ports: the current design cables no node to a switch")
		return err
	}
	if first {
		fmt.Fprintln(tw, "SWITCH\tPORT\tNODE\tALIAS\tMODE\tVLANS\tLAG\tSTATE\tLLDP")
	}
	for _, p := range f.Ports {
		fmt.Fprintln(tw, strings.Join([]string{printable(p.Switch), printable(p.Port), printable(p.Node), printable(p.Alias), p.Desired.Mode,
			vlanWords(p.Desired), orDefault(printable(p.Desired.LAG), "-"), portStateWords(p), orDefault(printable(p.LLDP), "-")}, "\t"))
	}
	return tw.Flush()
}

// printFabricNotes says, under the table, why ports were not read, which
// switches failed and which nodes' ports could not be planned.
func (a *app) printFabricNotes(f apitypes.Fabric) error {
	if !f.Read && f.ReadNote != "" {
		fmt.Fprintln(a.stdout, "note:", printable(f.ReadNote))
	}
	for _, sw := range f.Switches {
		if sw.Error != "" {
			fmt.Fprintf(a.stdout, "switch %s: %s\n", printable(sw.Name), printable(sw.Error))
		}
	}
	for _, n := range f.Unplanned {
		fmt.Fprintf(a.stdout, "node %s: %s\n", printable(n.Node), printable(n.Error))
	}
	return nil
}

// vlanWords: the access VLAN, or a trunk's native VLAN ("-" none) and
// its tagged VLANs.
func vlanWords(c apitypes.PortConfig) string {
	if c.Mode != "trunk" {
		return strconv.Itoa(c.VLAN)
	}
	tagged := make([]string, len(c.Trunk))
	for i, v := range c.Trunk {
		tagged[i] = strconv.Itoa(v)
	}
	native := "-"
	if c.VLAN != 0 {
		native = strconv.Itoa(c.VLAN)
	}
	return "native " + native + " tagged " + orDefault(strings.Join(tagged, ","), "-")
}

// portStateWords is a port's state, with how it differs.
func portStateWords(p apitypes.FabricPort) string {
	if p.State == "differs" {
		return "differs: " + printable(strings.Join(p.Diff, ", "))
	}
	return p.State
}

// fabricProblems counts what the view found wrong: ports that differ or
// are missing, miscabled ports, switches that did not answer, nodes
// whose ports could not be planned.
func fabricProblems(f apitypes.Fabric) int {
	n := len(problemPorts(f.Ports)) + len(f.Unplanned)
	for _, sw := range f.Switches {
		if sw.Error != "" {
			n++
		}
	}
	return n
}
