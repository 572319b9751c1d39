package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	secretstore "github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// TestCheckBackupKeys: a backup fits the keys a configuration would use
// when each key it recorded is present with the same fingerprint; a
// missing or other key is refused, naming the key and where it was
// looked for, and a key the backup did not record is not asked for.
func TestCheckBackupKeys(t *testing.T) {
	t.Setenv(secretstore.KeyEnv, "")
	os.Unsetenv(secretstore.KeyEnv) // t.Setenv restores it
	dir := t.TempDir()
	c := Config{State: filepath.Join(dir, "state.db"), KeyFile: filepath.Join(dir, "secret.key")}
	key, err := secretstore.LoadOrCreateKey(c.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	secret := bolt.BackupKey{Name: BackupKeySecret, Fingerprint: KeyFingerprint(key)}
	other := bolt.BackupKey{Name: BackupKeySecret, Fingerprint: KeyFingerprint([]byte("another key"))}
	intro := bolt.BackupKey{Name: BackupKeyIntrospection, Fingerprint: KeyFingerprint([]byte("introspection key"))}

	for _, tc := range []struct {
		keys []bolt.BackupKey
		want []string // "" : accepted
	}{
		{nil, nil},
		{[]bolt.BackupKey{secret}, nil},
		{[]bolt.BackupKey{other}, []string{"secret key " + other.Fingerprint, c.KeyFile, "does not fit"}},
		{[]bolt.BackupKey{secret, intro}, []string{"no introspection key at " + filepath.Join(dir, "introspection.key"), "introspectionKeyFile"}},
	} {
		err := c.CheckBackupKeys(bolt.BackupManifest{Keys: tc.keys})
		if (err == nil) != (tc.want == nil) {
			t.Errorf("keys %v: %v", tc.keys, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("keys %v: %v, want %q in it", tc.keys, err, w)
			}
		}
	}
}
