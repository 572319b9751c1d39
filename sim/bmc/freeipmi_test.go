package bmc

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/sim/serial"
)

// freeIPMI runs FreeIPMI's tools against one lab BMC: the user name and
// password come from a config file (never the command line).
type freeIPMI struct {
	t    *testing.T
	b    *BMC
	host string // 127.0.0.1:port
	conf string // the config file
	sdr  string // SDR cache directory
}

func newFreeIPMI(t *testing.T, b *BMC) *freeIPMI {
	t.Helper()
	dir := t.TempDir()
	f := &freeIPMI{t: t, b: b, host: b.Addr().String(), conf: filepath.Join(dir, "freeipmi.conf"), sdr: filepath.Join(dir, "sdr")}
	if err := os.WriteFile(f.conf, []byte("username admin\npassword secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(f.sdr, 0o700); err != nil {
		t.Fatal(err)
	}
	return f
}

// run runs tool with driver type d (LAN or LAN_2_0) and fails the test
// when it fails.
func (f *freeIPMI) run(tool, d string, args ...string) string {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	full := append([]string{"-h", f.host, "--config-file", f.conf, "-D", d}, args...)
	out, err := exec.CommandContext(ctx, tool, full...).CombinedOutput()
	if err != nil {
		f.t.Fatalf("%s -D %s %v: %v\n%s", tool, d, args, err, out)
	}
	return string(out)
}

// startBMCLowPort starts a lab BMC on a loopback port below 32768:
// ipmiconsole 1.6 cannot reach a port above (it takes it for a service
// name), and the kernel's ephemeral ports are above.
func startBMCLowPort(t *testing.T, mod func(*Options)) (*BMC, *fakeChassis) {
	t.Helper()
	for range 50 {
		port := 20000 + rand.IntN(12000)
		ch := newFakeChassis()
		o := Options{Addr: "127.0.0.1:" + strconv.Itoa(port), Username: "admin", Password: "secret", GUID: testGUID}
		mod(&o)
		b, err := Start(context.Background(), ch, o)
		if err != nil {
			continue // taken
		}
		t.Cleanup(func() { _ = b.Close() })
		return b, ch
	}
	t.Fatal("no free loopback port below 32768 in 50 tries")
	return nil, nil
}

func needFreeIPMI(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"bmc-info", "bmc-device", "ipmi-chassis", "ipmipower", "ipmi-sensors", "ipmi-sel", "ipmi-fru", "ipmi-config", "ipmiconsole"} {
		testtool.Need(t, tool, "freeipmi-tools")
	}
	testtool.Need(t, "script", "bsdutils") // a terminal for ipmiconsole
	needIpmitool(t)
}

// field is the value of "name : value" in a tool's output.
func field(out, name string) string {
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(name) + `\s*:\s*(.*?)\s*$`).FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestFreeIPMIConformance: FreeIPMI 1.6's tools work against the lab's BMC
// over IPMI 1.5 (-D LAN) and 2.0 (-D LAN_2_0), and what they report or do
// is checked against the BMC's machine (the fake chassis) and its own
// options: bmc-info, ipmi-chassis, ipmi-config (checkout and commit of the
// boot device), ipmipower (status, on, off, cycle), ipmi-sensors, ipmi-sel
// (the power events just caused), ipmi-fru; then ipmitool's `session info
// active` over lan and lanplus, and ipmiconsole attaching to SOL.
func TestFreeIPMIConformance(t *testing.T) {
	needFreeIPMI(t)
	port := serial.New()
	fru := FRU{Manufacturer: "Dell Inc.", Product: "PowerEdge XE9680", Serial: "SLW0042"}
	b, ch := startBMCLowPort(t, func(o *Options) { o.Serial = port; o.FRU = fru; o.Firmware = "7.10" })
	f := newFreeIPMI(t, b)
	checks := 0
	for _, d := range []string{"LAN", "LAN_2_0"} {
		t.Run(d, func(t *testing.T) {
			f.t = t
			checks += f.checkInfo(d, fru)
			checks += f.checkBoot(d, ch)
			checks += f.checkPower(d, ch)
		})
	}
	f.t = t
	checks += checkSessionInfo(t, b)
	checks += f.checkConsole(port)
	if !t.Failed() {
		t.Logf("FreeIPMI and ipmitool conformance: %d checks passed", checks)
	}
}

