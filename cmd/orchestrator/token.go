package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/statestore"
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

// withStore opens the state database for fn and closes it after.
// The token and secret commands administer the database itself (the
// secret key file is this host's; the token list's use dates are not in
// the API): while a serve holds it, they say so.
func withStore(state string, fn func(st statestore.Store) error) error {
	st, err := openStore(state)
	if err != nil && serveAnswers(state) {
		return usageErr(fmt.Errorf("the state database %s is held by the orchestrator serve answering on %s: "+
			"stop it to run token and secret commands here, or manage tokens and secrets through its API (/api/v1/tokens, /api/v1/secrets)",
			state, localSocket(state)))
	}
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(st)
}

func (a *app) tokenCreateCmd() *cobra.Command {
	var state, role, name, output string
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
			output, err := checkOutput(output)
			if err != nil {
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
			return withStore(state, func(st statestore.Store) error {
				plain, tok, err := auth.NewStore(st).Create(cmd.Context(), r, name)
				if err != nil {
					return usageErr(err)
				}
				a.log.Info().Str("token", tok.ID).Str("role", string(tok.Role)).Str("name", tok.Name).Msg("API token created")
				doc := createdToken{plain, tok.ID, tok.Name, tok.Role, tok.Created}
				if err := a.emit(output, doc, func() error { _, err := fmt.Fprintln(a.stdout, plain); return err }); err != nil {
					return err
				}
				fmt.Fprintf(a.stderr, "token %s (role %s) created: store it now, it is not shown again (lost: revoke it with 'orchestrator token revoke %s' and create another)\n",
					tok.ID, tok.Role, tok.ID)
				return nil
			})
		},
	}
	stateFlag(cmd, &state)
	cmd.Flags().StringVar(&role, "role", "", "the token's role: admin, operator or viewer (required)")
	cmd.Flags().StringVar(&name, "name", "", "what the token is for, shown in lists (e.g. ci, alice)")
	outputFlag(cmd, &output)
	return cmd
}

// createdToken is what token create prints with -o json or yaml.
type createdToken struct {
	Token   string    `json:"token"`
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Role    auth.Role `json:"role"`
	Created time.Time `json:"created"`
}

func (a *app) tokenListCmd() *cobra.Command {
	return a.storeListCmd("List the API tokens (IDs, names, roles; never the tokens)",
		func(ctx context.Context, st statestore.Store) (any, func() error, error) {
			toks, err := auth.NewStore(st).List(ctx)
			return nonNil(toks), func() error { return a.printTokens(toks) }, err
		})
}

// storeListCmd is a `list` subcommand over the state database: list reads
// the records and says how to print them as text.
func (a *app) storeListCmd(short string, list func(ctx context.Context, st statestore.Store) (any, func() error, error)) *cobra.Command {
	var state, output string
	cmd := &cobra.Command{
		Use:   "list [-o text|json|yaml]",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			output, err := checkOutput(output)
			if err != nil {
				return err
			}
			return withStore(state, func(st statestore.Store) error {
				v, text, err := list(cmd.Context(), st)
				if err != nil {
					return usageErr(err)
				}
				return a.emit(output, v, text)
			})
		},
	}
	stateFlag(cmd, &state)
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) printTokens(toks []auth.Token) error {
	rows := make([][]string, 0, len(toks))
	for _, t := range toks {
		used := "never"
		if !t.LastUsed.IsZero() {
			used = t.LastUsed.Local().Format(time.DateTime)
		}
		rows = append(rows, []string{t.ID, orDefault(t.Name, "-"), string(t.Role), t.Created.Local().Format(time.DateTime), used})
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
	var state string
	cmd := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API token by its ID (see 'token list')",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return withStore(state, func(st statestore.Store) error {
				if err := auth.NewStore(st).Revoke(cmd.Context(), argv[0]); err != nil {
					return usageErr(err)
				}
				// Revoke accepted it: hex, not a token pasted by mistake.
				id := strings.ToLower(strings.TrimSpace(argv[0]))
				a.log.Info().Str("token", id).Msg("API token revoked")
				fmt.Fprintf(a.stdout, "token %s revoked\n", id)
				return nil
			})
		},
	}
	stateFlag(cmd, &state)
	return cmd
}
