package bolt

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// maxBackupTrailer bounds what SaveBackup reads after the archive's
// database (its end-of-archive blocks and record padding: at most 10 KiB).
const maxBackupTrailer = 64 << 10

// SaveBackup writes the archive a server sent (GET
// /api/v1/admin/store/backup, Store.Backup's output) to file (0600, never
// over an existing file), checking it as it arrives (ReadBackup), and
// answers its manifest. Nothing is left at file when it is not a whole
// backup.
func SaveBackup(file string, r io.Reader) (BackupManifest, error) {
	dir := filepath.Dir(file)
	tmp, err := os.CreateTemp(dir, ".slipway-backup-*") // 0600
	if err != nil {
		return BackupManifest{}, fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(tmp.Name())
	tee := io.TeeReader(r, tmp)
	m, err := ReadBackup(tee, io.Discard)
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

// syncDir makes a directory's entries durable (best effort).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
