package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	secretstore "github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/server"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

func (a *app) storeRestoreCmd() *cobra.Command {
	var sf stateFlags
	cmd := &cobra.Command{
		Use:   "restore FILE --state PATH [--key-file PATH]",
		Short: "Replace a state file with a backup, after checking it",
		Long: `Restore checks the backup FILE before it replaces anything: it is a whole
archive (its database's size and SHA-256 are the manifest's), the database
opens as bbolt and passes bbolt's check of every page, holds Slipway's
buckets and a schema version this orchestrator knows, and the fingerprints
of the secret and introspection keys it was taken with are those of the
keys present for --state (--key-file or SLIPWAY_SECRET_KEY, the
configuration's introspectionKeyFile, else the files beside the state).
It refuses while a serve holds the state (stop it first). It then keeps the
old state file as PATH.<time>.bak and renames the checked copy over PATH
(0600); PATH is the old file or the new one at every moment.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := checkKeySource(cmd.Flags().Changed("key-file")); err != nil {
				return err
			}
			return a.storeRestore(cmd.Context(), &sf, argv[0])
		},
	}
	cmd.Flags().StringVar(&sf.cfgFile, "config", "", "engine configuration file (YAML; see docs/operations.md)")
	stateFlag(cmd, &sf.state)
	cmd.Flags().StringVar(&sf.keyFile, "key-file", "", "secret key file (default: "+secretstore.DefaultKeyFile+" next to the state database; env "+secretstore.KeyEnv+" holds the key instead)")
	return cmd
}

func (a *app) storeRestore(ctx context.Context, sf *stateFlags, file string) error {
	if c, err := a.remote(); err != nil || c != nil {
		return usageErr(errors.New("restore replaces a state file on this host: run it where the state is, without --server (and SLIPWAY_SERVER unset), with serve stopped"))
	}
	cfg, err := sf.config()
	if err != nil {
		return err
	}
	if server.ServeAnswers(cfg.State) {
		return usageErr(fmt.Errorf("restore: a serve answers on %s: it holds %s; stop it, then restore again (nothing was replaced)", server.LocalSocket(cfg.State), cfg.State))
	}
	f, err := os.Open(file)
	if err != nil {
		return usageErr(fmt.Errorf("restore: %w", err))
	}
	defer f.Close()
	res, err := bolt.Restore(ctx, f, cfg.State, cfg.CheckBackupKeys)
	if err != nil {
		if errors.Is(err, bolt.ErrNotBackup) {
			err = fmt.Errorf("restore: %s is %w (nothing was replaced)", file, err)
		}
		return usageErr(err)
	}
	m := res.Manifest
	fmt.Fprintf(a.stdout, "restored %s from %s: the state as of %s (transaction %d, %d bytes, schema %d), checked\n",
		cfg.State, file, m.Created.Format(time.RFC3339), m.TxID, m.Bytes, m.SchemaVersion)
	if res.Previous != "" {
		fmt.Fprintf(a.stdout, "the previous state file is kept as %s\n", res.Previous)
	}
	fmt.Fprintln(a.stdout, "tasks that ran since the backup are gone from the state: `orchestrator adopt NODE` takes MAAS's view of a machine, and the sweep reports machines the state does not know")
	return nil
}
