package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/internal/httpx"
)

// The local socket: the control API on a Unix socket beside the state
// database (serve) or in a private directory (the CLI's in-process
// engine). Nobody sends a token there: the kernel names the caller. Each
// connection's peer credentials (SO_PEERCRED) give its uid; the server's
// own uid and root get an admin principal named by LocalNamer (the CLI's
// "cli:<user>"), any other uid is refused with a 403 before routing.

// LocalPrincipalID is the ID of every principal of the local socket: no
// token stands behind it.
const LocalPrincipalID = "local"

// localMarker is the bearer value the local gate sets so that the routes'
// token check runs; localFirst answers it from the connection, never from
// the header, so sending it over TCP gains nothing.
const localMarker = "local-socket"

// LocalNamer names the local caller of uid for the audit and the engine's
// records.
type LocalNamer func(uid int) string

// localPeer is who is at the other end of one local connection.
type localPeer struct {
	uid     int
	allowed bool
	name    string
	err     error // the credentials could not be read
}

type localPeerKey struct{}

// ListenLocal makes the Unix socket at path, mode 0600 (its directory
// should be the operator's). A socket file left by a process that died is
// replaced; one a live server answers on is not.
func ListenLocal(path string) (*net.UnixListener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("local socket %s: the path exists and is not a socket: move it away", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("local socket %s: another orchestrator serves on it (stop it, or give this one another --state)", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("local socket %s: remove the stale socket: %w", path, err)
		}
	}
	ln, err := listenMasked(path)
	if err != nil {
		return nil, fmt.Errorf("local socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("local socket %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(true)
	return ln, nil
}

// umaskMu serialises listenMasked: the umask is the process's, so two
// binds at once would each restore the other's 0177, and the process
// would keep it (every file it then wrote would lose its group and other
// bits, executables their x bits).
var umaskMu sync.Mutex

// setUmask sets the process's umask and returns the old one (a variable
// for the test that interleaves two binds).
var setUmask = umask

// listenMasked binds the Unix socket at path under umask 0177, so that it
// is 0600 from its first moment, and restores the umask before it returns.
func listenMasked(path string) (*net.UnixListener, error) {
	umaskMu.Lock()
	defer umaskMu.Unlock()
	old := setUmask(0o177)
	defer setUmask(old)
	return net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
}

// ServeLocal serves the API on ln, a Unix socket, until ctx ends. name
// names the callers it lets in (nil: "uid:N").
func (s *Server) ServeLocal(ctx context.Context, ln *net.UnixListener, name LocalNamer) error {
	if name == nil {
		name = func(uid int) string { return "uid:" + strconv.Itoa(uid) }
	}
	self := os.Getuid()
	srv := &http.Server{Handler: localGate(s.e), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			p := localPeer{uid: -1}
			if uc, ok := c.(*net.UnixConn); ok {
				p.uid, p.err = peerUID(uc)
			} else {
				p.err = errors.New("not a Unix socket")
			}
			p.allowed = p.err == nil && (p.uid == self || p.uid == 0)
			if p.allowed {
				p.name = name(p.uid)
			}
			return context.WithValue(ctx, localPeerKey{}, p)
		}}
	if err := serveUntil(ctx, srv, ln); !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil // the socket was closed under it
}

// localGate refuses the callers the socket does not admit and lets the
// others through the ordinary routes as the local principal.
func localGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := r.Context().Value(localPeerKey{}).(localPeer)
		if !p.allowed {
			detail := "the local socket admits the server's own user and root only (uid " + strconv.Itoa(p.uid) + " is neither): use the TCP API with a token"
			if p.err != nil {
				detail = "the local socket could not identify the caller: " + p.err.Error()
			}
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(httpx.NewProblem(http.StatusForbidden, detail, r.URL.Path, ""))
			return
		}
		r.Header.Set("Authorization", "Bearer "+localMarker)
		next.ServeHTTP(w, r)
	})
}

// localFirst answers for the callers of the local socket (their
// connection says who they are) and asks next about everyone else.
func localFirst(next Authenticator) Authenticator {
	return func(ctx context.Context, token string) (apitypes.Principal, error) {
		if p, ok := ctx.Value(localPeerKey{}).(localPeer); ok && p.allowed {
			return apitypes.Principal{ID: LocalPrincipalID, Name: p.name, Role: auth.RoleAdmin}, nil
		}
		return next(ctx, token)
	}
}
