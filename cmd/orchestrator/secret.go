package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/internal/progress"
	"github.com/slipway-dev/slipway/secrets/store"
)

func (a *app) secretCmd() *cobra.Command {
	cmd := credGroupCmd("secret", "Manage the secrets stored encrypted in the state database",
		`Secret manages the values of the design's secret:NAME references, kept in
the state database encrypted with AES-256-GCM. Values are read from
standard input, never from the command line, and are never printed.

The key is read from the environment variable SLIPWAY_SECRET_KEY (base64
of 32 bytes) when it is set, and otherwise from the key file: --key-file,
by default slipway.key in the directory of the state database, created with
mode 0600 at first use. Keep the key file, and a copy of it in a safe
place: without it the stored secrets can't be decrypted.

Refer to a stored secret in the design as secret:NAME. Where secrets are
resolved from this store, it comes first, and the environment variable
SLIPWAY_SECRET_<NAME> is only used for names it does not hold.

Like every command, these are clients of the API (see 'orchestrator token
--help'). A server stores secrets with its own key; --key-file and
SLIPWAY_SECRET_KEY only matter when this command opens the state
database itself (no --server, no serve holding it).`,
		"set, list or delete")
	cmd.AddCommand(a.secretSetCmd(), a.secretListCmd(), a.secretDeleteCmd())
	return cmd
}

// checkKeySource refuses --key-file together with SLIPWAY_SECRET_KEY:
// which key is meant would be a guess.
func checkKeySource(keyFileSet bool) error {
	if keyFileSet && os.Getenv(store.KeyEnv) != "" {
		return usageErr(fmt.Errorf("both --key-file and %s are given: use one of them (unset %s to use the key file)", store.KeyEnv, store.KeyEnv))
	}
	return nil
}

func (a *app) secretSetCmd() *cobra.Command {
	var sf stateFlags
	cmd := &cobra.Command{
		Use:   "set NAME [--key-file PATH] < VALUE",
		Short: "Store a secret; its value is read from standard input",
		Long: `Set stores the value read from standard input as the secret NAME,
encrypted, replacing any value it had. Trailing newlines are removed. On a
terminal, one line is read, without echo. Refer to the secret in the design
as secret:NAME.

  orchestrator secret set bmc-admin < bmc-password.txt
  printf '%s' "$PW" | orchestrator secret set bmc-admin`,
		Args: func(_ *cobra.Command, argv []string) error {
			switch {
			case len(argv) == 0:
				return usageErr(errors.New("give the secret's NAME: 'orchestrator secret set NAME < FILE'"))
			case len(argv) > 1:
				// Not repeated: it may be the value.
				return usageErr(errors.New("give only the secret's NAME: the value is read from standard input, never from the command line ('orchestrator secret set NAME < FILE')"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, argv []string) error {
			name := argv[0]
			if err := store.ValidateName(name); err != nil {
				return usageErr(err)
			}
			keyFileSet := cmd.Flags().Changed("key-file")
			if err := checkKeySource(keyFileSet); err != nil {
				return err
			}
			value, err := a.readSecretValue(cmd.Context(), name)
			if err != nil {
				return err
			}
			return a.call(cmd.Context(), &sf, writeSecrets, "text", func(s *session, _ string) error {
				if keyFileSet && !s.inProcess {
					return usageErr(errors.New("--key-file is for a state database this command opens itself: the server answering stores the secret with its own key; leave --key-file out"))
				}
				if err := s.c.PutSecret(cmd.Context(), name, value); err != nil {
					return apiErr(err)
				}
				a.log.Info().Str("secret", name).Msg("secret stored")
				fmt.Fprintf(a.stdout, "secret %s stored (refer to it in the design as secret:%s)\n", name, name)
				return nil
			})
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&sf.keyFile, "key-file", "", "secret key file (default: "+store.DefaultKeyFile+" next to the state database; env "+store.KeyEnv+" holds the key instead)")
	return cmd
}

// readSecretValue reads a secret's value from standard input: one line on
// a terminal (without echo when possible), everything otherwise; trailing
// newlines are removed.
func (a *app) readSecretValue(ctx context.Context, name string) (string, error) {
	noValue := usageErr(fmt.Errorf("no value for secret %s: give it on standard input, e.g. 'orchestrator secret set %s < FILE'", name, name))
	if a.stdin == nil {
		return "", noValue
	}
	var v string
	if f, ok := a.stdin.(*os.File); ok && progress.IsTerminal(f) {
		line, err := a.promptLine(ctx, f, fmt.Sprintf("value of secret %s: ", name))
		if err != nil {
			return "", err
		}
		v = line
	} else {
		b, err := io.ReadAll(io.LimitReader(a.stdin, store.MaxValueLen+3))
		if err != nil {
			return "", usageErr(fmt.Errorf("read the value of secret %s from standard input: %w", name, err))
		}
		v = string(b)
	}
	v = strings.TrimRight(v, "\r\n")
	switch {
	case v == "":
		return "", noValue
	case len(v) > store.MaxValueLen:
		return "", usageErr(fmt.Errorf("the value of secret %s is longer than %d bytes: store a shorter value (or a file: reference in the design)", name, store.MaxValueLen))
	}
	return v, nil
}

// promptLine reads one line from the terminal f, with echo off when stty
// can turn it off.
func (a *app) promptLine(ctx context.Context, f *os.File, prompt string) (string, error) {
	stty := func(arg string) error {
		c := exec.Command("stty", arg)
		c.Stdin = f
		return c.Run()
	}
	if err := stty("-echo"); err == nil {
		defer func() {
			_ = stty("echo")
			fmt.Fprintln(a.stderr)
		}()
	} else {
		prompt += "(it is shown as you type) "
	}
	fmt.Fprint(a.stderr, prompt)
	type result struct {
		line string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		line, err := bufio.NewReader(f).ReadString('\n')
		done <- result{line, err}
	}()
	select {
	case <-ctx.Done():
		return "", usageErr(fmt.Errorf("interrupted: nothing stored"))
	case r := <-done:
		if r.err != nil && !errors.Is(r.err, io.EOF) {
			return "", usageErr(fmt.Errorf("read from the terminal: %w", r.err))
		}
		return r.line, nil
	}
}

func (a *app) secretListCmd() *cobra.Command {
	return listCmd(a, "List the stored secrets' names and dates (never their values)", (*client.Client).Secrets, a.printSecrets)
}

func (a *app) printSecrets(infos []apitypes.SecretInfo) error {
	rows := make([][]string, 0, len(infos))
	for _, in := range infos {
		rows = append(rows, []string{in.Name, in.Created.Local().Format(time.DateTime), in.Updated.Local().Format(time.DateTime)})
	}
	return a.printTable("no secrets stored: store one with 'orchestrator secret set NAME < FILE'", "NAME\tCREATED\tUPDATED", rows)
}

func (a *app) secretDeleteCmd() *cobra.Command {
	var sf stateFlags
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a stored secret",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			name := argv[0]
			if err := store.ValidateName(name); err != nil {
				return usageErr(err)
			}
			return a.call(cmd.Context(), &sf, readState, "text", func(s *session, _ string) error {
				if err := s.c.DeleteSecret(cmd.Context(), name); err != nil {
					return apiErr(err)
				}
				a.log.Info().Str("secret", name).Msg("secret deleted")
				fmt.Fprintf(a.stdout, "secret %s deleted\n", name)
				return nil
			})
		},
	}
	sf.add(cmd)
	return cmd
}
