//go:build linux

package ipmisim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// requireIpmitool is RequireOrSkip for the ipmitool client.
func requireIpmitool(t testing.TB) {
	t.Helper()
	RequireOrSkip(t)
	if _, err := exec.LookPath("ipmitool"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("ipmitool not found (CI is set): %v", err)
		}
		t.Skipf("skipping: ipmitool not found: %v", err)
	}
}

// ipmitool runs ipmitool against b over iface ("lan" or "lanplus").
func ipmitool(t testing.TB, b *BMC, iface, password string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	full := []string{"-I", iface}
	if iface == "lanplus" {
		full = append(full, "-C", "3")
	}
	full = append(full, "-H", b.Address, "-p", strconv.Itoa(b.Port), "-U", b.Username, "-P", password)
	if iface == "lan" && password != b.Password {
		// IPMI 1.5: the simulator drops the packet, the client times out.
		full = append(full, "-N", "1", "-R", "1")
	}
	full = append(full, args...)
	out, err := exec.CommandContext(ctx, "ipmitool", full...).CombinedOutput()
	return string(out), err
}

func mustIpmitool(t testing.TB, b *BMC, iface string, args ...string) string {
	t.Helper()
	out, err := ipmitool(t, b, iface, b.Password, args...)
	if err != nil {
		t.Fatalf("%s: ipmitool -I %s %s: %v\n%s", b.Name, iface, strings.Join(args, " "), err, out)
	}
	return out
}

