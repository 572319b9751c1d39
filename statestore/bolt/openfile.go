package bolt

import (
	"errors"
	"io/fs"
	"os"

	"github.com/slipway-dev/slipway/internal/localtrust"
)

// openState is how bbolt opens the state file (its Options.OpenFile).
// Open checks the path before, but a directory others can write (a
// sticky /tmp) leaves a moment between that check and the open when
// another user can create a file at the path; bbolt would then write the
// whole database into that user's file. So a file to be created is
// created here, exclusively (O_EXCL) and not through a symbolic link
// (O_NOFOLLOW), mode 0600; a file that is there already (or that appeared
// since) is opened without following a link and checked by the opened
// descriptor itself (fstat): owned by the effective user, a regular file
// no one else can write. In a sticky directory no one else can then
// replace our own file.
func openState(name string, flag int, perm os.FileMode) (*os.File, error) {
	if flag&os.O_CREATE != 0 {
		f, err := os.OpenFile(name, flag|os.O_EXCL|noFollow, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	f, err := os.OpenFile(name, flag&^os.O_CREATE|noFollow, perm)
	if err != nil {
		return nil, err
	}
	if err := localtrust.CheckOpened(f, name, StateRule); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
