package main

import (
	"errors"
	"io/fs"
	"os"

	"github.com/slipway-dev/slipway/internal/localtrust"
	"github.com/slipway-dev/slipway/server"
)

// Local trust (issue 33 S2): before the CLI sends anything to the socket
// beside the state, it checks that the socket is ours (owned by this
// user, not writable by others, in directories no other user can write,
// see internal/localtrust); the state file (statestore/bolt) and the key
// files (secrets/store) are checked where they are opened.

// checkSocket says whether there is a socket at path to dial: false when
// there is none (or a file that is no socket nor link: nothing is sent to
// it); an error when there is one this user must not trust.
func checkSocket(path string) (bool, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if t := fi.Mode().Type(); t != fs.ModeSocket && t != fs.ModeSymlink {
		return false, nil
	}
	if err := localtrust.Check(path, server.SocketRule); err != nil {
		return false, err
	}
	return true, nil
}
