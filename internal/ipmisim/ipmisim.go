// Package ipmisim starts and stops real OpenIPMI ipmi_sim BMCs on 127.0.0.1
// for tests and benchmarks.
//
// Each BMC is one ipmi_sim process with its own directory holding lan.conf,
// emu.cmd, ipmi_sim's state dir, its log (ipmi_sim.log) and a chassis_control
// shell script that keeps the chassis state in plain files:
//
//	power         "0" or "1" (a new BMC starts powered off)
//	boot          none, pxe, disk, cdrom or bios; absent until first set
//	resets        how many hard resets were requested
//	identify      the last chassis identify request ("SECONDS FORCE")
//	chassis.log   every chassis_control call, as ipmi_sim made it
//
// The BMC serves IPMI 1.5 ("-I lan") and IPMI 2.0 ("-I lanplus", use
// "-C 3" with ipmitool) for one administrator, user id 2.
//
// Every BMC is verified before Start returns: it must answer an
// unauthenticated Get System GUID with the GUID written into its lan.conf,
// and no other socket may be bound to its port (ipmi_sim binds with address
// reuse, so a second process on a port would silently share or steal it).
// Start retries on another port when a port turns out to be contended.
//
// Linux only: procfs is used to check port ownership.
package ipmisim

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	defaultUsername = "admin"
	defaultPassword = "secret"
	loopback        = "127.0.0.1"

	maxUsername = 16 // IPMI user name field
	maxPassword = 20 // IPMI 2.0 password field

	// How long one ipmi_sim may take to answer after its start, and how
	// often it is asked meanwhile.
	startTimeout  = 20 * time.Second
	probeTimeout  = 100 * time.Millisecond
	probeInterval = 15 * time.Millisecond
	maxAttempts   = 5 // ports tried per BMC

	stopGrace = 2 * time.Second // SIGTERM -> SIGKILL
	killWait  = 5 * time.Second // after SIGKILL

	logTailBytes = 2048
)

type toolPaths struct{ ipmiSim, sh string }

var tools = sync.OnceValues(func() (toolPaths, error) {
	var tp toolPaths
	if err := platformCheck(); err != nil {
		return tp, err
	}
	var err error
	if tp.ipmiSim, err = exec.LookPath("ipmi_sim"); err != nil {
		return tp, fmt.Errorf("ipmisim: ipmi_sim not found (Debian/Ubuntu package openipmi): %w", err)
	}
	if tp.sh, err = exec.LookPath("sh"); err != nil {
		return tp, fmt.Errorf("ipmisim: sh not found for the chassis_control script: %w", err)
	}
	if tp.sh, err = filepath.Abs(tp.sh); err != nil {
		return tp, err
	}
	if err := safePath(tp.sh); err != nil {
		return tp, err
	}
	l, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(loopback)})
	if err != nil {
		return tp, fmt.Errorf("ipmisim: cannot bind UDP on %s: %w", loopback, err)
	}
	l.Close()
	return tp, nil
})

// Available reports why ipmi_sim can't run here (nil when it can).
func Available() error {
	_, err := tools()
	return err
}

// RequireOrSkip skips the test when ipmi_sim can't run here, or fails it
// when the environment variable CI is non-empty (CI must have ipmi_sim).
func RequireOrSkip(t testing.TB) {
	t.Helper()
	err := Available()
	if err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%v (CI is set: install the openipmi package instead of skipping)", err)
	}
	t.Skipf("skipping: %v", err)
}

// Options configure Start.
type Options struct {
	Username, Password string // default "admin" / "secret"
	// Dir is where the BMCs' directories go (Dir/bmc01, ...; Dir/bmc01-XXXX
	// when bmc01 exists). They are left in place by Close. When empty, Start
	// makes a temporary directory and Close removes it.
	Dir string
}

// BMC is one running ipmi_sim. Its fields are set by Start; don't change them.
type BMC struct {
	Name               string // bmc01, bmc02, ...
	Address            string // "127.0.0.1"
	Port               int    // UDP
	Username, Password string
	Dir                string // this BMC's config and state dir
	PID                int    // ipmi_sim's process id (also its process group id)

	guid     [16]byte
	proc     *process
	reserved int   // port held in the package's port set, 0 if none
	logStart int64 // offset of this attempt's output in ipmi_sim.log
}

type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when Wait returned
	err  error         // Wait's result, valid after done
}

// Cluster is a set of BMCs started together. Close it.
type Cluster struct {
	BMCs []*BMC

	tempRoot  string // made by Start, removed by Close
	closeOnce sync.Once
	closeErr  error
}

