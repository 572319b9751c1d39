package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

// clusterCmd: `cluster`, the replica group as the server sees it.
func (a *app) clusterCmd() *cobra.Command {
	var sf stateFlags
	var output string
	cmd := &cobra.Command{
		Use:   "cluster [-o text|json|yaml]",
		Short: "Show the replica group: which replica leads, the replicas, the state store and its members",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd.Context(), &sf, readState, output, func(s *session, output string) error {
				cl, err := s.c.Cluster(cmd.Context())
				return a.show(output, cl, err, func() error { return a.printCluster(cl) })
			})
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) printCluster(cl apitypes.Cluster) error {
	rows := make([][]string, 0, len(cl.Replicas))
	for _, r := range cl.Replicas {
		me := ""
		if r.ID == cl.Self.ID {
			me = " (answered)"
		}
		rows = append(rows, []string{r.ID + me, r.Role, orDefault(r.URL, "-"), r.Started.Local().Format(time.DateTime)})
	}
	if err := a.printTable("", "REPLICA\tROLE\tURL\tSTARTED", rows); err != nil {
		return err
	}
	if cl.Leader == nil {
		fmt.Fprintln(a.stdout, "no replica leads now: changes are refused until one does")
	} else {
		fmt.Fprintf(a.stdout, "leader %s since %s\n", cl.Leader.ID, cl.Leader.Since.Local().Format(time.DateTime))
	}
	st := cl.Store
	writable := "writable"
	if !st.Writable {
		writable = "NOT writable (no quorum?)"
	}
	fmt.Fprintf(a.stdout, "store %s %s%s: %s, %d keys\n", st.Kind, st.Path, st.Prefix, writable, st.Keys)
	if len(st.Members) == 0 {
		return nil
	}
	rows = rows[:0]
	for _, m := range st.Members {
		rows = append(rows, []string{m.Endpoint, strconv.FormatBool(m.Healthy), strconv.FormatBool(m.Leader), strconv.FormatInt(m.DBSize>>10, 10) + " KiB", orDefault(m.Error, "-")})
	}
	return a.printTable("", "MEMBER\tHEALTHY\tLEADER\tDB\tERROR", rows)
}
