// Package ovs runs Debian's Open vSwitch (ovsdb-server and ovs-vswitchd
// with the userspace netdev datapath: no kernel module) in a temporary
// directory, for tests and the demo that prove the ovs network driver
// with real packets. The switch daemon runs in a network namespace of
// its own, so that the design's port names (p1, Ethernet1, ...) are the
// names of its veth ends without clashing with the host's or another
// harness's. Everything a Switchd creates (the daemons, namespaces,
// veth pairs, files) is registered and removed by Close.
package ovs

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The Open vSwitch schema Debian's openvswitch-common installs.
const schemaPath = "/usr/share/openvswitch/vswitch.ovsschema"

// Binaries are the programs the harness runs, and the Debian packages
// that install them.
var Binaries = map[string]string{
	"ovsdb-tool":   "openvswitch-common",
	"ovsdb-server": "openvswitch-switch",
	"ovs-vswitchd": "openvswitch-switch",
	"ovs-vsctl":    "openvswitch-switch",
	"ovs-ofctl":    "openvswitch-common",
	"ovs-appctl":   "openvswitch-common",
	"ip":           "iproute2",
	"ping":         "iputils-ping",
}

// Available reports why the harness cannot run here (nil when it can):
// a missing binary (naming its Debian package), the schema, or not
// being root (namespaces need CAP_NET_ADMIN).
func Available() error {
	var missing []string
	for _, b := range sortedKeys(Binaries) {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian package %s)", b, Binaries[b]))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("open vswitch harness: missing %s", strings.Join(missing, ", "))
	}
	if _, err := os.Stat(schemaPath); err != nil {
		return fmt.Errorf("open vswitch harness: no schema %s (Debian package openvswitch-common): %v", schemaPath, err)
	}
	if os.Geteuid() != 0 {
		return errors.New("open vswitch harness: network namespaces and veth pairs need root (CAP_NET_ADMIN)")
	}
	return nil
}

// Bounds of the harness's waits.
const (
	startTimeout = 15 * time.Second
	toolTimeout  = 15 * time.Second
	stopTimeout  = 30 * time.Second
	maxSockPath  = 100 // sun_path is 108 bytes
)

// Switchd is one running Open vSwitch: an ovsdb-server and an
// ovs-vswitchd, the latter in the network namespace NS.
type Switchd struct {
	Dir string // state directory: conf.db, sockets, logs, pid files
	// DBSock is the OVSDB unix socket; Unix is its address for a client
	// ("unix:/DIR/db.sock"), TCP the loopback TCP one
	// ("tcp:127.0.0.1:PORT").
	DBSock, Unix, TCP string
	// NS is the network namespace ovs-vswitchd runs in: the switch
	// side of every veth lives there.
	NS string

	id      string // random, makes names unique across processes
	server  *proc
	vswitch *proc

	mu      sync.Mutex
	n       int      // names handed out
	netns   []string // namespaces created, NS first
	links   []link   // veth pairs created (either end deletes the pair)
	closed  bool
	closeMu sync.Mutex
}

type link struct{ ns, name string }

// proc is a daemon the harness started.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts Open vSwitch in dir (which must exist; short, since the
// unix socket's path is bounded): a new conf.db from the schema, an
// ovsdb-server listening on DIR/db.sock and on a loopback TCP port, and
// an ovs-vswitchd in a new network namespace. On error, whatever was
// started is stopped and removed.
func Start(ctx context.Context, dir string) (*Switchd, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	s := &Switchd{Dir: dir, DBSock: filepath.Join(dir, "db.sock"), id: randomID()}
	if len(s.DBSock) > maxSockPath {
		return nil, fmt.Errorf("open vswitch harness: socket path %s is longer than %d bytes: use a shorter directory", s.DBSock, maxSockPath)
	}
	s.Unix = "unix:" + s.DBSock
	if err := s.start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Switchd) start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	db := filepath.Join(s.Dir, "conf.db")
	if out, err := s.run(ctx, "ovsdb-tool", "create", db, schemaPath); err != nil {
		return fmt.Errorf("ovsdb-tool create %s: %v: %s", db, err, out)
	}
	if err := s.startServer(ctx, "0"); err != nil {
		return err
	}
	s.TCP = "tcp:127.0.0.1:" + s.tcpPort()
	if out, err := s.Vsctl(ctx, "--no-wait", "init"); err != nil {
		return fmt.Errorf("ovs-vsctl init: %v: %s", err, out)
	}
	var err error
	if s.NS, err = s.NewNetns("sw"); err != nil {
		return err
	}
	if _, err := s.run(ctx, "ip", "-n", s.NS, "link", "set", "lo", "up"); err != nil {
		return err
	}
	s.vswitch, err = s.daemon("ovs-vswitchd", "ip", "netns", "exec", s.NS, "ovs-vswitchd", s.Unix,
		"--pidfile="+s.path("ovs-vswitchd.pid"), "--log-file="+s.path("ovs-vswitchd.log"),
		"--unixctl="+s.path("ovs-vswitchd.ctl"))
	if err != nil {
		return err
	}
	return s.waitFor(ctx, s.vswitch, func() bool {
		_, err := s.run(ctx, "ovs-appctl", "-t", s.path("ovs-vswitchd.ctl"), "version")
		return err == nil
	})
}