// checkInfo: bmc-info, ipmi-sensors and ipmi-fru report the BMC's own data.
func (f *freeIPMI) checkInfo(d string, fru FRU) int {
	t := f.t
	out := f.run("bmc-info", d)
	if got := field(out, "Firmware Revision"); got != "7.10" {
		t.Errorf("bmc-info firmware %q, want 7.10 (Options.Firmware)", got)
	}
	// FreeIPMI prints the GUID's bytes in reverse (SMBIOS order).
	if got := field(out, "System GUID"); got != "29230000-6745-23a1-efcd-ab89674523a1" {
		t.Errorf("bmc-info system GUID %q", got)
	}
	if out := f.run("bmc-info", d, "--get-channel-info"); field(out, "Medium Type") != "802.3 LAN" {
		t.Errorf("bmc-info --get-channel-info:\n%s", out)
	}
	if out := f.run("ipmi-config", d, "--checkout", "-S", "Lan_Conf"); !regexp.MustCompile(`(?m)^\s*IP_Address\s+127\.0\.0\.1\s*$`).MatchString(out) {
		t.Errorf("ipmi-config --checkout -S Lan_Conf does not show the BMC's address:\n%s", out)
	}
	// The core category's sections a LAN-only BMC serves in full (not
	// Lan_Conf_Auth, Rmcpplus_Conf_Privilege, Serial_*: docs/lab.md).
	out = f.run("ipmi-config", d, "--checkout", "-S", "User2", "-S", "Lan_Channel", "-S", "Lan_Conf_Security_Keys",
		"-S", "Lan_Conf_User_Security", "-S", "Lan_Conf_Misc", "-S", "Lan6_Conf", "-S", "SOL_Conf")
	for _, want := range []string{`Username\s+admin`, `Enable_User\s+Yes`, `SOL_Payload_Access\s+Yes`, `Lan_Privilege_Limit\s+Administrator`,
		`K_G\s+0x0{40}`, `Enable_SOL\s+Yes`, `Non_Volatile_Bit_Rate\s+115200`} {
		if !regexp.MustCompile(`(?m)^\s*` + want + `\s*$`).MatchString(out) {
			t.Errorf("ipmi-config --checkout lacks %s:\n%s", want, out)
		}
	}
	if out := f.run("ipmi-chassis", d, "--get-chassis-capabilities"); field(out, "FRU Info Device Address") != "20h" {
		t.Errorf("ipmi-chassis --get-chassis-capabilities:\n%s", out)
	}
	if out := f.run("bmc-device", d, "--get-sdr-repository-time"); !strings.Contains(out, "SDR Repository Time") {
		t.Errorf("bmc-device --get-sdr-repository-time:\n%s", out)
	}
	out = f.run("ipmi-sensors", d, "--sdr-cache-directory", f.sdr, "--quiet-cache")
	for _, s := range []string{"CPU Temp", "Inlet Temp", "FAN1", "PSU1 Input"} {
		if !strings.Contains(out, s) {
			t.Errorf("ipmi-sensors lacks %s:\n%s", s, out)
		}
	}
	out = f.run("ipmi-fru", d, "--sdr-cache-directory", f.sdr)
	if field(out, "FRU Product Name") != fru.Product || field(out, "FRU Product Serial Number") != fru.Serial ||
		field(out, "FRU Product Manufacturer Name") != fru.Manufacturer {
		t.Errorf("ipmi-fru does not show the machine's FRU %+v:\n%s", fru, out)
	}
	return 17
}

// checkBoot: ipmi-config commits a boot device the machine then has, and
// ipmi-config --checkout and ipmi-chassis --get-boot-flags read it back.
func (f *freeIPMI) checkBoot(d string, ch *fakeChassis) int {
	t := f.t
	for _, dev := range []struct{ freeipmi, lab, shown string }{
		{"PXE", "pxe", "Force PXE"}, {"HARD-DRIVE", "disk", "Force boot from default Hard drive"},
	} {
		f.run("ipmi-config", d, "--category=chassis", "--commit", "--key-pair=Chassis_Boot_Flags:Boot_Device="+dev.freeipmi)
		if got, _, _ := ch.BootDevice(); got != dev.lab {
			t.Errorf("ipmi-config committed Boot_Device=%s; the machine's boot device is %q", dev.freeipmi, got)
		}
		out := f.run("ipmi-config", d, "--category=chassis", "--checkout", "-S", "Chassis_Boot_Flags")
		if !regexp.MustCompile(`(?m)^\s*Boot_Device\s+` + dev.freeipmi + `\s*$`).MatchString(out) {
			t.Errorf("ipmi-config --checkout after setting %s:\n%s", dev.freeipmi, out)
		}
		if got := field(f.run("ipmi-chassis", d, "--get-boot-flags"), "Boot device selector"); got != dev.shown {
			t.Errorf("ipmi-chassis --get-boot-flags: device %q, want %q", got, dev.shown)
		}
	}
	return 6
}

