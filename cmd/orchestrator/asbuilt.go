package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// acceptHardwareCmd: `accept-hardware NODE`, in-process or through the
// API (operators).
func (a *app) acceptHardwareCmd() *cobra.Command {
	var ef engineFlags
	cmd := &cobra.Command{
		Use:   "accept-hardware NODE",
		Short: "Accept a node's machine as its last as-built check found it, so that retrying the task goes on",
		Long: `The as-built stage (after commissioning, in prepare_nodes and deploy_nodes)
compares what commissioning found on the node's machine with its hardware
profile's expect block and the node's cabling, and fails the node naming
every difference. When the machine is good enough as it is (a GPU is on
order, a cable will be moved later), accept-hardware records that you accept
that very inventory (its digest): retry the task and the check passes for
it. A different inventory (another machine, a part changed) fails again.
The acceptance is audited and shown in the node's events.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.call(cmd.Context(), &ef.stateFlags, runEngine, ef.output, func(s *session, output string) error {
				ab, err := s.c.AcceptHardware(cmd.Context(), argv[0])
				if err != nil {
					return apiErr(err)
				}
				if output != "text" {
					return writeDoc(a.stdout, output, ab)
				}
				fmt.Fprintf(a.stdout, "node %s: machine %s accepted as built (inventory %s) with %d difference(s):\n  %s\nretry the node's task to go on (`orchestrator retry TASK-ID`)\n",
					ab.Node, ab.MachineID, ab.Inventory, len(ab.Mismatches), strings.Join(ab.Mismatches, "\n  "))
				return nil
			})
		},
	}
	ef.add(cmd, false)
	return cmd
}
