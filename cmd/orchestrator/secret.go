package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/internal/progress"
	"github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/statestore"
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

These commands open the state database directly: run them on the
orchestrator's host, while 'orchestrator serve' is stopped, or use the API.`,
		"set, list or delete")
	cmd.AddCommand(a.secretSetCmd(), a.secretListCmd(), a.secretDeleteCmd())
	return cmd
}

// keyFilePath is the secret key file: keyFile when given, otherwise
// store.DefaultKeyFile in the directory of the state database.
func keyFilePath(state, keyFile string) string {
	if keyFile != "" {
		return keyFile
	}
	return filepath.Join(filepath.Dir(state), store.DefaultKeyFile)
}

// secretKey returns the key of the secret store: from SLIPWAY_SECRET_KEY
// when set, otherwise from the key file (created if missing, which is
// said on stderr). keyFileSet says --key-file was given: together with
// SLIPWAY_SECRET_KEY that is ambiguous.
func (a *app) secretKey(state, keyFile string, keyFileSet bool) ([]byte, error) {
	if os.Getenv(store.KeyEnv) != "" {
		if keyFileSet {
			return nil, usageErr(fmt.Errorf("both --key-file and %s are given: use one of them (unset %s to use the key file)", store.KeyEnv, store.KeyEnv))
		}
		key, _, err := store.KeyFromEnv()
		if err != nil {
			return nil, usageErr(err)
		}
		return key, nil
	}
	path := keyFilePath(state, keyFile)
	_, statErr := os.Stat(path)
	key, err := store.LoadOrCreateKey(path)
	if err != nil {
		return nil, usageErr(err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		fmt.Fprintf(a.stderr, "created the secret key file %s: keep it, and a copy of it in a safe place; without it the stored secrets can't be decrypted\n", path)
	}
	return key, nil
}

func (a *app) secretSetCmd() *cobra.Command {
	var state, keyFile string
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
			value, err := a.readSecretValue(cmd.Context(), name)
			if err != nil {
				return err
			}
			key, err := a.secretKey(state, keyFile, cmd.Flags().Changed("key-file"))
			if err != nil {
				return err
			}
			return withStore(state, func(st statestore.Store) error {
				s, err := store.New(st, key)
				if err != nil {
					return usageErr(err)
				}
				if err := s.Put(cmd.Context(), name, value); err != nil {
					return usageErr(err)
				}
				a.log.Info().Str("secret", name).Msg("secret stored")
				fmt.Fprintf(a.stdout, "secret %s stored (refer to it in the design as secret:%s)\n", name, name)
				return nil
			})
		},
	}
	stateFlag(cmd, &state)
	cmd.Flags().StringVar(&keyFile, "key-file", "", "secret key file (default: "+store.DefaultKeyFile+" next to the state database; env "+store.KeyEnv+" holds the key instead)")
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
	return a.storeListCmd("List the stored secrets' names and dates (never their values)",
		func(ctx context.Context, st statestore.Store) (any, func() error, error) {
			s, err := store.New(st, nil) // names and dates need no key
			if err != nil {
				return nil, nil, err
			}
			infos, err := s.List(ctx)
			return nonNil(infos), func() error { return a.printSecrets(infos) }, err
		})
}

func (a *app) printSecrets(infos []store.Info) error {
	rows := make([][]string, 0, len(infos))
	for _, in := range infos {
		rows = append(rows, []string{in.Name, in.Created.Local().Format(time.DateTime), in.Updated.Local().Format(time.DateTime)})
	}
	return a.printTable("no secrets stored: store one with 'orchestrator secret set NAME < FILE'", "NAME\tCREATED\tUPDATED", rows)
}

func (a *app) secretDeleteCmd() *cobra.Command {
	var state string
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a stored secret",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			name := argv[0]
			if err := store.ValidateName(name); err != nil {
				return usageErr(err)
			}
			return withStore(state, func(st statestore.Store) error {
				s, err := store.New(st, nil) // deleting needs no key
				if err != nil {
					return usageErr(err)
				}
				if err := s.Delete(cmd.Context(), name); err != nil {
					return usageErr(err)
				}
				a.log.Info().Str("secret", name).Msg("secret deleted")
				fmt.Fprintf(a.stdout, "secret %s deleted\n", name)
				return nil
			})
		},
	}
	stateFlag(cmd, &state)
	return cmd
}
