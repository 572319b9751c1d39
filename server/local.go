package server

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/internal/localtrust"
)

// The local socket: besides its TCP listener, the control API answers on
// a Unix socket beside the state database, where the caller's OS user is
// an admin without a token. Local trust (issue 33 S2): the socket is made
// only in a directory no other user can write, and a CLI checks it before
// it sends anything to it (SocketRule).

// LocalTrustFix is the next step an error of local trust names.
const LocalTrustFix = "use a --state in a directory only you can write (mkdir -m 700 DIR; --state DIR/slipway.db)"

// SocketRule is what a local socket and its directories must be.
var SocketRule = localtrust.Rule{What: "local socket", Type: fs.ModeSocket, Deny: 0o022, Fix: LocalTrustFix}

// LocalSocket is where serve listens for local clients: beside the state
// database.
func LocalSocket(state string) string { return state + ".sock" }

// ListenLocal is api.ListenLocal in a directory no other user can write
// (or a sticky one): a socket there can't be replaced by another's.
func ListenLocal(path string) (*net.UnixListener, error) {
	if err := localtrust.CheckDir(filepath.Dir(path), SocketRule); err != nil {
		return nil, err
	}
	return api.ListenLocal(path)
}

// LocalName names the caller of the local socket as a local task's
// requester: cli:<OS user>; the account of another uid (root) by lookup.
func LocalName(uid int) string {
	if uid == os.Getuid() {
		return LocalRequester()
	}
	lookup := func() (*user.User, error) { return user.LookupId(strconv.Itoa(uid)) }
	return osUser(lookup, func(string) string { return "" }, uid)
}

// CheckSocket says whether there is a socket at path to dial: false when
// there is none (or a file that is no socket nor link: nothing is sent to
// it); an error when there is one this user must not trust (SocketRule:
// owned by this user, not writable by others, in directories no other
// user can write).
func CheckSocket(path string) (bool, error) {
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
	if err := localtrust.Check(path, SocketRule); err != nil {
		return false, err
	}
	return true, nil
}

// ServeAnswers: a serve answers on the socket beside state (a socket
// file left by one that died does not count).
func ServeAnswers(state string) bool {
	path := LocalSocket(state)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Type() != os.ModeSocket {
		return false
	}
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}
