package bolt

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// Online backups. Backup copies the database from one bbolt read
// transaction (Tx.WriteTo): the copy is the state as the last commit
// before the transaction began left it, whole, while writers go on
// committing. The copy is first spooled to an unlinked temporary file
// beside the state file, so the read transaction lasts as long as a local
// disk copy and not as long as a slow client takes to read the stream
// (bbolt cannot grow its memory map while a read transaction is open, so
// a long one can hold up a commit that grows the file).
//
// The archive is a tar of two entries, in this order:
//
//	manifest.json  BackupManifest: format, version, the snapshot's time and
//	               transaction, schema version, the database's size and
//	               SHA-256, and the fingerprints of the key files the
//	               caller names (never the keys)
//	slipway.db     the bbolt database
//
// ReadBackup reads and checks one; Restore puts one in place of a state
// file after checking it.

// Backup archive constants.
const (
	BackupFormat  = "slipway-state-backup"
	BackupVersion = 1
	// BackupManifestName and BackupDBName are the archive's entries.
	BackupManifestName = "manifest.json"
	BackupDBName       = "slipway.db"
	// maxManifestBytes bounds the manifest a reader accepts; maxBackupKeys
	// the key fingerprints in it.
	maxManifestBytes = 64 << 10
	maxBackupKeys    = 16
)

// BackupKey is the fingerprint of a key the state needs besides the
// database: Name says which (e.g. "secret", "introspection"), Fingerprint
// is "sha256:" and the hex SHA-256 of the key's bytes.
type BackupKey struct {
	Name        string `json:"name"`
	Fingerprint string `json:"fingerprint"`
}

// BackupManifest describes a backup archive's database.
type BackupManifest struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Created is when the snapshot's read transaction was about to begin:
	// every write acknowledged before it is in the database.
	Created       time.Time   `json:"created"`
	TxID          int         `json:"txid"`
	SchemaVersion int         `json:"schema_version"`
	Bytes         int64       `json:"db_bytes"`
	SHA256        string      `json:"db_sha256"`
	Keys          []BackupKey `json:"keys"`
}

var (
	fingerprintRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	keyNameRE     = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
)

// Backup writes a backup archive of the store to w, from one read
// transaction, with keys in its manifest. Writers go on meanwhile. Nothing
// is written to w when the snapshot fails (a spool file beside the state
// file could not be made, a damaged page); the manifest is returned.
func (s *Store) Backup(ctx context.Context, w io.Writer, keys []BackupKey) (BackupManifest, error) {
	m := BackupManifest{Format: BackupFormat, Version: BackupVersion, Keys: keys}
	if err := m.checkKeys(); err != nil {
		return m, err
	}
	spool, err := os.CreateTemp(filepath.Dir(s.path), ".slipway-backup-*")
	if err != nil {
		return m, fmt.Errorf("backup of %s: a spool file beside it: %w", s.path, err)
	}
	_ = os.Remove(spool.Name()) // unlinked: gone with the process, whatever happens
	defer spool.Close()
	if err := s.snapshotTo(ctx, spool, &m); err != nil {
		return m, err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return m, fmt.Errorf("backup of %s: %w", s.path, err)
	}
	return m, writeArchive(ctx, w, m, spool)
}

// snapshotTo copies the database into f from one read transaction and
// fills m's snapshot fields.
func (s *Store) snapshotTo(ctx context.Context, f io.Writer, m *BackupManifest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h := sha256.New()
	m.Created = time.Now().UTC()
	err := s.view(func(tx *bbolt.Tx) error {
		m.TxID = tx.ID()
		v, err := schemaOf(tx)
		if err != nil {
			return err
		}
		m.SchemaVersion = v
		m.Bytes, err = tx.WriteTo(ctxWriter{ctx, io.MultiWriter(f, h)})
		return err
	})
	if err != nil {
		return fmt.Errorf("backup of %s: %w", s.path, err)
	}
	m.SHA256 = hex.EncodeToString(h.Sum(nil))
	return nil
}

// writeArchive writes the manifest and then the db's m.Bytes bytes as a tar.
func writeArchive(ctx context.Context, w io.Writer, m BackupManifest, db io.Reader) error {
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tw := tar.NewWriter(ctxWriter{ctx, w})
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: BackupManifestName, Mode: 0o600, Size: int64(len(raw)), ModTime: m.Created, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("backup: write the archive: %w", err)
	}
	if _, err := tw.Write(raw); err != nil {
		return fmt.Errorf("backup: write the archive: %w", err)
	}
	hdr = &tar.Header{Typeflag: tar.TypeReg, Name: BackupDBName, Mode: 0o600, Size: m.Bytes, ModTime: m.Created, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("backup: write the archive: %w", err)
	}
	if _, err := io.CopyN(tw, db, m.Bytes); err != nil {
		return fmt.Errorf("backup: write the archive: %w", err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("backup: write the archive: %w", err)
	}
	return nil
}