// startServer starts ovsdb-server on conf.db, listening on DB.sock and
// on the loopback TCP port (0: any).
func (s *Switchd) startServer(ctx context.Context, tcpPort string) error {
	p, err := s.daemon("ovsdb-server", "ovsdb-server", s.path("conf.db"), "--remote=punix:"+s.DBSock,
		"--remote=ptcp:"+tcpPort+":127.0.0.1", "--pidfile="+s.path("ovsdb-server.pid"),
		"--log-file="+s.path("ovsdb-server.log"), "--unixctl="+s.path("ovsdb-server.ctl"))
	if err != nil {
		return err
	}
	s.server = p
	return s.waitFor(ctx, p, func() bool { return s.listens(tcpPort) && dials("unix", s.DBSock) })
}

// listens says whether the starting ovsdb-server listens on TCP: on an
// ephemeral port ("0") it logs the port it took; restarted on a known
// port it logs nothing of it, and its first start's line is still in
// the log (StartDB took that line for the restarted server's and
// returned before the listener was back: a client was refused), so the
// port is dialled.
func (s *Switchd) listens(tcpPort string) bool {
	if tcpPort == "0" {
		return s.tcpPort() != ""
	}
	return dials("tcp", "127.0.0.1:"+tcpPort)
}

// KillDB kills ovsdb-server with SIGKILL (a crash: its clients lose
// their connections) and waits until it exited. StartDB starts it again.
func (s *Switchd) KillDB() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed || s.server == nil {
		return errors.New("open vswitch harness: no ovsdb-server to kill")
	}
	_ = s.server.cmd.Process.Kill()
	select {
	case <-s.server.done:
		return nil
	case <-time.After(stopTimeout):
		return fmt.Errorf("ovsdb-server (pid %d) did not exit after SIGKILL", s.server.cmd.Process.Pid)
	}
}

// KillVswitchd kills ovs-vswitchd with SIGKILL and waits until it
// exited: the database still takes changes, nothing applies them.
func (s *Switchd) KillVswitchd() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed || s.vswitch == nil {
		return errors.New("open vswitch harness: no ovs-vswitchd to kill")
	}
	_ = s.vswitch.cmd.Process.Kill()
	select {
	case <-s.vswitch.done:
		return nil
	case <-time.After(stopTimeout):
		return fmt.Errorf("ovs-vswitchd (pid %d) did not exit after SIGKILL", s.vswitch.cmd.Process.Pid)
	}
}

// StartDB starts ovsdb-server again after KillDB, on the same database,
// socket and TCP port; ovs-vswitchd reconnects by itself.
func (s *Switchd) StartDB(ctx context.Context) error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return errors.New("open vswitch harness: closed")
	}
	select {
	case <-s.server.done:
	default:
		return errors.New("open vswitch harness: ovsdb-server still runs")
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return s.startServer(ctx, strings.TrimPrefix(s.TCP, "tcp:127.0.0.1:"))
}

func (s *Switchd) path(name string) string { return filepath.Join(s.Dir, name) }

var portRE = regexp.MustCompile(`127\.0\.0\.1: listening on port (\d+)`)

// tcpPort is the TCP port ovsdb-server logged it listens on ("" not yet).
func (s *Switchd) tcpPort() string {
	b, err := os.ReadFile(s.path("ovsdb-server.log"))
	if err != nil {
		return ""
	}
	if m := portRE.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return ""
}

// daemon starts the daemon name as argv (argv[0] a binary: the daemon
// itself or "ip netns exec NS name") with the environment pointing Open
// vSwitch's directories at s.Dir, in a process group of its own, its
// output captured in DIR/name.out.
func (s *Switchd) daemon(name string, argv ...string) (*proc, error) {
	p := &proc{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(argv[0], append(argv[1:], "--no-chdir")...)
	p.cmd.Env = s.env()
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := os.Create(s.path(name + ".out"))
	if err != nil {
		return nil, err
	}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		out.Close()
		close(p.done)
	}()
	return p, nil
}

