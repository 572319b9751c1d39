package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
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

Like every command, these are clients of the API: of the --server given
(with an admin token), else of the serve holding the state database (as
the local OS user), else of an API run in this process over the state
database. The first admin token is made the last way, or through a local
serve's socket.`,
		"create, list or revoke")
	cmd.AddCommand(a.tokenCreateCmd(), a.tokenListCmd(), a.tokenRevokeCmd())
	return cmd
}

func (a *app) tokenCreateCmd() *cobra.Command {
	var sf stateFlags
	var role, name, output string
	cmd := &cobra.Command{
		Use:   "create --role admin|operator|viewer [--name NAME]",
		Short: "Create an API token and print it (the only time it is shown)",
		Long: `Create makes a new API token with the given role and prints it on
standard output, alone on its line (with -o json or yaml: token, id, name,
role, created). This is the only time the token is shown: store it
(e.g. in a password manager or your CI's secret store) before anything
else. The note about it goes to standard error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
			return a.call(cmd.Context(), &sf, readState, output, func(s *session, output string) error {
				tok, err := s.c.CreateToken(cmd.Context(), r, name)
				if err != nil {
					return apiErr(err)
				}
				return a.printCreatedToken(output, tok)
			})
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&role, "role", "", "the token's role: admin, operator or viewer (required)")
	cmd.Flags().StringVar(&name, "name", "", "what the token is for, shown in lists (e.g. ci, alice)")
	outputFlag(cmd, &output)
	return cmd
}

// printCreatedToken prints a new token: alone on its line (or the whole
// answer with -o json|yaml), and a note to store it on stderr.
func (a *app) printCreatedToken(output string, tok apitypes.CreatedToken) error {
	a.log.Info().Str("token", tok.ID).Str("role", string(tok.Role)).Str("name", tok.Name).Msg("API token created")
	if err := a.emit(output, tok, func() error { _, err := fmt.Fprintln(a.stdout, tok.Token); return err }); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "token %s (role %s) created: store it now, it is not shown again (lost: revoke it with 'orchestrator token revoke %s' and create another)\n",
		tok.ID, tok.Role, tok.ID)
	return nil
}

func (a *app) tokenListCmd() *cobra.Command {
	return listCmd(a, "List the API tokens (IDs, names, roles, when made and last used; never the tokens)",
		(*client.Client).Tokens, a.printTokens)
}

// listCmd is a `list [-o text|json|yaml]` subcommand: it asks the API
// with list and prints the answer as a table with text.
func listCmd[T any](a *app, short string, list func(*client.Client, context.Context) ([]T, error), text func([]T) error) *cobra.Command {
	var sf stateFlags
	var output string
	cmd := &cobra.Command{
		Use:   "list [-o text|json|yaml]",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd.Context(), &sf, readState, output, func(s *session, output string) error {
				v, err := list(s.c, cmd.Context())
				return a.show(output, nonNil(v), err, func() error { return text(v) })
			})
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) printTokens(toks []apitypes.TokenInfo) error {
	rows := make([][]string, 0, len(toks))
	for _, t := range toks {
		used := "never"
		if !t.LastUsed.IsZero() {
			used = t.LastUsed.Local().Format(time.DateTime)
		}
		rows = append(rows, []string{t.ID, orDefault(printable(t.Name), "-"), string(t.Role), t.Created.Local().Format(time.DateTime), used})
	}
	return a.printTable("no API tokens: create one with 'orchestrator token create --role admin'", "ID\tNAME\tROLE\tCREATED\tLAST USED", rows)
}

// nonNil is s, or an empty slice (JSON [] rather than null).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (a *app) tokenRevokeCmd() *cobra.Command {
	var sf stateFlags
	cmd := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API token by its ID (see 'token list')",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			id := strings.ToLower(strings.TrimSpace(argv[0]))
			if !auth.ValidID(id) {
				// Not repeated: it may be a token pasted by mistake.
				return usageErr(fmt.Errorf("not a token ID: give the %d hex characters 'orchestrator token list' shows", auth.IDLen))
			}
			return a.call(cmd.Context(), &sf, readState, "text", func(s *session, _ string) error {
				if err := s.c.RevokeToken(cmd.Context(), id); err != nil {
					return apiErr(err)
				}
				a.log.Info().Str("token", id).Msg("API token revoked")
				fmt.Fprintf(a.stdout, "token %s revoked\n", id)
				return nil
			})
		},
	}
	sf.add(cmd)
	return cmd
}
