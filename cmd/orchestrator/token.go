package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/auth"
)

// credGroupCmd is a command that only holds subcommands: alone it prints its
// help, with an unknown subcommand it fails.
func credGroupCmd(use, short, long, subs string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return usageErr(fmt.Errorf("unknown command %q for 'orchestrator %s': use %s", args[0], cmd.Name(), subs))
		},
	}
}

func (a *app) tokenCmd() *cobra.Command {
	cmd := credGroupCmd("token", "Manage the API's bearer tokens",
		`Token manages the bearer tokens of the orchestrator's API. A token has a
role: admin (everything, including tokens and secrets), operator (tasks,
designs, node verbs) or viewer (read only). A token is shown once, when it
is created; the state database keeps only its hash. Tokens are named by
their ID (8 hex characters) in lists, logs and 'token revoke'.

These commands open the state database directly: run them on the
orchestrator's host, while 'orchestrator serve' is stopped, or use the API.`,
		"create, list or revoke")
	cmd.AddCommand(a.tokenCreateCmd(), a.tokenListCmd(), a.tokenRevokeCmd())
	return cmd
}

func credOutputFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVarP(p, "output", "o", "text", "output format: text or json")
}

func credCheckOutput(output string) error {
	if output != "text" && output != "json" {
		return usageErr(fmt.Errorf("-o %q: use text or json", output))
	}
	return nil
}

func (a *app) tokenCreateCmd() *cobra.Command {
	var state, role, name, output string
	cmd := &cobra.Command{
		Use:   "create --role admin|operator|viewer [--name NAME]",
		Short: "Create an API token and print it (the only time it is shown)",
		Long: `Create makes a new API token with the given role and prints it on
standard output, alone on its line (with -o json: {"token", "id", "name",
"role", "created"}). This is the only time the token is shown: store it
(e.g. in a password manager or your CI's secret store) before anything
else. The note about it goes to standard error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := credCheckOutput(output); err != nil {
				return err
			}
			if role == "" {
				return usageErr(errors.New("give the token's role with --role admin, operator or viewer"))
			}
			r, err := auth.ParseRole(role)
			if err != nil {
				return usageErr(fmt.Errorf("--role: %w", err))
			}
			if err := auth.ValidateName(name); err != nil {
				return usageErr(fmt.Errorf("--name: %w", err))
			}
			st, err := openStore(state)
			if err != nil {
				return err
			}
			defer st.Close()
			plain, tok, err := auth.NewStore(st).Create(cmd.Context(), r, name)
			if err != nil {
				return usageErr(err)
			}
			a.log.Info().Str("token", tok.ID).Str("role", string(tok.Role)).Str("name", tok.Name).Msg("API token created")
			if output == "json" {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(struct {
					Token   string    `json:"token"`
					ID      string    `json:"id"`
					Name    string    `json:"name"`
					Role    auth.Role `json:"role"`
					Created time.Time `json:"created"`
				}{plain, tok.ID, tok.Name, tok.Role, tok.Created}); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(a.stdout, plain)
			}
			fmt.Fprintf(a.stderr, "token %s (role %s) created: store it now, it is not shown again (lost: revoke it with 'orchestrator token revoke %s' and create another)\n",
				tok.ID, tok.Role, tok.ID)
			return nil
		},
	}
	stateFlag(cmd, &state)
	cmd.Flags().StringVar(&role, "role", "", "the token's role: admin, operator or viewer (required)")
	cmd.Flags().StringVar(&name, "name", "", "what the token is for, shown in lists (e.g. ci, alice)")
	credOutputFlag(cmd, &output)
	return cmd
}

func (a *app) tokenListCmd() *cobra.Command {
	var state, output string
	cmd := &cobra.Command{
		Use:   "list [-o text|json]",
		Short: "List the API tokens (IDs, names, roles; never the tokens)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := credCheckOutput(output); err != nil {
				return err
			}
			st, err := openStore(state)
			if err != nil {
				return err
			}
			defer st.Close()
			toks, err := auth.NewStore(st).List(cmd.Context())
			if err != nil {
				return usageErr(err)
			}
			if output == "json" {
				return json.NewEncoder(a.stdout).Encode(toks)
			}
			if len(toks) == 0 {
				fmt.Fprintln(a.stdout, "no API tokens: create one with 'orchestrator token create --role admin'")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tROLE\tCREATED\tLAST USED")
			for _, t := range toks {
				name, used := t.Name, "never"
				if name == "" {
					name = "-"
				}
				if !t.LastUsed.IsZero() {
					used = t.LastUsed.Local().Format(time.DateTime)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, name, t.Role, t.Created.Local().Format(time.DateTime), used)
			}
			return tw.Flush()
		},
	}
	stateFlag(cmd, &state)
	credOutputFlag(cmd, &output)
	return cmd
}

func (a *app) tokenRevokeCmd() *cobra.Command {
	var state string
	cmd := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API token by its ID (see 'token list')",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			st, err := openStore(state)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := auth.NewStore(st).Revoke(cmd.Context(), argv[0]); err != nil {
				return usageErr(err)
			}
			// Revoke accepted it: hex, not a token pasted by mistake.
			id := strings.ToLower(strings.TrimSpace(argv[0]))
			a.log.Info().Str("token", id).Msg("API token revoked")
			fmt.Fprintf(a.stdout, "token %s revoked\n", id)
			return nil
		},
	}
	stateFlag(cmd, &state)
	return cmd
}