// env is the process environment with Open vSwitch's directories in s.Dir.
func (s *Switchd) env() []string {
	env := os.Environ()
	for _, k := range []string{"OVS_RUNDIR", "OVS_DBDIR", "OVS_LOGDIR", "OVS_SYSCONFDIR"} {
		env = append(env, k+"="+s.Dir)
	}
	return env
}

// waitFor polls ready every 20 ms until it holds, p exits or ctx ends;
// the error names the daemon and carries its log's tail.
func (s *Switchd) waitFor(ctx context.Context, p *proc, ready func() bool) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !ready() {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited while starting (%v); its log ends: %s", p.name, p.err, s.LogTail(p.name, 8))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %s; its log ends: %s", p.name, startTimeout, s.LogTail(p.name, 8))
		case <-tick.C:
		}
	}
	return nil
}

// LogTail is the last n lines of a daemon's log file and its captured
// output (name: ovsdb-server or ovs-vswitchd).
func (s *Switchd) LogTail(name string, n int) string {
	var lines []string
	for _, f := range []string{name + ".log", name + ".out"} {
		b, _ := os.ReadFile(s.path(f))
		ls := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(ls) > n {
			ls = ls[len(ls)-n:]
		}
		for _, l := range ls {
			if l != "" {
				lines = append(lines, l)
			}
		}
	}
	if len(lines) == 0 {
		return "(empty)"
	}
	return strings.Join(lines, " | ")
}

// run runs a tool with s's environment, bounded by toolTimeout, and
// returns its combined output.
func (s *Switchd) run(ctx context.Context, bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = s.env()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), err
}

// Vsctl runs ovs-vsctl on this switch's database and returns its output.
func (s *Switchd) Vsctl(ctx context.Context, args ...string) (string, error) {
	return s.run(ctx, "ovs-vsctl", append([]string{"--db=" + s.Unix, "--timeout=10"}, args...)...)
}

// Ofctl runs ovs-ofctl (which talks to ovs-vswitchd's bridge management
// socket in s.Dir) and returns its output.
func (s *Switchd) Ofctl(ctx context.Context, args ...string) (string, error) {
	return s.run(ctx, "ovs-ofctl", args...)
}

// Appctl runs ovs-appctl on the daemon name (ovs-vswitchd or
// ovsdb-server), e.g. "lacp/show BOND", and returns its output.
func (s *Switchd) Appctl(ctx context.Context, name string, args ...string) (string, error) {
	return s.run(ctx, "ovs-appctl", append([]string{"-t", s.path(name + ".ctl")}, args...)...)
}

// AddBridge adds a bridge on the userspace (netdev) datapath.
func (s *Switchd) AddBridge(ctx context.Context, name string) error {
	_, err := s.Vsctl(ctx, "add-br", name, "--", "set", "bridge", name, "datapath_type=netdev")
	return err
}

// Close stops the daemons it started (SIGTERM, then SIGKILL after 30 s,
// each by its PID), deletes the veth pairs and namespaces it created
// and removes its files. It may be called more than once.
func (s *Switchd) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	errs = append(errs, stop(s.vswitch))
	errs = append(errs, s.deleteNet()...)
	errs = append(errs, stop(s.server))
	for _, f := range []string{"conf.db", ".conf.db.~lock~", "db.sock", "ovsdb-server.ctl", "ovs-vswitchd.ctl",
		"ovsdb-server.pid", "ovs-vswitchd.pid", "ovsdb-server.log", "ovs-vswitchd.log", "ovsdb-server.out", "ovs-vswitchd.out"} {
		if err := os.Remove(s.path(f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := removeMgmtSockets(s.Dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeMgmtSockets removes the bridges' OpenFlow management sockets
// (BRIDGE.mgmt, BRIDGE.snoop) ovs-vswitchd left in dir.
func removeMgmtSockets(dir string) error {
	var errs []error
	for _, pat := range []string{"*.mgmt", "*.snoop"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, f := range m {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// stop ends p: SIGTERM to its PID, SIGKILL when it has not exited within
// stopTimeout.
func stop(p *proc) error {
	if p == nil || p.cmd.Process == nil {
		return nil
	}
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.cmd.Process.Pid)
	}
}

// PIDs are the daemons' process ids (ovsdb-server, ovs-vswitchd).
func (s *Switchd) PIDs() []int {
	var out []int
	for _, p := range []*proc{s.server, s.vswitch} {
		if p != nil && p.cmd.Process != nil {
			out = append(out, p.cmd.Process.Pid)
		}
	}
	return out
}

// dials reports whether a server accepts connections on the unix socket.
func dials(network, addr string) bool {
	c, err := net.DialTimeout(network, addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func randomID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
