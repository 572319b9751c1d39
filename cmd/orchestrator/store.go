package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/server"
	"github.com/slipway-dev/slipway/statestore/bolt"
	etcdstore "github.com/slipway-dev/slipway/statestore/etcdstore"
	"github.com/slipway-dev/slipway/statestore/migrate"
)

// storeCmd: `store migrate`, copying a state store into another; `store
// backup` and `store restore` (storebackup.go, storerestore.go).
func (a *app) storeCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "store", Short: "The state store: back it up, restore it, migrate it to another backend"}
	cmd.AddCommand(a.storeMigrateCmd(), a.storeBackupCmd(), a.storeRestoreCmd()) // storebackup.go, storerestore.go
	return cmd
}

func (a *app) storeMigrateCmd() *cobra.Command {
	var from string
	var to server.HAConfig
	cmd := &cobra.Command{
		Use:   "migrate --from bolt:FILE --to etcd://HOST:PORT[,HOST:PORT...] [--etcd-prefix P]",
		Short: "Copy a bbolt state store into an empty etcd one and verify the copy",
		Long: `Migrate copies everything a bbolt state file holds (design revisions and
the apply history with its times, every collection's records, every log's
entries under their own sequence numbers) into etcd under --etcd-prefix,
which must hold nothing, then checks that etcd holds the same names,
record counts, last sequence numbers and history. Stop serve first (the
file is locked while it runs). Nothing is deleted from the file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.storeMigrate(cmd.Context(), from, to)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the source: bolt:FILE (a state file)")
	cmd.Flags().StringVar(&to.Store, "to", "", "the target: etcd://HOST:PORT[,HOST:PORT...] (https with --etcd-ca or --etcd-cert)")
	cmd.Flags().StringVar(&to.EtcdPrefix, "etcd-prefix", etcdstore.DefaultPrefix, "the key prefix the store keeps in etcd")
	cmd.Flags().StringVar(&to.EtcdCA, "etcd-ca", "", "CA certificate (PEM) of etcd's client TLS")
	cmd.Flags().StringVar(&to.EtcdCert, "etcd-cert", "", "client certificate (PEM) presented to etcd")
	cmd.Flags().StringVar(&to.EtcdKey, "etcd-key", "", "client key (PEM) of --etcd-cert")
	return cmd
}

func (a *app) storeMigrate(ctx context.Context, from string, to server.HAConfig) error {
	file, ok := strings.CutPrefix(from, "bolt:")
	if !ok || file == "" {
		return usageErr(errors.New("--from bolt:FILE: give the state file to copy"))
	}
	ccfg, err := server.Config{HAConfig: to}.EtcdClientConfig()
	if err != nil {
		return usageErr(fmt.Errorf("--to: %w", err))
	}
	src, err := bolt.Open(file, bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return usageErr(err)
	}
	defer src.Close()
	dst, err := etcdstore.Open(ccfg, to.EtcdPrefix)
	if err != nil {
		return usageErr(err)
	}
	defer dst.Close()
	rep, err := migrate.Copy(ctx, src, dst, func(s string) { fmt.Fprintln(a.stderr, "copied", s) })
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "migrated %s to %s%s and verified: %d revisions, %d applies, %d records in %d collections, %d log entries in %d logs\n",
		file, to.Store, to.EtcdPrefix, rep.Revisions, rep.Applies, rep.Records, rep.Collections, rep.LogEntries, rep.Logs)
	return err
}
