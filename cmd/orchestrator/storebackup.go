package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/statestore/bolt"
)

// Online backup and checked restore of a bbolt state (docs/operations.md,
// "Backing up the state"). `store backup` is an API call like every other
// command (GET /api/v1/admin/store/backup: --server, the local serve's
// socket, or the API in process); `store restore` works on a state file
// no process holds, as `store migrate` does.

// maxBackupTrailer bounds what is read after the archive's database (its
// end-of-archive blocks and record padding: at most 10 KiB).
const maxBackupTrailer = 64 << 10

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
		m, err := writeBackupFile(file, body)
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

// writeBackupFile writes the archive from r to file (0600, never over an
// existing file), checking it as it arrives; nothing is left at file when
// it is not a whole backup.
func writeBackupFile(file string, r io.Reader) (bolt.BackupManifest, error) {
	dir := filepath.Dir(file)
	tmp, err := os.CreateTemp(dir, ".slipway-backup-*") // 0600
	if err != nil {
		return bolt.BackupManifest{}, fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(tmp.Name())
	tee := io.TeeReader(r, tmp)
	m, err := bolt.ReadBackup(tee, io.Discard)
	if err == nil {
		_, err = io.Copy(io.Discard, io.LimitReader(tee, maxBackupTrailer)) // the tar's end blocks, written too
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return m, fmt.Errorf("backup: the archive the server sent: %w (nothing was written to %s)", err, file)
	}
	if err := os.Link(tmp.Name(), file); err != nil { // never replaces a file
		return m, fmt.Errorf("backup: %w", err)
	}
	syncDir(dir)
	return m, nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
