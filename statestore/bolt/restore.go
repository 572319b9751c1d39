package bolt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// ErrInUse is wrapped by Restore's error when another process holds the
// state file (a running serve).
var ErrInUse = errors.New("state database in use")

// StateInfo is what CheckState found in a state file.
type StateInfo struct {
	SchemaVersion int
	TxID          int
	Bytes         int64
}

// CheckState checks that the file at path is a whole Slipway state
// database: it opens as bbolt, is as long as its last transaction says,
// passes bbolt's consistency check of every page, and holds the buckets
// of a schema version this orchestrator knows. It opens the file
// read-only and never changes it.
func CheckState(path string) (StateInfo, error) {
	var info StateInfo
	fi, err := os.Stat(path)
	if err != nil {
		return info, fmt.Errorf("check state database: %w", err)
	}
	info.Bytes = fi.Size()
	if err := checkFile(path, Options{Verify: true, Timeout: DefaultTimeout}); err != nil {
		return info, err
	}
	db, err := openDB(path, &bbolt.Options{ReadOnly: true, Timeout: DefaultTimeout})
	if err != nil {
		return info, err
	}
	defer db.Close()
	var why error
	err = guard(path, func() error {
		return db.View(func(tx *bbolt.Tx) error {
			info.TxID = tx.ID()
			info.SchemaVersion, why = schemaOf(tx)
			if why == nil && info.SchemaVersion > SchemaVersion {
				why = fmt.Errorf("its schema version is %d, and this orchestrator knows 1 to %d: use a newer orchestrator", info.SchemaVersion, SchemaVersion)
			}
			for _, b := range [][]byte{bucketRevisions, bucketDesigns, bucketHistory} {
				if why == nil && tx.Bucket(b) == nil {
					why = fmt.Errorf("it has no %s bucket: it is not a Slipway state database", b)
				}
			}
			return nil
		})
	})
	if err == nil && why != nil {
		err = fmt.Errorf("state database %s: %w", path, why)
	}
	return info, err
}

// Restored is what Restore did.
type Restored struct {
	Manifest BackupManifest
	State    StateInfo
	// Previous is where the state file that was replaced is kept ("" when
	// there was none).
	Previous string
}

// Restore puts the database of the backup archive r in place of the state
// file at path. Before anything is replaced it reads the whole archive
// into a temporary file beside path (0600), checks it (ReadBackup, then
// CheckState), lets accept refuse its manifest (the caller's key check;
// nil: none), and takes the state file's lock, which a running serve
// holds (then the error wraps ErrInUse). It then keeps the old file as
// PATH.<time>.bak (a hard link) and renames the new one over PATH, and
// syncs the directory: PATH is the old file or the new one at every
// moment. On any error PATH is left as it was and the temporary file is
// removed.
func Restore(ctx context.Context, r io.Reader, path string, accept func(BackupManifest) error) (Restored, error) {
	var res Restored
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return res, fmt.Errorf("restore: %w", err)
	}
	tmp, err := stage(ctx, r, dir, &res)
	if tmp != "" {
		defer os.Remove(tmp) // nothing once renamed
	}
	if err != nil {
		return res, err
	}
	if accept != nil {
		if err := accept(res.Manifest); err != nil {
			return res, err
		}
	}
	unlock, err := lockState(path)
	if err != nil {
		return res, err
	}
	defer unlock()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, replace(tmp, path, &res)
}

// stage reads the archive into a temporary file in dir and checks it; the
// file's name is returned whenever one was made.
func stage(ctx context.Context, r io.Reader, dir string, res *Restored) (string, error) {
	f, err := os.CreateTemp(dir, ".slipway-restore-*") // 0600
	if err != nil {
		return "", fmt.Errorf("restore: a temporary file beside the state: %w", err)
	}
	m, err := ReadBackup(ctxReader{ctx, r}, f)
	res.Manifest = m
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return f.Name(), err
	}
	info, err := CheckState(f.Name())
	res.State = info
	var d *damagedError
	switch {
	case errors.As(err, &d):
		return f.Name(), notBackup("its database is damaged: " + d.why)
	case err != nil:
		return f.Name(), fmt.Errorf("%w: %w", ErrNotBackup, err)
	}
	if info.SchemaVersion != m.SchemaVersion || info.TxID != m.TxID {
		return f.Name(), notBackup(fmt.Sprintf("its database (schema %d, transaction %d) is not the one its manifest describes (schema %d, transaction %d)",
			info.SchemaVersion, info.TxID, m.SchemaVersion, m.TxID))
	}
	return f.Name(), nil
}

// replace keeps path as a .bak (when it exists) and renames tmp over it.
func replace(tmp, path string, res *Restored) error {
	if _, err := os.Lstat(path); err == nil {
		bak := path + "." + time.Now().UTC().Format("20060102T150405.000000000Z") + ".bak"
		if err := os.Link(path, bak); err != nil {
			return fmt.Errorf("restore: keep the old state as %s: %w (nothing was replaced)", bak, err)
		}
		res.Previous = bak
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("restore: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("restore: replace %s: %w (nothing was replaced)", path, err)
	}
	syncDir(filepath.Dir(path))
	return nil
}

// ctxReader fails its reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// inUse is the error for a state file another process holds.
func inUse(path string) error {
	return fmt.Errorf("%w: %s is locked by another process (a running `orchestrator serve` holds it): stop it, then restore again; nothing was replaced", ErrInUse, path)
}
