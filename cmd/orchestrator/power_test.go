package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/ipmisim"
	"github.com/slipway-dev/slipway/sim/bmc"
)

// powerChassis is a bmc.Chassis for the power command's tests.
type powerChassis struct {
	mu              sync.Mutex
	on              bool
	dev             string
	persistent, efi bool
	cycles          int
}

func (c *powerChassis) PowerOn()  { c.mu.Lock(); c.on = true; c.mu.Unlock() }
func (c *powerChassis) PowerOff() { c.mu.Lock(); c.on = false; c.mu.Unlock() }
func (c *powerChassis) PowerCycle() {
	c.mu.Lock()
	c.on = true
	c.cycles++
	c.mu.Unlock()
}
func (c *powerChassis) HardReset() {}
func (c *powerChassis) cycleCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cycles
}
func (c *powerChassis) IsPoweredOn() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.on
}
func (c *powerChassis) SetBootDevice(dev string, persistent, efi bool) {
	c.mu.Lock()
	c.dev, c.persistent, c.efi = dev, persistent, efi
	c.mu.Unlock()
}
func (c *powerChassis) BootDevice() (string, bool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dev, c.persistent, c.efi
}

// The example site's nodes use user admin and secret:bmc-admin.
const powerTestPassword = "cli-bmc-pw-8Hq"

func startPowerBMC(t *testing.T, password string) (*bmc.BMC, *powerChassis) {
	t.Helper()
	ch := &powerChassis{dev: "none"}
	b, err := bmc.Start(context.Background(), ch, bmc.Options{Addr: "127.0.0.1:0", Username: "admin", Password: password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, ch
}

var fastIPMI = []string{"--driver-setting", "timeout=300ms", "--driver-setting", "retries=1",
	"--driver-setting", "pollInterval=50ms", "--driver-setting", "backoff=20ms"}

func powerCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return cli(t, append(append([]string{"power"}, args...), fastIPMI...)...)
}

func TestPowerCommand(t *testing.T) {
	b, ch := startPowerBMC(t, powerTestPassword)
	t.Setenv("SLIPWAY_SECRET_BMC_ADMIN", powerTestPassword)
	bmcFlag := fmt.Sprintf("127.0.0.1:%d", b.Addr().Port)
	base := []string{"--node", "r01-cmp01", "--design", exampleSite, "--bmc", bmcFlag}

	step := func(action, wantOut string) {
		t.Helper()
		code, out, errs := powerCLI(t, append([]string{action}, base...)...)
		if code != 0 || !strings.Contains(out, wantOut) {
			t.Fatalf("power %s: exit %d, stdout %q, stderr %q; want %q", action, code, out, errs, wantOut)
		}
		if strings.Contains(out+errs, powerTestPassword) {
			t.Fatalf("power %s printed the password", action)
		}
	}
	step("status", "off")
	step("on", "powered on")
	step("status", "on")
	step("on", "already on")
	step("cycle", "power cycled")
	if ch.cycleCount() != 1 || !ch.IsPoweredOn() {
		t.Errorf("after cycle: cycles %d, on %v", ch.cycleCount(), ch.IsPoweredOn())
	}
	step("off", "powered off")
	step("status", "off")
	step("cycle", "was off: powered it on")
	// r01-cmp01's hardware profile: bootMode uefi, pxe.persistent true.
	step("pxe", "boots from pxe persistently (EFI)")
	if dev, p, efi := ch.BootDevice(); dev != "pxe" || !p || !efi {
		t.Errorf("boot device %s persistent=%v efi=%v, want pxe persistent, EFI", dev, p, efi)
	}
	code, out, errs := powerCLI(t, append([]string{"pxe", "--persistent=false", "--efi=false"}, base...)...)
	if dev, p, efi := ch.BootDevice(); code != 0 || dev != "pxe" || p || efi {
		t.Errorf("pxe --persistent=false --efi=false: exit %d %q %q; boot %s persistent=%v efi=%v", code, out, errs, dev, p, efi)
	}
}

func TestPowerCommandFailures(t *testing.T) {
	b, _ := startPowerBMC(t, powerTestPassword)
	bmcFlag := fmt.Sprintf("127.0.0.1:%d", b.Addr().Port)
	base := []string{"--node", "r01-cmp01", "--design", exampleSite, "--bmc", bmcFlag}
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("wrong-password-77\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// A wrong password: exit 1, the driver's message, no password.
	t.Setenv("SLIPWAY_SECRET_BMC_ADMIN", "wrong-password-77")
	code, out, errs := powerCLI(t, append([]string{"status"}, base...)...)
	want := fmt.Sprintf("BMC %s rejected the credentials for user admin", bmcFlag)
	if code != exitInvalid || out != "" || !strings.Contains(errs, want) || strings.Contains(errs, "wrong-password-77") {
		t.Errorf("wrong password: exit %d, stdout %q, stderr %q; want exit 1 and %q", code, out, errs, want)
	}

	// Unresolvable secret: exit 1 naming the variable.
	os.Unsetenv("SLIPWAY_SECRET_BMC_ADMIN")
	code, _, errs = powerCLI(t, append([]string{"status"}, base...)...)
	if code != exitInvalid || !strings.Contains(errs, "SLIPWAY_SECRET_BMC_ADMIN") {
		t.Errorf("unset secret: exit %d, %q", code, errs)
	}

	// Nobody listens: exit 1, transient, within the timeout.
	t.Setenv("SLIPWAY_SECRET_BMC_ADMIN", powerTestPassword)
	code, _, errs = powerCLI(t, "status", "--node", "r01-cmp01", "--design", exampleSite, "--bmc", "127.0.0.1:1", "--timeout", "2s")
	if code != exitInvalid || !strings.Contains(errs, "127.0.0.1:1") {
		t.Errorf("unreachable: exit %d, %q", code, errs)
	}

	for _, args := range [][]string{
		{"status"}, // no --node
		{"reboot", "--node", "r01-cmp01", "--design", exampleSite},
		{"status", "--node", "r01-cmp01"}, // no design
		{"status", "--node", "nosuchnode", "--design", exampleSite},
		{"status", "--node", "r01-cmp01", "--design", exampleSite, "--bmc", "127.0.0.1"},
		{"on", "--persistent", "--node", "r01-cmp01", "--design", exampleSite},
		{"status", "--node", "r01-cmp01", "--design", exampleSite, "--driver-setting", "bogus"},
		{"status", "on", "--node", "r01-cmp01", "--design", exampleSite},
	} {
		if code, _, errs := cli(t, append([]string{"power"}, args...)...); code != exitUsage || errs == "" {
			t.Errorf("power %q: exit %d, stderr %q; want exit 2", args, code, errs)
		}
	}
	// An unknown driver setting is the driver's error: exit 1.
	code, _, errs = cli(t, append([]string{"power", "status", "--driver-setting", "speed=11"}, base...)...)
	if code != exitInvalid || !strings.Contains(errs, `unknown setting "speed"`) {
		t.Errorf("bad setting: exit %d, %q", code, errs)
	}
}

// TestPowerCommandLab drives a virtual lab machine's BMC with the lab's
// --bmc address, the credentials coming from the design and the secret.
func TestPowerCommandLab(t *testing.T) {
	t.Setenv("SLIPWAY_SECRET_BMC_ADMIN", powerTestPassword)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"lab", "--design", exampleSite, "--maas-listen", "127.0.0.1:0"}, pw, io.Discard)
		pw.Close()
	}()
	defer func() {
		cancel()
		go func() { _, _ = io.Copy(io.Discard, pr) }()
		<-done
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no JSON line: %v", err)
	}
	var info struct {
		BMCs []struct {
			Node        string `json:"node"`
			Address     string `json:"address"`
			Port        int    `json:"port"`
			RedfishPort int    `json:"redfish_port"`
		} `json:"bmcs"`
		CAFile string `json:"redfish_ca_file"`
	}
	if err := json.Unmarshal([]byte(line), &info); err != nil {
		t.Fatal(err)
	}
	for _, m := range info.BMCs {
		if m.Node != "r02-gpu01" {
			continue
		}
		if m.RedfishPort == 0 || info.CAFile == "" {
			t.Fatalf("the lab runs no Redfish service for %s, whose hardware profile is managed over Redfish: %s", m.Node, line)
		}
		// Its first method, Redfish (trusting the lab's CA), then its
		// fallback, IPMI.
		methods := [][]string{
			{"--bmc", fmt.Sprintf("%s:%d", m.Address, m.RedfishPort), "--ca-file", info.CAFile,
				"--driver-setting", "pollInterval=50ms", "--driver-setting", "gracefulWait=3s"},
			append([]string{"--oob", "fallback", "--bmc", fmt.Sprintf("%s:%d", m.Address, m.Port)}, fastIPMI...),
		}
		for i, method := range methods {
			base := append([]string{"--node", m.Node, "--design", exampleSite}, method...)
			steps := []struct{ action, want string }{{"status", "off"}, {"on", "powered on"}, {"status", "on"}, {"pxe", "PXE"},
				{"cycle", ""}, {"off", map[int]string{0: "shut down gracefully", 1: "powered off"}[i]}, {"status", "off"}}
			for _, s := range steps {
				code, out, errs := cli(t, append([]string{"power", s.action}, base...)...)
				if code != 0 || !strings.Contains(strings.ToLower(out), strings.ToLower(s.want)) {
					t.Errorf("lab %s over %s: power %s: exit %d %q %q", m.Node, method[1], s.action, code, out, errs)
				}
			}
		}
		return
	}
	t.Fatalf("no BMC for r02-gpu01 in %s", line)
}

