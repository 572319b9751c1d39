package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/statestore/bolt"
)

// Online backup and checked restore of a bbolt state (docs/operations.md,
// "Backing up the state"). `store backup` is an API call like every other
// command (GET /api/v1/admin/store/backup: --server, the local serve's
// socket, or the API in process); `store restore` works on a state file
// no process holds, as `store migrate` does.

func (a *app) storeBackupCmd() *cobra.Command {
	var sf stateFlags
	cmd := &cobra.Command{
		Use:   "backup FILE [--state PATH | --server URL]",
		Short: "Take a consistent backup of the state while serve runs",
		Long: `Backup asks the server (--server, else the serve on the socket beside
--state, else the API in this process) for an online backup of its bbolt
state: a consistent snapshot taken from one read transaction while writers
go on, as a tar of manifest.json (the snapshot's time, size, SHA-256 and the
SHA-256 fingerprints of the secret and introspection keys, never the keys)
and the database. FILE is written 0600 and must not exist; the archive is
checked as it arrives. Keep the key files with it, apart: they are not in
the backup. Restore with 'orchestrator store restore FILE'. Admin only.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.storeBackup(cmd.Context(), &sf, argv[0])
		},
	}
	sf.add(cmd)
	return cmd
}

func (a *app) storeBackup(ctx context.Context, sf *stateFlags, file string) error {
	if _, err := os.Lstat(file); err == nil {
		return usageErr(fmt.Errorf("backup: %s exists: give a new file name", file))
	}
	return a.call(ctx, sf, readState, "text", func(s *session, _ string) error {
		body, err := s.c.StoreBackup(ctx)
		if err != nil {
			return apiErr(err)
		}
		defer body.Close()
		m, err := bolt.SaveBackup(file, body)
		if err != nil {
			return usageErr(err)
		}
		fmt.Fprintf(a.stdout, "backed up the state as of %s (transaction %d, %d bytes, schema %d) to %s\n",
			m.Created.Format(time.RFC3339), m.TxID, m.Bytes, m.SchemaVersion, file)
		for _, k := range m.Keys {
			fmt.Fprintf(a.stdout, "  %s key: %s\n", k.Name, k.Fingerprint)
		}
		fmt.Fprintln(a.stdout, "keep the key files with it, apart (they are not in the backup): a restore needs the keys these fingerprints name")
		return nil
	})
}
