package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	secretstore "github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// Online backup and checked restore of a bbolt state (docs/operations.md,
// "Backing up the state"). `store backup` is an API call like every other
// command (GET /api/v1/admin/store/backup: --server, the local serve's
// socket, or the API in process); `store restore` works on a state file
// no process holds, as `store migrate` does.

// Names of the keys whose fingerprints a backup records.
const (
	backupKeySecret        = "secret"
	backupKeyIntrospection = "introspection"
)

// maxBackupTrailer bounds what is read after the archive's database (its
// end-of-archive blocks and record padding: at most 10 KiB).
const maxBackupTrailer = 64 << 10

// keyFingerprint is "sha256:" and the hex SHA-256 of a key's bytes (the
// base64 of the key file decoded): `base64 -d slipway.key | sha256sum`.
func keyFingerprint(key []byte) string {
	sum := sha256.Sum256(key)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// presentKey is the fingerprint of the key named name that c would use,
// and where it is ("" and the path it was looked for at when there is
// none). It never creates a key.
func (c engineConfig) presentKey(name string) (fp, where string, err error) {
	var path string
	switch name {
	case backupKeySecret:
		if key, ok, err := secretstore.KeyFromEnv(); ok || err != nil {
			if err != nil {
				return "", secretstore.KeyEnv, err
			}
			return keyFingerprint(key), secretstore.KeyEnv, nil
		}
		path = c.keyFile()
	case backupKeyIntrospection:
		path = c.introspectionKeyFile()
	default:
		return "", "", fmt.Errorf("unknown key %q", name)
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return "", path, nil
	}
	key, err := secretstore.LoadOrCreateKey(path) // it exists: read and checked (0600), never created
	if err != nil {
		return "", path, err
	}
	return keyFingerprint(key), path, nil
}

// backupKeys are the fingerprints of the keys c's state uses.
func (c engineConfig) backupKeys() ([]bolt.BackupKey, error) {
	var keys []bolt.BackupKey
	for _, name := range []string{backupKeySecret, backupKeyIntrospection} {
		fp, where, err := c.presentKey(name)
		if err != nil {
			return nil, fmt.Errorf("backup: the %s key %s: %w", name, where, err)
		}
		if fp != "" {
			keys = append(keys, bolt.BackupKey{Name: name, Fingerprint: fp})
		}
	}
	return keys, nil
}

// boltBackup is the API's online backup of a bbolt state (api.StoreBackup),
// with the fingerprints of the keys as they are at each backup.
type boltBackup struct {
	store *bolt.Store
	cfg   engineConfig
}

func (b boltBackup) Backup(ctx context.Context, w io.Writer) error {
	keys, err := b.cfg.backupKeys()
	if err != nil {
		return err
	}
	_, err = b.store.Backup(ctx, w, keys)
	return err
}

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
