package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	secretstore "github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// Online backup of a bbolt state through the API (GET
// /api/v1/admin/store/backup): the database and the fingerprints of the
// keys it needs; `orchestrator store restore` checks them (PresentKey).

// Names of the keys whose fingerprints a backup records.
const (
	BackupKeySecret        = "secret"
	BackupKeyIntrospection = "introspection"
)

// KeyFingerprint is "sha256:" and the hex SHA-256 of a key's bytes (the
// base64 of the key file decoded): `base64 -d slipway.key | sha256sum`.
func KeyFingerprint(key []byte) string {
	sum := sha256.Sum256(key)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PresentKey is the fingerprint of the key named name that c would use,
// and where it is ("" and the path it was looked for at when there is
// none). It never creates a key.
func (c Config) PresentKey(name string) (fp, where string, err error) {
	var path string
	switch name {
	case BackupKeySecret:
		if key, ok, err := secretstore.KeyFromEnv(); ok || err != nil {
			if err != nil {
				return "", secretstore.KeyEnv, err
			}
			return KeyFingerprint(key), secretstore.KeyEnv, nil
		}
		path = c.keyFile()
	case BackupKeyIntrospection:
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
	return KeyFingerprint(key), path, nil
}

// BackupKeys are the fingerprints of the keys c's state uses.
func (c Config) BackupKeys() ([]bolt.BackupKey, error) {
	var keys []bolt.BackupKey
	for _, name := range []string{BackupKeySecret, BackupKeyIntrospection} {
		fp, where, err := c.PresentKey(name)
		if err != nil {
			return nil, fmt.Errorf("backup: the %s key %s: %w", name, where, err)
		}
		if fp != "" {
			keys = append(keys, bolt.BackupKey{Name: name, Fingerprint: fp})
		}
	}
	return keys, nil
}

// CheckBackupKeys refuses a backup whose keys are not the ones present
// for c's state (`orchestrator store restore`): a secret or introspection key recorded in the manifest
// must be there, with the same fingerprint.
func (c Config) CheckBackupKeys(m bolt.BackupManifest) error {
	for _, name := range []string{BackupKeySecret, BackupKeyIntrospection} {
		want := m.Key(name)
		if want == "" {
			continue // taken without that key: any (or none) fits
		}
		have, where, err := c.PresentKey(name)
		switch {
		case err != nil:
			return fmt.Errorf("restore: the %s key %s: %w (nothing was replaced)", name, where, err)
		case have == "":
			return fmt.Errorf("restore: the backup was taken with the %s key %s, and there is no %s key at %s: "+
				"put the key file kept with this backup there (%s), then restore again; nothing was replaced", name, want, name, where, keyHint(name))
		case have != want:
			return fmt.Errorf("restore: the backup was taken with the %s key %s, but the key at %s is %s and does not fit it: "+
				"put the key file kept with this backup there (%s), or restore a backup taken with this key; nothing was replaced", name, want, where, have, keyHint(name))
		}
	}
	return nil
}

// keyHint says how a key's location is chosen.
func keyHint(name string) string {
	if name == BackupKeySecret {
		return "or give it with --key-file; check a file with `base64 -d FILE | sha256sum`"
	}
	return "introspectionKeyFile in --config, else introspection.key beside the state; check a file with `base64 -d FILE | sha256sum`"
}

// boltBackup is the API's online backup of a bbolt state (api.StoreBackup),
// with the fingerprints of the keys as they are at each backup.
type boltBackup struct {
	store *bolt.Store
	cfg   Config
}

func (b boltBackup) Backup(ctx context.Context, w io.Writer) error {
	keys, err := b.cfg.BackupKeys()
	if err != nil {
		return err
	}
	_, err = b.store.Backup(ctx, w, keys)
	return err
}