// ctxWriter fails its writes once ctx is done.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// schemaOf is the schema version tx's meta bucket records.
func schemaOf(tx *bbolt.Tx) (int, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return 0, errors.New("it has no meta bucket: it is not a Slipway state database")
	}
	v := meta.Get(keySchema)
	n, err := strconv.Atoi(string(v))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("its schema version %q is not valid", v)
	}
	return n, nil
}

// checkKeys checks the manifest's key fingerprints' names and form.
func (m *BackupManifest) checkKeys() error {
	if len(m.Keys) > maxBackupKeys {
		return fmt.Errorf("backup: %d key fingerprints, at most %d", len(m.Keys), maxBackupKeys)
	}
	seen := map[string]bool{}
	for _, k := range m.Keys {
		if !keyNameRE.MatchString(k.Name) || seen[k.Name] {
			return fmt.Errorf("backup: key name %q is not valid or repeated", k.Name)
		}
		if !fingerprintRE.MatchString(k.Fingerprint) {
			return fmt.Errorf("backup: key %s: the fingerprint is not sha256:<64 hex digits>", k.Name)
		}
		seen[k.Name] = true
	}
	return nil
}

// check checks a manifest read from an archive.
func (m *BackupManifest) check() error {
	switch {
	case m.Format != BackupFormat:
		return fmt.Errorf("its manifest's format is %q, not %q", m.Format, BackupFormat)
	case m.Version > BackupVersion:
		return fmt.Errorf("it is a version %d backup, but this orchestrator reads version %d: use a newer orchestrator", m.Version, BackupVersion)
	case m.Version < 1:
		return fmt.Errorf("its manifest's version %d is not valid", m.Version)
	case m.SchemaVersion < 1 || m.SchemaVersion > SchemaVersion:
		return fmt.Errorf("its database has schema version %d, and this orchestrator knows 1 to %d", m.SchemaVersion, SchemaVersion)
	case m.Bytes <= 0:
		return fmt.Errorf("its manifest gives the database's size as %d", m.Bytes)
	case len(m.SHA256) != sha256.Size*2:
		return errors.New("its manifest has no valid SHA-256 of the database")
	}
	return m.checkKeys()
}

// Key is the fingerprint recorded for the key named name ("" when none).
func (m BackupManifest) Key(name string) string {
	for _, k := range m.Keys {
		if k.Name == name {
			return k.Fingerprint
		}
	}
	return ""
}

// ReadBackup reads a backup archive from r, writing its database to db,
// and checks it: a manifest this orchestrator reads first, then a
// database of the size and SHA-256 the manifest gives, then nothing. The
// database's pages are not checked here (CheckState does that).
func ReadBackup(r io.Reader, db io.Writer) (BackupManifest, error) {
	var m BackupManifest
	tr := tar.NewReader(r)
	if err := nextEntry(tr, BackupManifestName, maxManifestBytes); err != nil {
		return m, err
	}
	dec := json.NewDecoder(io.LimitReader(tr, maxManifestBytes))
	if err := dec.Decode(&m); err != nil {
		return m, notBackup("its manifest is not valid JSON: " + err.Error())
	}
	if err := m.check(); err != nil {
		return m, notBackup(err.Error())
	}
	if err := nextEntry(tr, BackupDBName, -1); err != nil {
		return m, err
	}
	h := sha256.New()
	if n, err := io.Copy(io.MultiWriter(db, h), io.LimitReader(tr, m.Bytes+1)); err != nil {
		return m, notBackup("reading its database: " + err.Error())
	} else if n != m.Bytes {
		return m, notBackup(fmt.Sprintf("its database is %d bytes long, but the manifest says %d: it was cut short or changed", n, m.Bytes))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != m.SHA256 {
		return m, notBackup(fmt.Sprintf("its database's SHA-256 is %s, but the manifest says %s: it was damaged or changed", short(got), short(m.SHA256)))
	}
	if _, err := tr.Next(); !errors.Is(err, io.EOF) {
		return m, notBackup("something follows the database in it")
	}
	return m, nil
}

// nextEntry reads the next tar header, which must be a regular file named
// name (of at most limit bytes, when limit >= 0).
func nextEntry(tr *tar.Reader, name string, limit int64) error {
	hdr, err := tr.Next()
	if err != nil {
		return notBackup(fmt.Sprintf("reading the tar entry %s: %v", name, err))
	}
	if hdr.Name != name || hdr.Typeflag != tar.TypeReg {
		return notBackup(fmt.Sprintf("its entry %q is not the file %s expected there", hdr.Name, name))
	}
	if limit >= 0 && hdr.Size > limit {
		return notBackup(fmt.Sprintf("its %s is %d bytes, over %d", name, hdr.Size, limit))
	}
	return nil
}

// ErrNotBackup is wrapped by the errors for an archive that is not a
// whole backup this orchestrator reads.
var ErrNotBackup = errors.New("not a valid backup")

func notBackup(why string) error {
	return fmt.Errorf("%w: %s", ErrNotBackup, why)
}

func short(sum string) string { return sum[:min(16, len(sum))] }
