package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

// fabricCmd is `orchestrator fabric`: the switches, the ports the design
// cables to nodes, what each port must be and what the switch reports,
// and the LLDP findings (GET /api/v1/fabric).
func (a *app) fabricCmd() *cobra.Command {
	var sf stateFlags
	var output string
	var nodes []string
	cmd := &cobra.Command{
		Use:   "fabric",
		Short: "List the switch ports the design cables to nodes: what each must be, what the switch reports, LLDP findings",
		Long: "One row per cabled port: switch, port, node, NIC alias, mode, VLANs (the native or access VLAN first, tagged ones after),\n" +
			"LAG, state (ok, or how the switch differs from what the node's phase wants) and what the port's LLDP neighbour says.\n" +
			"The desired configuration follows the node's phase: provisioning until deployed, production once deployed,\n" +
			"quarantine once released. A network driver that cannot read ports back gives the desired configuration only.\n" +
			"Exit status: 0 when nothing is found wrong, 1 when a port differs or is missing, a neighbour is not the designed node,\n" +
			"a switch did not answer or a node's ports cannot be planned; 2 when the fabric could not be asked (as every command).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd.Context(), &sf, readState, output, func(s *session, output string) error {
				f, err := s.c.Fabric(cmd.Context(), nodes...)
				if err := a.show(output, f, err, func() error { return a.printFabric(f) }); err != nil {
					return err
				}
				if n := fabricProblems(f); n > 0 {
					return &exitError{code: exitInvalid, err: fmt.Errorf("the fabric differs from the design: %d finding(s) above", n)}
				}
				return nil
			})
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	cmd.Flags().StringSliceVar(&nodes, "node", nil, "only these nodes' ports")
	return cmd
}

func (a *app) printFabric(f apitypes.Fabric) error {
	var rows [][]string
	for _, sw := range f.Switches {
		for _, p := range sw.Ports {
			rows = append(rows, []string{printable(sw.Name), printable(p.Port), printable(p.Node), printable(p.Alias), p.Desired.Mode,
				vlanWords(p.Desired), orDefault(printable(p.Desired.LAG), "-"), portStateWords(p), orDefault(printable(p.LLDP), "-")})
		}
	}
	if err := a.printTable("no switch ports: the current design cables no node to a switch", "SWITCH\tPORT\tNODE\tALIAS\tMODE\tVLANS\tLAG\tSTATE\tLLDP", rows); err != nil {
		return err
	}
	if !f.Read && f.ReadNote != "" {
		fmt.Fprintln(a.stdout, "note:", printable(f.ReadNote))
	}
	for _, sw := range f.Switches {
		if sw.Error != "" {
			fmt.Fprintf(a.stdout, "switch %s: %s\n", printable(sw.Name), printable(sw.Error))
		}
	}
	for _, n := range f.Nodes {
		if n.Error != "" {
			fmt.Fprintf(a.stdout, "node %s: %s\n", printable(n.Node), printable(n.Error))
		}
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
	n := 0
	for _, fd := range f.Findings {
		if fd.Kind == "miscabled" || fd.Kind == "missing" || fd.Kind == "no-plan" {
			n++
		}
	}
	for _, sw := range f.Switches {
		if sw.Error != "" {
			n++
		}
		for _, p := range sw.Ports {
			if p.State == "differs" {
				n++
			}
		}
	}
	return n
}