// checkPower: ipmipower and ipmi-chassis agree with the machine's power,
// each change reaches the machine, and ipmi-sel lists one power event
// per change.
func (f *freeIPMI) checkPower(d string, ch *fakeChassis) int {
	t := f.t
	f.run("ipmi-sel", d, "--clear")
	state := func() string {
		if ch.IsPoweredOn() {
			return "on"
		}
		return "off"
	}
	stat := func() string {
		return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(f.run("ipmipower", d, "--stat")), "127.0.0.1:"))
	}
	ch.PowerOff()
	changes := 0
	for _, step := range []struct{ op, want string }{{"--on", "on"}, {"--cycle", "on"}, {"--off", "off"}} {
		cycles := ch.cycleCount()
		if out := f.run("ipmipower", d, step.op); !strings.Contains(out, "ok") {
			t.Errorf("ipmipower %s: %s", step.op, out)
		}
		if state() != step.want || stat() != step.want {
			t.Errorf("after ipmipower %s the machine is %s, ipmipower --stat says %s; want %s", step.op, state(), stat(), step.want)
		}
		if got := field(f.run("ipmi-chassis", d, "--get-status"), "System Power"); got != step.want {
			t.Errorf("ipmi-chassis --get-status after %s: %q", step.op, got)
		}
		if got := field(f.run("ipmi-chassis", d, "--get-system-restart-cause"), "Restart cause"); step.want == "on" && got != "power up via power push button or chassis control command" && !strings.Contains(strings.ToLower(got), "chassis control") {
			t.Errorf("ipmi-chassis --get-system-restart-cause after %s: %q", step.op, got)
		}
		if n := ch.cycleCount() - cycles; step.op == "--cycle" && n != 1 {
			t.Errorf("ipmipower --cycle: the machine cycled %d times", n)
		}
		changes++
	}
	out := f.run("ipmi-sel", d, "--sdr-cache-directory", f.sdr, "--quiet-cache")
	if n := strings.Count(out, "Power Unit"); n < changes {
		t.Errorf("ipmi-sel lists %d power events after %d changes:\n%s", n, changes, out)
	}
	return 3*5 + 1
}

func (c *fakeChassis) cycleCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cycles
}

// checkSessionInfo: ipmitool's `session info active` describes the
// session it runs in, over IPMI 1.5 and 2.0.
func checkSessionInfo(t *testing.T, b *BMC) int {
	for _, c := range []struct{ iface, kind string }{{"lan", "IPMIv1.5"}, {"lanplus", "IPMIv2/RMCP+"}} {
		out := mustTool(t, b, c.iface, "session", "info", "active")
		if field(out, "session type") != c.kind || field(out, "user id") != "2" ||
			field(out, "privilege level") != "ADMINISTRATOR" || field(out, "console ip") != "127.0.0.1" ||
			field(out, "active sessions") != "1" {
			t.Errorf("ipmitool -I %s session info active:\n%s", c.iface, out)
		}
	}
	return 2
}

// checkConsole: ipmiconsole (in a terminal: it needs one) attaches to
// SOL, shows what the machine writes on its serial port, and its escape
// &. detaches: the BMC's SOL payload ends.
func (f *freeIPMI) checkConsole(port *serial.Port) int {
	t := f.t
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "script", "-qec", fmt.Sprintf("ipmiconsole -h %s --config-file %s", f.host, f.conf), "/dev/null")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out testtool.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	testtool.WaitUntil(t, func() bool { f.b.mu.Lock(); defer f.b.mu.Unlock(); return f.b.sol != nil }, "ipmiconsole activates SOL")
	testtool.WaitUntil(t, func() bool {
		port.Printf("Ubuntu 24.04 LTS gpu-0042 ttyS0\r\n")
		time.Sleep(100 * time.Millisecond)
		return strings.Contains(out.String(), "gpu-0042 ttyS0")
	}, "the machine's console text reaches ipmiconsole")
	if !strings.Contains(out.String(), "[SOL established]") {
		t.Errorf("ipmiconsole did not say SOL established:\n%s", out.String())
	}
	if _, err := io.WriteString(stdin, "\r&."); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ipmiconsole after &.: %v\n%s", err, out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("ipmiconsole did not end after &.:\n%s", out.String())
	}
	testtool.WaitUntil(t, func() bool { f.b.mu.Lock(); defer f.b.mu.Unlock(); return f.b.sol == nil }, "&. deactivates the SOL payload")
	return 3
}