// TestPowerPXEAgainstIPMISim: `power pxe` against OpenIPMI's ipmi_sim,
// which acts on the boot device but reads it back with the valid bit
// clear (00 04 00 00 00), as real BMCs may: the command succeeds and says
// so, and ipmi_sim's own state holds the PXE boot.
func TestPowerPXEAgainstIPMISim(t *testing.T) {
	ipmisim.RequireOrSkip(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, err := ipmisim.Start(ctx, 1, ipmisim.Options{Username: "admin", Password: powerTestPassword})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("ipmisim: %v", err)
		}
	})
	sim := c.BMCs[0]
	t.Setenv("SLIPWAY_SECRET_BMC_ADMIN", powerTestPassword)
	args := []string{"pxe", "--node", "r01-cmp01", "--design", exampleSite, "--bmc", fmt.Sprintf("%s:%d", sim.Address, sim.Port)}
	code, out, errs := powerCLI(t, args...)
	if code != 0 || !strings.Contains(out, drivers.BootFlagsCleared) || !strings.Contains(out, "0004000000") {
		t.Fatalf("power pxe against ipmi_sim: exit %d, stdout %q, stderr %q; want success saying the valid bit reads back clear", code, out, errs)
	}
	if dev, err := sim.BootDevice(); err != nil || dev != "pxe" {
		t.Errorf("ipmi_sim's boot device after power pxe: %q %v, want pxe", dev, err)
	}
}