// Start starts n ipmi_sim processes on free, verified UDP ports on
// 127.0.0.1, several at a time. On any failure, or when ctx ends before all
// are up, it stops what it started and returns an error (with the tail of
// ipmi_sim's log where that helps). ctx only bounds Start: the BMCs run
// until Close.
func Start(ctx context.Context, n int, o Options) (*Cluster, error) {
	if n < 0 {
		return nil, fmt.Errorf("ipmisim: cannot start %d BMCs", n)
	}
	tp, err := tools()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if o.Username == "" {
		o.Username = defaultUsername
	}
	if o.Password == "" {
		o.Password = defaultPassword
	}
	if err := checkCredential("username", o.Username, maxUsername); err != nil {
		return nil, err
	}
	if err := checkCredential("password", o.Password, maxPassword); err != nil {
		return nil, err
	}

	c := &Cluster{}
	fail := func(err error) (*Cluster, error) {
		c.Close()
		return nil, err
	}
	root := o.Dir
	if root == "" {
		if root, err = os.MkdirTemp("", "ipmisim-"); err != nil {
			return nil, fmt.Errorf("ipmisim: %w", err)
		}
		c.tempRoot = root
		if err := safePath(root); err != nil {
			return fail(err)
		}
	} else {
		if root, err = filepath.Abs(root); err != nil {
			return nil, fmt.Errorf("ipmisim: %w", err)
		}
		if err := safePath(root); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, fmt.Errorf("ipmisim: %w", err)
		}
	}
	for i := 1; i <= n; i++ {
		b := &BMC{
			Name:     fmt.Sprintf("bmc%02d", i),
			Address:  loopback,
			Username: o.Username,
			Password: o.Password,
		}
		if b.Dir, err = makeBMCDir(root, b.Name); err != nil {
			return fail(err)
		}
		c.BMCs = append(c.BMCs, b)
		rand.Read(b.guid[:])
	}

	if err := c.startAll(ctx, tp); err != nil {
		return fail(err)
	}
	return c, nil
}

// startAll starts the BMCs with a bounded pool of workers; the first error
// stops the rest.
func (c *Cluster) startAll(parent context.Context, tp toolPaths) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()

	workers := min(len(c.BMCs), max(4, 4*runtime.GOMAXPROCS(0)))
	jobs := make(chan *BMC)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range workers {
		wg.Go(func() {
			for b := range jobs {
				if err := b.start(ctx, tp); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
				}
			}
		})
	}
feed:
	for _, b := range c.BMCs {
		select {
		case jobs <- b:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()

	if err := parent.Err(); err != nil {
		return fmt.Errorf("ipmisim: start aborted: %w", err)
	}
	return firstErr
}

func makeBMCDir(root, name string) (string, error) {
	dir := filepath.Join(root, name)
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		dir, err = os.MkdirTemp(root, name+"-")
	}
	if err != nil {
		return "", fmt.Errorf("ipmisim: %w", err)
	}
	return dir, nil
}

// portError marks a failure that another port may not have.
type portError struct{ msg string }

func (e *portError) Error() string { return e.msg }

// start runs ipmi_sim for b until it is verified, trying up to maxAttempts
// ports when the port is the problem.
func (b *BMC) start(ctx context.Context, tp toolPaths) error {
	var tried []string
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		port, err := pickPort()
		if err != nil {
			return fmt.Errorf("ipmisim: %s: picking a port: %w", b.Name, err)
		}
		b.Port, b.reserved = port, port
		err = b.launch(ctx, tp, attempt)
		if err == nil {
			return nil
		}
		// Stop whatever this attempt started, then give the port back.
		if b.proc != nil {
			if serr := b.proc.stop(); serr != nil {
				// Keep b.proc and the port: Close tries again.
				return errors.Join(err, fmt.Errorf("ipmisim: %s: %w", b.Name, serr))
			}
			b.proc = nil
		}
		releasePort(port)
		b.reserved = 0
		first, _, _ := strings.Cut(err.Error(), "\n")
		b.note("attempt %d failed: %s", attempt, first)
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		var pe *portError
		if !errors.As(err, &pe) {
			return err
		}
		tried = append(tried, err.Error())
	}
	return fmt.Errorf("ipmisim: %s: no usable port after %d attempts: %s",
		b.Name, maxAttempts, strings.Join(tried, "; "))
}

