package bolt_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// ack is one write a storm writer made: its key and when its Write call
// began and returned without error.
type ack struct {
	key          string
	begun, acked time.Time
}

// storm runs writers writers, each putting records of 2 KiB (so the file
// grows) and appending to a log, until stop is closed or each has made
// maxEach writes; it returns each writer's acknowledged writes.
func storm(ctx context.Context, s *bolt.Store, writers, maxEach int, stop <-chan struct{}) func() [][]ack {
	out := make([][]ack, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < maxEach; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("w%02d-%06d", w, i)
				begun := time.Now()
				_, err := s.Write(ctx, statestore.Put("storm", key, stormValue(key)), statestore.Append("stormlog", []byte(key)))
				if err != nil {
					return // counted by the caller: fewer acks
				}
				out[w] = append(out[w], ack{key: key, begun: begun, acked: time.Now()})
			}
		}()
	}
	return func() [][]ack { wg.Wait(); return out }
}

func stormValue(key string) []byte {
	return bytes.Repeat([]byte(key+";"), 2048/(len(key)+1))
}

// waitAcks waits until the writers have made at least n writes or d
// passed (the acks are counted from the log, the store's own record).
func waitAcks(t *testing.T, s *bolt.Store, n uint64, d time.Duration) uint64 {
	t.Helper()
	end := time.Now().Add(d)
	for {
		seq, err := s.LastSeq(t.Context(), "stormlog")
		if err != nil {
			t.Fatal(err)
		}
		if seq >= n || time.Now().After(end) {
			return seq
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var testKeys = []bolt.BackupKey{{Name: "secret", Fingerprint: "sha256:" + hex.EncodeToString(make([]byte, 32))}}

// TestBackupDuringWriteStorm backs up while 16 writers write, restores
// the archive into a new path, and finds there every write acknowledged
// before the backup began (and none begun after it returned), in a
// database that passes bbolt's consistency check.
func TestBackupDuringWriteStorm(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := open(t, filepath.Join(dir, "state.db"), bolt.Options{})
	defer s.Close()
	stop := make(chan struct{})
	wait := storm(ctx, s, 16, 20000, stop)
	waitAcks(t, s, 2000, 20*time.Second)

	var archive bytes.Buffer
	begin := time.Now()
	m, err := s.Backup(ctx, &archive, testKeys)
	end := time.Now()
	// The storm goes on after the backup, so that writes begun after it
	// exist to be absent from it.
	during := waitAcks(t, s, 0, 0)
	waitAcks(t, s, during+500, 10*time.Second)
	close(stop)
	acks := wait()
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if m.Created.Before(begin) || m.Created.After(end) || m.Key("secret") != testKeys[0].Fingerprint {
		t.Fatalf("manifest %+v: want created within the call and the key's fingerprint", m)
	}

	restored := filepath.Join(t.TempDir(), "restored", "state.db")
	res, err := bolt.Restore(ctx, &archive, restored, nil)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if res.Previous != "" {
		t.Errorf("restore into a new path kept %q as the previous file", res.Previous)
	}
	if fi, err := os.Stat(restored); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("restored file: %v, mode %v; want 0600", err, fi.Mode())
	}
	if _, err := bolt.CheckState(restored); err != nil {
		t.Fatalf("the restored file is not consistent: %v", err)
	}
	checkAcks(t, restored, acks, begin, end)
}

// checkAcks opens the restored state and checks it holds every write
// acknowledged before begin, whole, and no write begun after end.
func checkAcks(t *testing.T, path string, acks [][]ack, begin, end time.Time) {
	t.Helper()
	ctx := t.Context()
	r := open(t, path, bolt.Options{Verify: true})
	defer r.Close()
	var before, after, total int
	for _, w := range acks {
		for _, a := range w {
			total++
			v, err := r.Get(ctx, "storm", a.key)
			switch {
			case a.acked.Before(begin):
				before++
				if err != nil || !bytes.Equal(v, stormValue(a.key)) {
					t.Fatalf("write %s acknowledged %v before the backup began is not in the restored state (%v)", a.key, begin.Sub(a.acked), err)
				}
			case a.begun.After(end):
				after++
				if err == nil {
					t.Fatalf("write %s begun %v after the backup returned is in the restored state", a.key, a.begun.Sub(end))
				}
			}
		}
	}
	if before < 1000 || after == 0 {
		t.Fatalf("the storm made %d writes, %d acknowledged before the backup and %d begun after it: want at least 1000 and 1", total, before, after)
	}
	n, err := r.LastSeq(ctx, "stormlog")
	if err != nil || n < uint64(before) {
		t.Fatalf("restored log has %d entries (%v), want at least %d", n, err, before)
	}
	t.Logf("%d writes by 16 writers; %d acknowledged before the backup, all restored; %d begun after it, none restored", total, before, after)
}

// backupOf is a backup archive of a small store and the store's path.
func backupOf(t *testing.T) ([]byte, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path, bolt.Options{})
	defer s.Close()
	for i := range 200 {
		key := fmt.Sprintf("k%04d", i)
		if _, err := s.Write(t.Context(), statestore.Put("storm", key, stormValue(key))); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if _, err := s.Backup(t.Context(), &b, testKeys); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), path
}

// splitArchive returns an archive's manifest and database.
func splitArchive(t *testing.T, archive []byte) (bolt.BackupManifest, []byte) {
	t.Helper()
	var db bytes.Buffer
	m, err := bolt.ReadBackup(bytes.NewReader(archive), &db)
	if err != nil {
		t.Fatal(err)
	}
	return m, db.Bytes()
}

// buildArchive writes an archive of a manifest and a database as given
// (the manifest's size and SHA-256 are set from db when fix is set).
func buildArchive(t *testing.T, m bolt.BackupManifest, db []byte, fix bool, extra ...string) []byte {
	t.Helper()
	if fix {
		sum := sha256.Sum256(db)
		m.Bytes, m.SHA256 = int64(len(db)), hex.EncodeToString(sum[:])
	}
	raw, _ := json.Marshal(m)
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	entries := append([]string{bolt.BackupManifestName, string(raw), bolt.BackupDBName, string(db)}, extra...)
	for i := 0; i < len(entries); i += 2 {
		if err := tw.WriteHeader(&tar.Header{Name: entries[i], Mode: 0o600, Size: int64(len(entries[i+1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, entries[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// restoreRefused restores archive over an existing state file and checks
// that it is refused with an error wrapping want, the state file is as it
// was, and nothing else is left in its directory.
func restoreRefused(t *testing.T, archive []byte, accept func(bolt.BackupManifest) error, want error) error {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	old := []byte("the state file before the restore")
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := bolt.Restore(t.Context(), bytes.NewReader(archive), path, accept)
	if !errors.Is(err, want) {
		t.Fatalf("Restore: %v; want an error wrapping %v", err, want)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, old) {
		t.Fatalf("the refused restore changed the state file")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("the refused restore left %d files in the directory, want the state file alone", len(ents))
	}
	return err
}

// TestRestoreRefusesDamagedArchive: an archive cut short, changed, with
// a database that fails bbolt's check (its SHA-256 matching), or with
// something more is refused before the state file is touched.
func TestRestoreRefusesDamagedArchive(t *testing.T) {
	archive, _ := backupOf(t)
	m, db := splitArchive(t, archive)
	flipped := bytes.Clone(archive)
	flipped[len(flipped)/2] ^= 0xff
	garbage := bytes.Clone(db)
	pageSize := os.Getpagesize()
	for i := 2 * pageSize; i < len(garbage) && i < 6*pageSize; i++ {
		garbage[i] = byte(i*7 + 3)
	}
	newer := m
	newer.Version = bolt.BackupVersion + 1
	for name, a := range map[string][]byte{
		"cut short":           archive[:len(archive)/2],
		"flipped byte":        flipped,
		"empty":               nil,
		"pages garbage":       buildArchive(t, m, garbage, true),
		"not a bbolt file":    buildArchive(t, m, bytes.Repeat([]byte("x"), len(db)), true),
		"entry after the db":  buildArchive(t, m, db, false, "keys/slipway.key", "AAAA"),
		"newer backup format": buildArchive(t, newer, db, false),
	} {
		t.Run(name, func(t *testing.T) {
			err := restoreRefused(t, a, nil, bolt.ErrNotBackup)
			t.Log(err)
		})
	}
}

// TestRestoreRefusals: a running serve (here this process, holding the
// state file as serve does) and the caller's key check refuse the
// restore before anything is replaced.
func TestRestoreRefusals(t *testing.T) {
	archive, _ := backupOf(t)
	t.Run("held", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		s := open(t, path, bolt.Options{})
		defer s.Close()
		before, _ := os.ReadFile(path)
		_, err := bolt.Restore(t.Context(), bytes.NewReader(archive), path, nil)
		if !errors.Is(err, bolt.ErrInUse) {
			t.Fatalf("Restore over a held state file: %v; want ErrInUse", err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Fatal("the refused restore changed the state file")
		}
		t.Log(err)
	})
	t.Run("key", func(t *testing.T) {
		errKey := errors.New("wrong key")
		var seen string
		_ = restoreRefused(t, archive, func(m bolt.BackupManifest) error { seen = m.Key("secret"); return errKey }, errKey)
		if seen != testKeys[0].Fingerprint {
			t.Fatalf("accept saw fingerprint %q, want %q", seen, testKeys[0].Fingerprint)
		}
	})
}

// TestRestoreKeepsPrevious: a restore over a state file keeps it as a
// .bak and puts the snapshot in its place.
func TestRestoreKeepsPrevious(t *testing.T) {
	archive, src := backupOf(t)
	_, db := splitArchive(t, archive)
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path, bolt.Options{})
	if _, err := s.Write(t.Context(), statestore.Put("other", "k", []byte("v"))); err != nil {
		t.Fatal(err)
	}
	s.Close()
	old, _ := os.ReadFile(path)
	res, err := bolt.Restore(t.Context(), bytes.NewReader(archive), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bak, _ := os.ReadFile(res.Previous); res.Previous == "" || !bytes.Equal(bak, old) {
		t.Fatalf("previous file %q does not hold the old state", res.Previous)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, db) {
		t.Fatalf("the restored state file is not the snapshot of %s", src)
	}
	r := open(t, path, bolt.Options{Verify: true})
	defer r.Close()
	if v, err := r.Get(t.Context(), "storm", "k0199"); err != nil || !bytes.Equal(v, stormValue("k0199")) {
		t.Fatalf("restored record: %q, %v", v, err)
	}
}

// TestRestoreOverDamaged: a damaged state file (what a restore is most
// often for) is replaced, and kept as the .bak.
func TestRestoreOverDamaged(t *testing.T) {
	archive, _ := backupOf(t)
	path := filepath.Join(t.TempDir(), "state.db")
	junk := bytes.Repeat([]byte("garbage!"), 4096)
	if err := os.WriteFile(path, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bolt.Open(path, bolt.Options{}); !errors.Is(err, bolt.ErrDamaged) {
		t.Fatalf("the junk file opens: %v", err)
	}
	res, err := bolt.Restore(t.Context(), bytes.NewReader(archive), path, nil)
	if err != nil {
		t.Fatalf("Restore over a damaged file: %v", err)
	}
	if bak, _ := os.ReadFile(res.Previous); !bytes.Equal(bak, junk) {
		t.Fatalf("the damaged file is not kept as %q", res.Previous)
	}
	if _, err := bolt.CheckState(path); err != nil {
		t.Fatal(err)
	}
}
