package bolt_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// realState writes a state database holding revisions, records and logs
// (some hundreds of KiB, many pages) and returns its path.
func realState(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path, bolt.Options{})
	for i := 1; i <= 3; i++ {
		if _, err := s.PutRevision(ctx, rev(string(design(40000*i)), i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 {
		var ops []statestore.Op
		for j := range 25 {
			ops = append(ops, statestore.Put("nodes", fmt.Sprintf("node-%04d", i*25+j), []byte(strings.Repeat("n", 300))),
				statestore.Append("events", []byte(fmt.Sprintf(`{"n":%d}`, i*25+j))))
		}
		mustWrite(t, s, ops...)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// openAndRead opens path and reads everything; a panic fails the test
// instead of crashing it.
func openAndRead(t *testing.T, path string) (err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%s: panic: %v", path, p)
		}
	}()
	s, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	ctx := t.Context()
	if _, err := s.History(ctx); err != nil {
		return err
	}
	if _, err := s.Current(ctx); err != nil {
		return err
	}
	if _, err := s.List(ctx, "nodes", ""); err != nil {
		return err
	}
	_, err = s.ReadLog(ctx, "events", 0, 0)
	return err
}

// TestTruncatedDatabase: a state database cut short at any of several
// offsets never panics: Open says the file is damaged, names it and says
// to restore the backup; a cut that only loses unused space at the end
// opens and reads whole.
func TestTruncatedDatabase(t *testing.T) {
	src := realState(t)
	full, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(full))
	dir := t.TempDir()
	damagedSeen := 0
	for _, off := range []int64{0, 100, 4095, 4096, 8192, 12288, 16384, 20000, 32768, n / 4, n / 3, n / 2, 2 * n / 3, n - 8192, n - 4096, n - 1} {
		p := filepath.Join(dir, fmt.Sprintf("cut-%d.db", off))
		if err := os.WriteFile(p, full[:off], 0o600); err != nil {
			t.Fatal(err)
		}
		err := openAndRead(t, p)
		if err == nil {
			continue
		}
		damagedSeen++
		msg := err.Error()
		if !errors.Is(err, bolt.ErrDamaged) || !strings.Contains(msg, p) || !strings.Contains(msg, "damaged") || !strings.Contains(msg, "backup") {
			t.Errorf("cut at %d: %v: want ErrDamaged naming the file and the backup", off, err)
		}
		// The damaged file is left as it was, and not locked.
		if b, _ := os.ReadFile(p); int64(len(b)) != off {
			t.Errorf("cut at %d: the file is %d bytes long now", off, len(b))
		}
	}
	if damagedSeen < 10 {
		t.Errorf("only %d cuts were found damaged", damagedSeen)
	}
	// The whole file still opens.
	if err := openAndRead(t, src); err != nil {
		t.Fatal(err)
	}
}

// TestGarbagePages: pages overwritten with garbage make Open or a read
// fail with ErrDamaged, never panic or crash.
func TestGarbagePages(t *testing.T) {
	src := realState(t)
	full, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, page := range []int{0, 1, 2, 3, 4, 5, 8, 16, len(full)/4096 - 1} {
		b := append([]byte{}, full...)
		for i := page * 4096; i < (page+1)*4096 && i < len(b); i++ {
			b[i] = byte(0xA5 ^ i)
		}
		p := filepath.Join(dir, fmt.Sprintf("garbage-%d.db", page))
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := openAndRead(t, p); err != nil && !errors.Is(err, bolt.ErrDamaged) {
			t.Errorf("page %d: %v: want ErrDamaged", page, err)
		}
		// Verify finds a used page's damage at Open.
		s, err := bolt.Open(p, bolt.Options{Verify: true})
		if page >= 2 && page <= 16 && (err == nil || !errors.Is(err, bolt.ErrDamaged) || !strings.Contains(err.Error(), "backup")) {
			t.Errorf("page %d, Verify: %v: want ErrDamaged", page, err)
		}
		if err == nil {
			s.Close()
		}
	}
	s, err := bolt.Open(src, bolt.Options{Verify: true})
	if err != nil {
		t.Fatalf("Verify of a sound file: %v", err)
	}
	s.Close()
}