// launch writes the config for b.Port, starts ipmi_sim and waits until it
// answers as this BMC and owns the port alone.
func (b *BMC) launch(ctx context.Context, tp toolPaths, attempt int) error {
	if err := writeConfig(b, tp.sh); err != nil {
		return fmt.Errorf("ipmisim: %s: writing config: %w", b.Name, err)
	}
	logf, err := os.OpenFile(filepath.Join(b.Dir, simLogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("ipmisim: %s: %w", b.Name, err)
	}
	fmt.Fprintf(logf, "--- ipmisim: %s attempt %d on %s:%d at %s\n",
		b.Name, attempt, b.Address, b.Port, time.Now().Format(time.RFC3339Nano))
	if st, err := logf.Stat(); err == nil {
		b.logStart = st.Size()
	}

	cmd := exec.Command(tp.ipmiSim,
		"-c", filepath.Join(b.Dir, lanConfFile),
		"-f", filepath.Join(b.Dir, emuCmdFile),
		"-n",
		"-s", filepath.Join(b.Dir, stateSubdir))
	cmd.Dir = b.Dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	logf.Close() // the child has its own descriptor
	if err != nil {
		return fmt.Errorf("ipmisim: %s: starting ipmi_sim: %w", b.Name, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	b.proc = p
	b.PID = cmd.Process.Pid
	return b.awaitReady(ctx)
}

func (b *BMC) awaitReady(ctx context.Context) error {
	p := b.proc
	deadline := time.Now().Add(startTimeout)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		select {
		case <-p.done:
			return b.exitedError()
		default:
		}
		guid, err := probeGUID(b.Address, b.Port, probeTimeout)
		switch {
		case err == nil && guid == b.guid:
			return b.checkSockets(true)
		case err == nil:
			return &portError{fmt.Sprintf("%s: port %d answered with GUID %x, not ours (%x): another BMC is there",
				b.Name, b.Port, guid, b.guid)}
		case errors.Is(err, errForeignReply):
			return &portError{fmt.Sprintf("%s: port %d: %v", b.Name, b.Port, err)}
		}
		if err := b.checkSockets(false); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ipmisim: %s (pid %d) did not answer on %s:%d within %v%s",
				b.Name, b.PID, b.Address, b.Port, startTimeout, b.logTail())
		}
		t := time.NewTimer(probeInterval)
		select {
		case <-ctx.Done():
		case <-p.done:
		case <-t.C:
		}
		t.Stop()
	}
}

// checkSockets fails when a socket that is not ipmi_sim's is bound to the
// port; with mustOwn, also when ipmi_sim holds none of the port's sockets.
func (b *BMC) checkSockets(mustOwn bool) error {
	socks, err := udpSocketsOnPort(b.Port)
	if err != nil {
		return fmt.Errorf("ipmisim: %s: %w", b.Name, err)
	}
	own, err := socketInodes(b.PID)
	if err != nil {
		if !mustOwn {
			return nil // exiting; awaitReady sees it next round
		}
		return fmt.Errorf("ipmisim: %s: %w", b.Name, err)
	}
	var foreign []uint64
	mine := 0
	for _, s := range socks {
		if own[s] {
			mine++
		} else {
			foreign = append(foreign, s)
		}
	}
	if len(foreign) > 0 {
		return &portError{fmt.Sprintf("%s: UDP port %d is also bound by a socket that is not ipmi_sim's (inodes %v)",
			b.Name, b.Port, foreign)}
	}
	if mustOwn && mine == 0 {
		return &portError{fmt.Sprintf("%s: port %d answered, but ipmi_sim (pid %d) holds no socket on it",
			b.Name, b.Port, b.PID)}
	}
	return nil
}

// note appends a line to the BMC's ipmi_sim.log.
func (b *BMC) note(format string, args ...any) {
	f, err := os.OpenFile(filepath.Join(b.Dir, simLogFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "--- ipmisim: "+format+"\n", args...)
	f.Close()
}

// exitedError describes ipmi_sim exiting during start.
func (b *BMC) exitedError() error {
	tail := b.logTail()
	msg := fmt.Sprintf("ipmisim: %s: ipmi_sim (pid %d, port %d) exited during start: %v%s",
		b.Name, b.PID, b.Port, b.proc.err, tail)
	if strings.Contains(tail, "Address already in use") {
		return &portError{msg}
	}
	return errors.New(msg)
}

// logTail returns the end of what ipmi_sim logged in this attempt,
// formatted to append to an error.
func (b *BMC) logTail() string {
	path := filepath.Join(b.Dir, simLogFile)
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	start := b.logStart
	if st, err := f.Stat(); err == nil && st.Size()-start > logTailBytes {
		start = st.Size() - logTailBytes
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return ""
	}
	data, _ := io.ReadAll(io.LimitReader(f, logTailBytes))
	s := strings.TrimSpace(string(data))
	if s == "" {
		return " (" + path + " is empty)"
	}
	return "\n--- " + path + ":\n" + s
}

// stop ends the process: SIGTERM, SIGKILL after stopGrace. It returns an
// error only if the process outlives SIGKILL.
func (p *process) stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	}
	_ = p.cmd.Process.Kill()
	t.Reset(killWait)
	select {
	case <-p.done:
		return nil
	case <-t.C:
		return fmt.Errorf("pid %d still running %v after SIGKILL", p.cmd.Process.Pid, killWait)
	}
}

