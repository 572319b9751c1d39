package bolt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// ErrDamaged is wrapped by the errors for a state database that can't be
// read: cut short (a full disk, an interrupted copy), or with pages that
// make no sense.
var ErrDamaged = errors.New("state database damaged")

type damagedError struct{ msg, why string }

func (e *damagedError) Error() string        { return e.msg }
func (e *damagedError) Is(target error) bool { return target == ErrDamaged }

// damaged is the error for the damaged file path; why says what is wrong.
func damaged(path, why string) error {
	return &damagedError{why: why, msg: fmt.Sprintf("state database %s is damaged (%s): Slipway can't read it. "+
		"Stop every orchestrator process that uses it and restore the last backup with `orchestrator store restore FILE --state PATH` "+
		"(it keeps the damaged file as a .bak; docs/operations.md, \"Restoring the state\"); without a backup, a new database starts empty: "+
		"apply the design, set the secrets and adopt the deployed nodes again", path, why)}
}

// checkFile checks an existing state file before it is opened for
// writing, which would panic on some damage: it is not empty, and it is
// as long as its last transaction says (bbolt reads pages up to there);
// with opts.Verify, every page is checked too. It opens the file
// read-only, so it waits for the lock like Open.
func checkFile(path string, opts Options) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open state database: %w", err)
	}
	if fi.Size() == 0 {
		return damaged(path, "it is empty")
	}
	db, err := openDB(path, &bbolt.Options{ReadOnly: true, Timeout: opts.Timeout})
	if err != nil {
		return err
	}
	defer db.Close()
	var why string
	err = guard(path, func() error {
		return db.View(func(tx *bbolt.Tx) error {
			if need := tx.Size(); need > fi.Size() {
				why = fmt.Sprintf("it is %d bytes long, but its last transaction reaches byte %d: it was cut short", fi.Size(), need)
			} else if opts.Verify {
				why = verify(tx)
			}
			return nil
		})
	})
	if err == nil && why != "" {
		err = damaged(path, why)
	}
	return err
}

// verify runs bbolt's consistency check and describes what it found
// ("" when nothing).
func verify(tx *bbolt.Tx) string {
	var first error
	n := 0
	for err := range tx.Check() {
		if n++; first == nil {
			first = err
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d inconsistencies, the first: %v", n, first)
}

// openDB is bbolt.Open with its panics and errors on a damaged file
// turned into ErrDamaged, and the file closed (its lock released) then.
func openDB(path string, o *bbolt.Options) (db *bbolt.DB, err error) {
	var f *os.File
	o.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		var err error
		f, err = openState(name, flag, perm)
		return f, err
	}
	err = guard(path, func() error {
		db, err = bbolt.Open(path, 0o600, o)
		return err
	})
	switch {
	case errors.Is(err, ErrDamaged):
		if f != nil {
			f.Close()
		}
		return nil, err
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("open state database %s: file is locked: another orchestrator process (e.g. `orchestrator serve`) probably holds it; stop that process or use --state with another path: %w", path, err)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch),
		err != nil && strings.Contains(err.Error(), "file size too small"):
		return nil, damaged(path, err.Error())
	case err != nil:
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	return db, nil
}

// guard runs fn, turning a panic raised in bbolt's code (its checks of
// the pages it reads, or a fault reading the mapped file) into an error
// wrapping ErrDamaged. Other panics go on.
func guard(path string, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if !raisedInBBolt() {
				panic(p)
			}
			err = damaged(path, fmt.Sprint(p))
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return fn()
}

// raisedInBBolt reports whether the panic being recovered (called from
// the deferred function) was raised in bbolt's code.
func raisedInBBolt() bool {
	pc := make([]uintptr, 32)
	frames := runtime.CallersFrames(pc[:runtime.Callers(3, pc)])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "runtime.") {
			return strings.HasPrefix(f.Function, "go.etcd.io/bbolt")
		}
		if !more {
			return false
		}
	}
}

// view is db.View, guarded.
func (s *Store) view(fn func(*bbolt.Tx) error) error {
	return guard(s.path, func() error { return s.db.View(fn) })
}

// update is db.Update, guarded, with no snapshot shared meanwhile
// (snapshot.go).
func (s *Store) update(fn func(*bbolt.Tx) error) error {
	s.beginWrite()
	defer s.endWrite()
	return guard(s.path, func() error { return s.db.Update(fn) })
}