func startCluster(t testing.TB, n int, o Options) *Cluster {
	t.Helper()
	c, err := Start(t.Context(), n, o)
	if err != nil {
		t.Fatalf("Start(%d): %v", n, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

func wantPower(t *testing.T, b *BMC, want bool) {
	t.Helper()
	on, err := b.Power()
	if err != nil {
		t.Fatal(err)
	}
	if on != want {
		t.Fatalf("%s: Power() = %v, want %v", b.Name, on, want)
	}
}

func wantBoot(t *testing.T, b *BMC, want string) {
	t.Helper()
	dev, err := b.BootDevice()
	if err != nil {
		t.Fatal(err)
	}
	if dev != want {
		t.Fatalf("%s: BootDevice() = %q, want %q", b.Name, dev, want)
	}
}

// waitPower polls Power until it is want or the timeout passes.
func waitPower(t *testing.T, b *BMC, want bool, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		on, err := b.Power()
		if err != nil {
			t.Fatal(err)
		}
		if on == want {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: power still %v after %v", b.Name, on, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestChassisThroughIpmitool(t *testing.T) {
	requireIpmitool(t)
	c := startCluster(t, 3, Options{})
	if len(c.BMCs) != 3 {
		t.Fatalf("got %d BMCs", len(c.BMCs))
	}
	for i, b := range c.BMCs {
		if want := fmt.Sprintf("bmc%02d", i+1); b.Name != want {
			t.Errorf("BMC %d is named %q, want %q", i, b.Name, want)
		}
		if b.Address != "127.0.0.1" || b.Port == 0 || b.PID == 0 || b.Username != "admin" || b.Password != "secret" {
			t.Errorf("BMC %d: %+v", i, *b)
		}
	}
	for _, b := range c.BMCs {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			wantPower(t, b, false)
			wantBoot(t, b, "")
			if out := mustIpmitool(t, b, "lanplus", "chassis", "power", "status"); !strings.Contains(out, "Chassis Power is off") {
				t.Fatalf("status: %q", out)
			}

			mustIpmitool(t, b, "lanplus", "chassis", "power", "on")
			wantPower(t, b, true)
			if out := mustIpmitool(t, b, "lanplus", "chassis", "power", "status"); !strings.Contains(out, "Chassis Power is on") {
				t.Fatalf("status after on: %q", out)
			}

			mustIpmitool(t, b, "lanplus", "chassis", "power", "off")
			wantPower(t, b, false)
			if out := mustIpmitool(t, b, "lanplus", "chassis", "power", "status"); !strings.Contains(out, "Chassis Power is off") {
				t.Fatalf("status after off: %q", out)
			}

			// Cycle: off at once, on again about a second later.
			mustIpmitool(t, b, "lanplus", "chassis", "power", "on")
			mustIpmitool(t, b, "lanplus", "chassis", "power", "cycle")
			wantPower(t, b, false)
			if d := waitPower(t, b, true, 10*time.Second); d < 300*time.Millisecond {
				t.Errorf("power came back after %v; expected about 1 s", d)
			}
			log, err := os.ReadFile(filepath.Join(b.Dir, chassisLog))
			if err != nil {
				t.Fatal(err)
			}
			var sets []string
			for _, line := range strings.Split(string(log), "\n") {
				if strings.HasPrefix(line, "set ") {
					sets = append(sets, line)
				}
			}
			if !strings.HasSuffix(strings.Join(sets, ","), "set power 1,set power 0,set power 1") {
				t.Errorf("chassis.log does not show on, cycle(off, on):\n%s", log)
			}

			// Reset leaves power as it was and is counted.
			mustIpmitool(t, b, "lanplus", "chassis", "power", "reset")
			wantPower(t, b, true)
			if s, err := readState(b.Dir, resetsFile); err != nil || s != "1" {
				t.Errorf("resets = %q, %v; want 1", s, err)
			}
			// Soft shutdown powers off.
			mustIpmitool(t, b, "lanplus", "chassis", "power", "soft")
			wantPower(t, b, false)

			mustIpmitool(t, b, "lanplus", "chassis", "bootdev", "pxe")
			wantBoot(t, b, "pxe")
			if out := mustIpmitool(t, b, "lanplus", "chassis", "bootparam", "get", "5"); !strings.Contains(out, "Force PXE") {
				t.Errorf("bootparam get 5 after pxe: %q", out)
			}
			mustIpmitool(t, b, "lanplus", "chassis", "bootdev", "disk")
			wantBoot(t, b, "disk")
			if out := mustIpmitool(t, b, "lanplus", "chassis", "bootparam", "get", "5"); !strings.Contains(out, "Hard-Drive") {
				t.Errorf("bootparam get 5 after disk: %q", out)
			}
			mustIpmitool(t, b, "lanplus", "chassis", "bootdev", "cdrom", "options=persistent,efiboot")
			wantBoot(t, b, "cdrom")
			mustIpmitool(t, b, "lanplus", "chassis", "bootdev", "none")
			wantBoot(t, b, "none")

			// SetPower changes what the BMC reports.
			if err := b.SetPower(true); err != nil {
				t.Fatal(err)
			}
			if out := mustIpmitool(t, b, "lanplus", "chassis", "power", "status"); !strings.Contains(out, "Chassis Power is on") {
				t.Fatalf("status after SetPower(true): %q", out)
			}
			if err := b.SetPower(false); err != nil {
				t.Fatal(err)
			}
			wantPower(t, b, false)

			// IPMI 1.5 works too.
			mustIpmitool(t, b, "lan", "chassis", "power", "on")
			wantPower(t, b, true)
			if out := mustIpmitool(t, b, "lan", "chassis", "power", "status"); !strings.Contains(out, "Chassis Power is on") {
				t.Fatalf("lan status: %q", out)
			}
			mustIpmitool(t, b, "lan", "chassis", "bootdev", "pxe")
			wantBoot(t, b, "pxe")
			mustIpmitool(t, b, "lan", "chassis", "power", "off")
			wantPower(t, b, false)
		})
	}
}

func TestStateIsPerBMC(t *testing.T) {
	requireIpmitool(t)
	c := startCluster(t, 3, Options{})
	mustIpmitool(t, c.BMCs[1], "lanplus", "chassis", "power", "on")
	mustIpmitool(t, c.BMCs[1], "lanplus", "chassis", "bootdev", "pxe")
	wantPower(t, c.BMCs[0], false)
	wantPower(t, c.BMCs[1], true)
	wantPower(t, c.BMCs[2], false)
	wantBoot(t, c.BMCs[0], "")
	wantBoot(t, c.BMCs[1], "pxe")
	wantBoot(t, c.BMCs[2], "")
}

func TestWrongPasswordFails(t *testing.T) {
	requireIpmitool(t)
	c := startCluster(t, 1, Options{})
	b := c.BMCs[0]
	out, err := ipmitool(t, b, "lanplus", "not-the-password", "chassis", "power", "status")
	if err == nil {
		t.Fatalf("lanplus with a wrong password succeeded:\n%s", out)
	}
	if !strings.Contains(out, "Unable to establish IPMI v2 / RMCP+ session") {
		t.Errorf("lanplus wrong password: unexpected output %q", out)
	}
	out, err = ipmitool(t, b, "lan", "not-the-password", "chassis", "power", "status")
	if err == nil {
		t.Fatalf("lan with a wrong password succeeded:\n%s", out)
	}
	// The right one still works afterwards.
	mustIpmitool(t, b, "lanplus", "chassis", "power", "status")
}

func TestCustomCredentialsAndDir(t *testing.T) {
	requireIpmitool(t)
	dir := t.TempDir()
	c := startCluster(t, 2, Options{Username: "root", Password: "calvin-1234", Dir: dir})
	for _, b := range c.BMCs {
		if b.Username != "root" || b.Password != "calvin-1234" {
			t.Fatalf("credentials: %+v", *b)
		}
		if filepath.Dir(b.Dir) != dir {
			t.Errorf("%s: Dir %s is not under %s", b.Name, b.Dir, dir)
		}
		mustIpmitool(t, b, "lanplus", "chassis", "power", "on")
		wantPower(t, b, true)
	}
	if _, err := ipmitool(t, c.BMCs[0], "lanplus", "secret", "chassis", "power", "status"); err == nil {
		t.Error("the default password was accepted")
	}
	// A second cluster in the same Dir gets its own directories.
	c2 := startCluster(t, 1, Options{Dir: dir})
	if c2.BMCs[0].Dir == c.BMCs[0].Dir || !strings.HasPrefix(filepath.Base(c2.BMCs[0].Dir), "bmc01-") {
		t.Errorf("second cluster's bmc01 dir is %s (first: %s)", c2.BMCs[0].Dir, c.BMCs[0].Dir)
	}
	wantPower(t, c2.BMCs[0], false)
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	// Close leaves a caller's Dir alone.
	if _, err := os.Stat(filepath.Join(c2.BMCs[0].Dir, simLogFile)); err != nil {
		t.Errorf("Close removed a BMC dir under Options.Dir: %v", err)
	}
}

func TestBadOptions(t *testing.T) {
	RequireOrSkip(t)
	for _, o := range []Options{
		{Username: "has space"},
		{Password: `quo"te`},
		{Password: "012345678901234567890"},
		{Dir: filepath.Join(t.TempDir(), "it's")},
	} {
		if c, err := Start(t.Context(), 1, o); err == nil {
			c.Close()
			t.Errorf("Start with %+v succeeded", o)
		}
	}
	if _, err := Start(t.Context(), -1, Options{}); err == nil {
		t.Error("Start(-1) succeeded")
	}
}

// ourProcesses lists running ipmi_sim processes whose command line mentions
// dir.
func ourProcesses(t *testing.T, dir string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if isOurIPMISim(pid, dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// isOurIPMISim reports whether pid is a live (not zombie) ipmi_sim whose
// command line mentions dir.
func isOurIPMISim(pid int, dir string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte(dir)) || !bytes.Contains(cmdline, []byte("ipmi_sim")) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) STATE ...
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	return true
}

func TestCloseStopsEverything(t *testing.T) {
	RequireOrSkip(t)
	c, err := Start(t.Context(), 3, Options{})
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(c.BMCs[0].Dir)
	for _, b := range c.BMCs {
		if !isOurIPMISim(b.PID, b.Dir) {
			t.Fatalf("%s: pid %d is not a running ipmi_sim for %s", b.Name, b.PID, b.Dir)
		}
		if pgid, err := syscall.Getpgid(b.PID); err != nil || pgid != b.PID {
			t.Errorf("%s: process group %d, %v; want its own (%d)", b.Name, pgid, err, b.PID)
		}
	}
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Close of 3: %v", time.Since(start))
	for _, b := range c.BMCs {
		if isOurIPMISim(b.PID, b.Dir) {
			t.Errorf("%s: ipmi_sim pid %d still running after Close", b.Name, b.PID)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", b.PID)); err == nil {
			if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", b.PID)); bytes.Contains(cmd, []byte("ipmi_sim")) {
				t.Errorf("%s: pid %d is still an ipmi_sim: %q", b.Name, b.PID, cmd)
			}
		}
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp dir %s still there after Close: %v", root, err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestNoOrphansWhenTestBinaryDies starts BMCs in a child test process,
// SIGKILLs it (as a hard timeout would) and checks the BMCs die with it.
func TestNoOrphansWhenTestBinaryDies(t *testing.T) {
	if os.Getenv("IPMISIM_ORPHAN_HELPER") != "" {
		c, err := Start(context.Background(), 3, Options{Dir: os.Getenv("IPMISIM_ORPHAN_HELPER")})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		for _, b := range c.BMCs {
			fmt.Println("pid", b.PID)
		}
		time.Sleep(time.Minute) // killed by the parent
		os.Exit(1)
	}
	RequireOrSkip(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoOrphansWhenTestBinaryDies$", "-test.count=1")
	cmd.Env = append(os.Environ(), "IPMISIM_ORPHAN_HELPER="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { // the helper dies by our kill: its exit error is expected
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	var pids []int
	buf := make([]byte, 4096)
	var out []byte
	for len(pids) < 3 {
		n, err := stdout.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			t.Fatalf("helper: %v; output:\n%s", err, out)
		}
		pids = pids[:0]
		for _, line := range strings.Split(string(out), "\n") {
			if p, ok := strings.CutPrefix(line, "pid "); ok {
				if pid, err := strconv.Atoi(strings.TrimSpace(p)); err == nil {
					pids = append(pids, pid)
				}
			}
		}
	}
	for _, pid := range pids {
		if !isOurIPMISim(pid, dir) {
			t.Fatalf("pid %d is not a running ipmi_sim", pid)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // "signal: killed", as meant
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := ourProcesses(t, dir)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left { // don't leave them behind either way
				_ = syscall.Kill(pid, syscall.SIGKILL) // the test fails below anyway
			}
			t.Fatalf("ipmi_sim processes %v outlived their test binary", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCloseReportsCrash(t *testing.T) {
	RequireOrSkip(t)
	c, err := Start(t.Context(), 2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// bmc01 is killed on purpose (a test simulating a dead BMC): fine.
	// bmc02 dies of an unexpected signal: Close says so.
	if err := syscall.Kill(c.BMCs[0].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(c.BMCs[1].PID, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	for _, b := range c.BMCs {
		<-b.proc.done
	}
	err = c.Close()
	if err == nil || !strings.Contains(err.Error(), "bmc02") || strings.Contains(err.Error(), "bmc01") {
		t.Fatalf("Close = %v; want an error about bmc02 only", err)
	}
}

func TestStartTwenty(t *testing.T) {
	requireIpmitool(t)
	start := time.Now()
	c := startCluster(t, 20, Options{})
	t.Logf("Start(20): %v", time.Since(start))
	ports := map[int]bool{}
	pids := map[int]bool{}
	for _, b := range c.BMCs {
		if ports[b.Port] || pids[b.PID] {
			t.Fatalf("%s: port %d or pid %d used twice", b.Name, b.Port, b.PID)
		}
		ports[b.Port], pids[b.PID] = true, true
	}
	var wg sync.WaitGroup
	for _, b := range c.BMCs {
		wg.Go(func() {
			guid, err := probeGUID(b.Address, b.Port, time.Second)
			if err != nil || guid != b.guid {
				t.Errorf("%s: GUID %x, %v; want %x", b.Name, guid, err, b.guid)
			}
			out, err := ipmitool(t, b, "lanplus", b.Password, "mc", "info")
			if err != nil || !strings.Contains(out, "Device ID") {
				t.Errorf("%s: mc info: %v\n%s", b.Name, err, out)
			}
			if _, err := ipmitool(t, b, "lanplus", b.Password, "chassis", "power", "on"); err != nil {
				t.Errorf("%s: power on: %v", b.Name, err)
			}
		})
	}
	wg.Wait()
	for _, b := range c.BMCs {
		wantPower(t, b, true)
	}
}

func TestStartCanceled(t *testing.T) {
	RequireOrSkip(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if c, err := Start(ctx, 1, Options{}); err == nil {
		c.Close()
		t.Fatal("Start with a canceled context succeeded")
	}

	// Cancel while 40 are starting: Start fails and leaves nothing behind.
	dir := t.TempDir()
	ctx, cancel = context.WithCancel(t.Context())
	running := cancelOnceRunning(t, dir, cancel)
	c, err := Start(ctx, 40, Options{Dir: dir})
	if err == nil {
		c.Close()
		t.Fatal("Start succeeded though its context was canceled while it ran")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Start after cancel: %v; want context.Canceled", err)
	}
	n := running()
	if n == 0 {
		t.Errorf("no ipmi_sim was running when Start was canceled: the cleanup was not exercised")
	}
	t.Logf("%d ipmi_sim running when Start was canceled", n)
	if pids := ourProcesses(t, dir); len(pids) > 0 {
		t.Errorf("ipmi_sim processes left after a canceled Start: %v", pids)
	}
}

// cancelOnceRunning makes Start's second port pick wait until an
// ipmi_sim runs under dir (the first BMC's, counted in the process table;
// 10 s at most) and then call cancel: the cancel lands mid-Start every
// run, with one BMC's process to clean up and the others not started,
// however many workers Start uses. It returns the count at the cancel.
func cancelOnceRunning(t *testing.T, dir string, cancel func()) (running func() int) {
	var mu sync.Mutex
	picks, count := 0, 0
	orig := pickPort
	pickPort = func() (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if picks++; picks == 2 {
			deadline := time.Now().Add(10 * time.Second)
			for count = len(ourProcesses(t, dir)); count == 0 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
				count = len(ourProcesses(t, dir))
			}
			cancel()
		}
		return orig()
	}
	t.Cleanup(func() { pickPort = orig })
	return func() int { mu.Lock(); defer mu.Unlock(); return count }
}

// reuseAddrListen binds 127.0.0.1:port with SO_REUSEADDR, as ipmi_sim does.
func reuseAddrListen(t *testing.T, port int) net.PacketConn {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
		})
		return errors.Join(err, serr)
	}}
	pc, err := lc.ListenPacket(context.Background(), "udp4", net.JoinHostPort(loopback, strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}

// withContendedPorts makes the first picks return the given ports, as if
// the kernel had handed out a port someone else grabbed meanwhile.
func withContendedPorts(t *testing.T, contended ...int) {
	var mu sync.Mutex
	orig := pickPort
	pickPort = func() (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(contended) > 0 {
			p := contended[0]
			contended = contended[1:]
			return p, nil
		}
		return orig()
	}
	t.Cleanup(func() { pickPort = orig })
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(loopback)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.LocalAddr().(*net.UDPAddr).Port
}

func TestContendedPortsAreRetried(t *testing.T) {
	RequireOrSkip(t)
	// An exclusive socket (ipmi_sim fails to bind), a SO_REUSEADDR socket
	// (ipmi_sim binds and shares), and another BMC's port (it would steal
	// that BMC's traffic).
	excl, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(loopback)})
	if err != nil {
		t.Fatal(err)
	}
	defer excl.Close()
	shared := reuseAddrListen(t, freePort(t))
	first := startCluster(t, 1, Options{})
	victim := first.BMCs[0]

	withContendedPorts(t,
		excl.LocalAddr().(*net.UDPAddr).Port,
		shared.LocalAddr().(*net.UDPAddr).Port,
		victim.Port)
	c := startCluster(t, 1, Options{})
	b := c.BMCs[0]
	for _, p := range []int{excl.LocalAddr().(*net.UDPAddr).Port, shared.LocalAddr().(*net.UDPAddr).Port, victim.Port} {
		if b.Port == p {
			t.Fatalf("BMC got contended port %d", p)
		}
	}
	log, _ := os.ReadFile(filepath.Join(b.Dir, simLogFile))
	if n := bytes.Count(log, []byte("--- ipmisim: bmc01 attempt")); n != 4 {
		t.Errorf("%d attempts logged, want 4:\n%s", n, log)
	}
	// Both BMCs answer as themselves.
	for _, x := range []*BMC{victim, b} {
		guid, err := probeGUID(x.Address, x.Port, time.Second)
		if err != nil || guid != x.guid {
			t.Errorf("%s port %d: GUID %x, %v; want %x", x.Name, x.Port, guid, err, x.guid)
		}
		if err := x.checkSockets(true); err != nil {
			t.Errorf("%s: %v", x.Name, err)
		}
	}
}

func TestCheckSocketsSeesIntruder(t *testing.T) {
	RequireOrSkip(t)
	c := startCluster(t, 1, Options{})
	b := c.BMCs[0]
	if err := b.checkSockets(true); err != nil {
		t.Fatal(err)
	}
	reuseAddrListen(t, b.Port)
	var pe *portError
	if err := b.checkSockets(true); !errors.As(err, &pe) {
		t.Fatalf("checkSockets with a second socket on the port: %v", err)
	}
}

// runScript runs the chassis script as ipmi_sim does (sh -c, values quoted).
func runScript(t *testing.T, dir, args string) (string, error) {
	t.Helper()
	cmd := fmt.Sprintf("'/bin/sh' '%s' '%s' %s", filepath.Join(dir, chassisCtl), dir, args)
	var stdout, stderr bytes.Buffer
	c := exec.Command("/bin/sh", "-c", cmd)
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

func TestChassisScript(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("/bin/sh is needed (CI is set): %v", err)
		}
		t.Skip("no /bin/sh")
	}
	dir := t.TempDir()
	b := &BMC{Name: "bmc01", Address: loopback, Port: 1, Username: "admin", Password: "secret", Dir: dir}
	if err := writeConfig(b, "/bin/sh"); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		args, out string
		fail      bool
	}{
		{args: "get power", out: "power:0\n"},
		{args: "get boot", out: "boot:none\n"},
		{args: "get power boot", out: "power:0\nboot:none\n"},
		{args: `set power "1"`},
		{args: "get power", out: "power:1\n"},
		{args: `set boot "default"`},
		{args: "get boot", out: "boot:default\n"},
		{args: `set power "0" boot "pxe"`},
		{args: "get power boot", out: "power:0\nboot:pxe\n"},
		{args: `set reset "1"`},
		{args: `set reset "1"`},
		{args: `set identify "15 0"`},
		{args: "get identify", out: "identify:15 0\n"},
		{args: `set power "1"`},
		{args: `set shutdown "1"`},
		{args: "get power", out: "power:0\n"},
		{args: `set power "2"`, fail: true},
		{args: `set power "1" boot "PXE"`, fail: true}, // all or nothing
		{args: "get power", out: "power:0\n"},
		{args: `set power`, fail: true},
		{args: `set color "red"`, fail: true},
		{args: "get color", fail: true},
		{args: "frobnicate", fail: true},
		{args: "check power 1"},
	}
	for _, s := range steps {
		out, err := runScript(t, dir, s.args)
		if s.fail {
			if err == nil {
				t.Errorf("%q succeeded: %q", s.args, out)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v: %s", s.args, err, out)
			continue
		}
		if s.out != "" && out != s.out {
			t.Errorf("%q printed %q, want %q", s.args, out, s.out)
		}
	}
	if dev, _ := b.BootDevice(); dev != "pxe" {
		t.Errorf("BootDevice = %q", dev)
	}
	if s, _ := readState(dir, resetsFile); s != "2" {
		t.Errorf("resets = %q, want 2", s)
	}
	if err := b.SetPower(true); err != nil {
		t.Fatal(err)
	}
	if out, _ := runScript(t, dir, "get power"); out != "power:1\n" {
		t.Errorf("after SetPower(true) the script says %q", out)
	}
	if on, err := b.Power(); !on || err != nil {
		t.Errorf("Power() = %v, %v", on, err)
	}
	if _, err := runScript(t, dir, `set boot "default"`); err != nil {
		t.Fatal(err)
	}
	if dev, _ := b.BootDevice(); dev != "disk" {
		t.Errorf("BootDevice after default = %q, want disk", dev)
	}
}

func TestGUIDPacket(t *testing.T) {
	req := getSystemGUIDRequest(5)
	want := []byte{0x06, 0x00, 0xff, 0x07, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0x20, 0x18, 0xc8, 0x81, 0x14, 0x37, 0x34}
	if !bytes.Equal(req, want) {
		t.Fatalf("request % x\nwant    % x", req, want)
	}
	// A reply as ipmi_sim sends it (seq 1).
	reply := []byte{0x06, 0x00, 0xff, 0x07, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x18,
		0x81, 0x1c, 0x63, 0x20, 0x04, 0x37, 0x00,
		0xa1, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xa1, 0x23, 0x45, 0x67, 0x00, 0x00, 0x23, 0x29, 0x89}
	guid, err := parseGUIDResponse(reply, 1)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%x", guid) != "a123456789abcdefa123456700002329" {
		t.Errorf("guid %x", guid)
	}
	if _, err := parseGUIDResponse(reply, 2); err == nil {
		t.Error("reply to another sequence number accepted")
	}
	if _, err := parseGUIDResponse(reply[:20], 1); err == nil {
		t.Error("short reply accepted")
	}
}

// BenchmarkStart measures Start+Close of n BMCs.
func BenchmarkStart(b *testing.B) {
	RequireOrSkip(b)
	for _, n := range []int{1, 20, 100} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			var startTotal time.Duration
			for b.Loop() {
				t0 := time.Now()
				c, err := Start(b.Context(), n, Options{})
				if err != nil {
					b.Fatal(err)
				}
				startTotal += time.Since(t0)
				if err := c.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(startTotal.Milliseconds())/float64(b.N), "start-ms/op")
		})
	}
}

// BenchmarkIpmitoolPowerStatus measures one ipmitool call (process start,
// session setup, Get Chassis Status, session close).
func BenchmarkIpmitoolPowerStatus(b *testing.B) {
	requireIpmitool(b)
	c := startCluster(b, 1, Options{})
	for _, iface := range []string{"lanplus", "lan"} {
		b.Run(iface, func(b *testing.B) {
			for b.Loop() {
				mustIpmitool(b, c.BMCs[0], iface, "chassis", "power", "status")
			}
		})
	}
}

// BenchmarkProbe measures one unauthenticated Get System GUID round trip.
func BenchmarkProbe(b *testing.B) {
	RequireOrSkip(b)
	c := startCluster(b, 1, Options{})
	bmc := c.BMCs[0]
	for b.Loop() {
		if _, err := probeGUID(bmc.Address, bmc.Port, time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