// Close stops every process the cluster started, by PID (SIGTERM, then
// SIGKILL after 2 s), and removes the temporary directory Start made. It
// reports a BMC whose ipmi_sim had ended on its own before Close (killed by
// SIGTERM, SIGKILL, SIGINT or SIGHUP counts as deliberate, not an error).
// Close is idempotent.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Cluster) close() error {
	errs := make([]error, len(c.BMCs)+1)
	var wg sync.WaitGroup
	for i, b := range c.BMCs {
		wg.Go(func() { errs[i] = b.stop() })
	}
	wg.Wait()
	if c.tempRoot != "" {
		// A chassis script ipmi_sim started just before it was stopped may
		// still write a state file for a few milliseconds.
		var err error
		for range 10 {
			if err = os.RemoveAll(c.tempRoot); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			errs[len(c.BMCs)] = fmt.Errorf("ipmisim: %w", err)
		}
	}
	return errors.Join(errs...)
}

func (b *BMC) stop() error {
	defer func() {
		if b.reserved != 0 {
			releasePort(b.reserved)
			b.reserved = 0
		}
	}()
	p := b.proc
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		if deliberate(p.cmd.ProcessState) {
			return nil
		}
		return fmt.Errorf("ipmisim: %s: ipmi_sim (pid %d) ended before Close: %v%s",
			b.Name, b.PID, p.err, b.logTail())
	default:
	}
	if err := p.stop(); err != nil {
		return fmt.Errorf("ipmisim: %s: %w", b.Name, err)
	}
	return nil
}

// deliberate reports whether a process was ended by a signal someone sends
// on purpose to stop it.
func deliberate(ps *os.ProcessState) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return false
	}
	switch ws.Signal() {
	case syscall.SIGTERM, syscall.SIGKILL, syscall.SIGINT, syscall.SIGHUP:
		return true
	}
	return false
}

// Power reports the chassis power state as the chassis_control program
// stored it.
func (b *BMC) Power() (on bool, err error) {
	s, err := readState(b.Dir, powerFile)
	if err != nil {
		return false, fmt.Errorf("ipmisim: %s: power state: %w", b.Name, err)
	}
	switch s {
	case "1":
		return true, nil
	case "0":
		return false, nil
	}
	return false, fmt.Errorf("ipmisim: %s: power state file holds %q", b.Name, s)
}

// BootDevice reports the stored boot device: "" until one is set, then one
// of none, pxe, disk, cdrom, bios (ipmitool's names; ipmi_sim's "default"
// is stored as "disk"). The persistent and EFI flags are not kept.
func (b *BMC) BootDevice() (string, error) {
	s, err := readState(b.Dir, bootFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("ipmisim: %s: boot device: %w", b.Name, err)
	}
	return s, nil
}

// SetPower changes the simulated power state directly, as if the machine
// had been switched (test setup). A pending power cycle still turns power
// on when its second is up.
func (b *BMC) SetPower(on bool) error {
	v := "0"
	if on {
		v = "1"
	}
	if err := writeState(b.Dir, powerFile, v); err != nil {
		return fmt.Errorf("ipmisim: %s: %w", b.Name, err)
	}
	return nil
}

// ports reserved by this process's clusters, so that concurrent Starts
// never pick the same port: the kernel may hand a port that was just probed
// and closed to the next bind(:0).
var ports = struct {
	sync.Mutex
	m map[int]bool
}{m: make(map[int]bool)}

// pickPort is reservePort; tests replace it to hand out contended ports.
var pickPort = reservePort

// reservePort picks a UDP port on 127.0.0.1 that the kernel considers free,
// no socket of any address is bound to, and no cluster here uses.
func reservePort() (int, error) {
	for range 100 {
		l, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(loopback)})
		if err != nil {
			return 0, err
		}
		port := l.LocalAddr().(*net.UDPAddr).Port
		l.Close()

		ports.Lock()
		taken := ports.m[port]
		if !taken {
			ports.m[port] = true
		}
		ports.Unlock()
		if taken {
			continue
		}
		socks, err := udpSocketsOnPort(port)
		if err != nil {
			releasePort(port)
			return 0, err
		}
		if len(socks) > 0 {
			releasePort(port)
			continue
		}
		return port, nil
	}
	return 0, errors.New("no free port found in 100 tries")
}

func releasePort(port int) {
	ports.Lock()
	delete(ports.m, port)
	ports.Unlock()
}
