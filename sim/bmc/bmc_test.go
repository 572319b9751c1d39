package bmc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ipmi "github.com/vmware/goipmi"

	"github.com/slipway-dev/slipway/internal/testtool"
)

// fakeChassis records what the BMC asked of it.
type fakeChassis struct {
	mu         sync.Mutex
	on         bool
	dev        string
	persistent bool
	efi        bool
	cycles     int
	resets     int
	delay      time.Duration // added to every power call
}

func newFakeChassis() *fakeChassis { return &fakeChassis{dev: "none"} }

func (c *fakeChassis) setDelay(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.delay = d
}

func (c *fakeChassis) wait() {
	c.mu.Lock()
	d := c.delay
	c.mu.Unlock()
	time.Sleep(d)
}

func (c *fakeChassis) PowerOn() {
	c.wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = true
}

func (c *fakeChassis) PowerOff() {
	c.wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
}

func (c *fakeChassis) PowerCycle() {
	c.wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = true
	c.cycles++
}

func (c *fakeChassis) HardReset() {
	c.wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resets++
}

func (c *fakeChassis) IsPoweredOn() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.on
}

func (c *fakeChassis) SetBootDevice(dev string, persistent, efi bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dev, c.persistent, c.efi = dev, persistent, efi
}

func (c *fakeChassis) BootDevice() (string, bool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dev, c.persistent, c.efi
}

func (c *fakeChassis) boot() string {
	d, p, e := c.BootDevice()
	return fmt.Sprintf("%s persistent=%v efi=%v", d, p, e)
}

var testGUID = [16]byte{0xa1, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xa1, 0x23, 0x45, 0x67, 0, 0, 0x23, 0x29}

func startBMC(t testing.TB, mod func(*Options)) (*BMC, *fakeChassis) {
	t.Helper()
	ch := newFakeChassis()
	o := Options{Addr: "127.0.0.1:0", Username: "admin", Password: "secret", GUID: testGUID}
	if mod != nil {
		mod(&o)
	}
	b, err := Start(context.Background(), ch, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, ch
}

func needIpmitool(t *testing.T) {
	t.Helper()
	testtool.Need(t, "ipmitool", "ipmitool")
}

type toolResult struct {
	out  string
	err  error
	took time.Duration
}

// ipmitool runs ipmitool against b. iface is "lan" or "lanplus"; extra
// arguments (e.g. "-C", "3") go before the command.
func ipmitool(t *testing.T, b *BMC, iface, user, pass string, args ...string) toolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	full := []string{"-I", iface, "-H", "127.0.0.1", "-p", strconv.Itoa(b.Addr().Port),
		"-U", user, "-P", pass, "-R", "1", "-N", "1"}
	full = append(full, args...)
	start := time.Now()
	out, err := exec.CommandContext(ctx, "ipmitool", full...).CombinedOutput()
	return toolResult{string(out), err, time.Since(start)}
}

// mustTool runs ipmitool and fails the test when it fails.
func mustTool(t *testing.T, b *BMC, iface string, args ...string) string {
	t.Helper()
	r := ipmitool(t, b, iface, "admin", "secret", args...)
	if r.err != nil {
		t.Fatalf("ipmitool -I %s %v: %v\n%s", iface, args, r.err, r.out)
	}
	return r.out
}

func TestIpmitoolChassis(t *testing.T) {
	needIpmitool(t)
	for _, tc := range []struct {
		name  string
		iface string
		extra []string
	}{
		{"lanplus-C3", "lanplus", []string{"-C", "3"}},
		{"lanplus-C17", "lanplus", []string{"-C", "17"}},
		{"lan-MD5", "lan", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, ch := startBMC(t, nil)
			run := func(args ...string) string {
				return mustTool(t, b, tc.iface, append(append([]string{}, tc.extra...), args...)...)
			}
			if out := run("chassis", "power", "status"); !strings.Contains(out, "Chassis Power is off") {
				t.Fatalf("power status: %q", out)
			}
			run("chassis", "power", "on")
			if !ch.IsPoweredOn() {
				t.Fatal("power on did not reach the chassis")
			}
			if out := run("chassis", "power", "status"); !strings.Contains(out, "Chassis Power is on") {
				t.Fatalf("power status: %q", out)
			}
			run("chassis", "power", "off")
			if ch.IsPoweredOn() {
				t.Fatal("power off did not reach the chassis")
			}
			run("chassis", "power", "cycle")
			run("chassis", "power", "reset")
			ch.mu.Lock()
			cycles, resets := ch.cycles, ch.resets
			ch.mu.Unlock()
			if cycles != 1 || resets != 1 {
				t.Fatalf("cycles=%d resets=%d, want 1 1", cycles, resets)
			}
			run("chassis", "power", "soft")
			if ch.IsPoweredOn() {
				t.Fatal("soft shutdown left the chassis on")
			}

			run("chassis", "bootdev", "pxe")
			if got := ch.boot(); got != "pxe persistent=false efi=false" {
				t.Fatalf("bootdev pxe: %s", got)
			}
			run("chassis", "bootdev", "disk", "options=persistent,efiboot")
			if got := ch.boot(); got != "disk persistent=true efi=true" {
				t.Fatalf("bootdev disk: %s", got)
			}
			run("chassis", "bootdev", "cdrom")
			if got := ch.boot(); got != "cdrom persistent=false efi=false" {
				t.Fatalf("bootdev cdrom: %s", got)
			}
			run("chassis", "bootdev", "bios")
			if got := ch.boot(); got != "bios persistent=false efi=false" {
				t.Fatalf("bootdev bios: %s", got)
			}
			ch.SetBootDevice("pxe", true, true)
			if out := run("chassis", "bootparam", "get", "5"); !strings.Contains(out, "Force PXE") ||
				!strings.Contains(out, "Options apply to all future boots") || !strings.Contains(out, "EFI") {
				t.Fatalf("bootparam get 5: %s", out)
			}

			out := strings.Join(strings.Fields(run("mc", "info")), " ")
			for _, want := range []string{"Device ID : 32", "IPMI Version : 2.0", "Chassis Device"} {
				if !strings.Contains(out, want) {
					t.Fatalf("mc info lacks %q:\n%s", want, out)
				}
			}
			if out := run("mc", "guid"); !strings.Contains(strings.ToLower(out), "system guid") {
				t.Fatalf("mc guid: %s", out)
			}
			r := ipmitool(t, b, tc.iface, "admin", "secret", append(append([]string{}, tc.extra...), "raw", "0x06", "0x99")...)
			if r.err == nil || !strings.Contains(r.out, "rsp=0xc1") {
				t.Fatalf("unknown command: %v %s", r.err, r.out)
			}
		})
	}
}

// TestServe keeps a BMC up for manual experiments: BMC_SERVE=60 go test -run TestServe -v
func TestServe(t *testing.T) {
	secs, _ := strconv.Atoi(os.Getenv("BMC_SERVE"))
	if secs == 0 {
		t.Skip("set BMC_SERVE=seconds")
	}
	b, _ := startBMC(t, func(o *Options) { o.Addr = "127.0.0.1:9623" })
	t.Logf("serving on %v", b.Addr())
	time.Sleep(time.Duration(secs) * time.Second)
	t.Log(b.Stats())
}

func TestIpmitoolCipherSuites(t *testing.T) {
	needIpmitool(t)
	b, _ := startBMC(t, nil)
	for _, c := range []string{"1", "2", "3", "6", "7", "8", "15", "16", "17", ""} {
		name := "C" + c
		args := []string{"chassis", "power", "status"}
		if c == "" {
			// No -C: ipmitool asks Get Channel Cipher Suites and picks.
			name = "default"
		} else {
			args = append([]string{"-C", c}, args...)
		}
		t.Run(name, func(t *testing.T) {
			r := ipmitool(t, b, "lanplus", "admin", "secret", args...)
			if r.err != nil || !strings.Contains(r.out, "Chassis Power is off") {
				t.Fatalf("%v: %s", r.err, r.out)
			}
			t.Logf("%v", r.took)
		})
	}
	// Cipher suite 0 (no authentication) is refused unless enabled.
	r := ipmitool(t, b, "lanplus", "admin", "secret", "-C", "0", "chassis", "power", "status")
	if r.err == nil {
		t.Fatalf("cipher suite 0 accepted by default: %s", r.out)
	}
	b0, _ := startBMC(t, func(o *Options) { o.AllowCipherZero = true })
	r = ipmitool(t, b0, "lanplus", "admin", "secret", "-C", "0", "chassis", "power", "status")
	if r.err != nil || !strings.Contains(r.out, "Chassis Power is off") {
		t.Fatalf("cipher suite 0 when allowed: %v: %s", r.err, r.out)
	}
}

func TestIpmitoolLanAuthTypes(t *testing.T) {
	needIpmitool(t)
	b, _ := startBMC(t, nil)
	// ipmitool as packaged by Debian has no MD2 (TestV15AuthTypes covers it).
	for _, a := range []string{"MD5", "PASSWORD"} {
		r := ipmitool(t, b, "lan", "admin", "secret", "-A", a, "chassis", "power", "status")
		if r.err != nil || !strings.Contains(r.out, "Chassis Power is off") {
			t.Fatalf("-A %s: %v: %s", a, r.err, r.out)
		}
	}
	if r := ipmitool(t, b, "lan", "admin", "secret", "-A", "NONE", "chassis", "power", "status"); r.err == nil {
		t.Fatalf("-A NONE accepted by default: %s", r.out)
	}
	b0, _ := startBMC(t, func(o *Options) { o.AllowCipherZero = true })
	if r := ipmitool(t, b0, "lan", "admin", "secret", "-A", "NONE", "chassis", "power", "status"); r.err != nil {
		t.Fatalf("-A NONE when allowed: %v: %s", r.err, r.out)
	}
}

func TestIpmitoolBadCredentials(t *testing.T) {
	needIpmitool(t)
	b, _ := startBMC(t, nil)
	for _, tc := range []struct{ iface, user, pass string }{
		{"lanplus", "admin", "wrong"},
		{"lanplus", "admin", "secre"},
		{"lanplus", "nobody", "secret"},
		{"lan", "admin", "wrong"},
		{"lan", "nobody", "secret"},
	} {
		t.Run(tc.iface+"-"+tc.user+"-"+tc.pass, func(t *testing.T) {
			args := []string{"chassis", "power", "on"}
			if tc.iface == "lanplus" {
				args = append([]string{"-C", "3"}, args...)
			}
			r := ipmitool(t, b, tc.iface, tc.user, tc.pass, args...)
			if r.err == nil {
				t.Fatalf("accepted: %s", r.out)
			}
			if !strings.Contains(r.out, "Unable to establish") {
				t.Errorf("unexpected output: %s", r.out)
			}
			if r.took > 2*time.Second {
				t.Errorf("took %v", r.took)
			}
			t.Logf("%v: %s", r.took, strings.TrimSpace(r.out))
		})
	}
	// The lanplus wrong passwords are not seen by the BMC: ipmitool stops
	// after RAKP 2 (see Stats.HandshakesAbandoned).
	if s := b.Stats(); s.AuthFailures != 3 || s.SessionsOpened != 0 || s.Commands["Chassis Control"] != 0 {
		t.Fatalf("stats: %v", s)
	}
}

func TestIpmitoolParallelBMCs(t *testing.T) {
	needIpmitool(t)
	const n = 20
	bmcs := make([]*BMC, n)
	chs := make([]*fakeChassis, n)
	for i := range bmcs {
		bmcs[i], chs[i] = startBMC(t, nil)
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range bmcs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// Twenty ipmitool processes at once on a small (race-enabled)
			// machine: allow retransmissions rather than -R 1 -N 1.
			iface, extra := "lanplus", []string{"-C", "3", "-R", "4", "-N", "2"}
			if i%4 == 3 {
				iface, extra = "lan", []string{"-R", "4", "-N", "2"}
			}
			for _, args := range [][]string{
				{"chassis", "power", "on"},
				{"chassis", "bootdev", "pxe"},
				{"chassis", "power", "status"},
			} {
				r := ipmitool(t, bmcs[i], iface, "admin", "secret", append(append([]string{}, extra...), args...)...)
				if r.err != nil {
					errs <- fmt.Errorf("bmc %d %v: %v: %s", i, args, r.err, r.out)
					return
				}
				if args[1] == "power" && args[2] == "status" && !strings.Contains(r.out, "is on") {
					errs <- fmt.Errorf("bmc %d: %s", i, r.out)
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, ch := range chs {
		if !ch.IsPoweredOn() || ch.boot() != "pxe persistent=false efi=false" {
			t.Errorf("bmc %d: on=%v boot=%s", i, ch.IsPoweredOn(), ch.boot())
		}
	}
	t.Logf("%d BMCs x 3 ipmitool calls in %v", n, time.Since(start))
}

func TestFaultInjection(t *testing.T) {
	needIpmitool(t)
	var down sync.Mutex
	unreachable := true
	b, _ := startBMC(t, func(o *Options) {
		o.Unreachable = func() bool { down.Lock(); defer down.Unlock(); return unreachable }
	})
	r := ipmitool(t, b, "lanplus", "admin", "secret", "-C", "3", "chassis", "power", "status")
	if r.err == nil {
		t.Fatalf("unreachable BMC answered: %s", r.out)
	}
	if s := b.Stats(); s.Packets == 0 || s.Dropped != s.Packets || s.Replies != 0 {
		t.Fatalf("stats while unreachable: %v", s)
	}
	down.Lock()
	unreachable = false
	down.Unlock()
	mustTool(t, b, "lanplus", "-C", "3", "chassis", "power", "status")

	slow, _ := startBMC(t, func(o *Options) { o.Latency = 100 * time.Millisecond })
	r = ipmitool(t, slow, "lanplus", "admin", "secret", "-C", "3", "chassis", "power", "status")
	if r.err != nil {
		t.Fatalf("%v: %s", r.err, r.out)
	}
	// Auth caps, open session, RAKP 1, RAKP 3, set privilege, status, close.
	if r.took < 700*time.Millisecond {
		t.Fatalf("latency not applied: %v", r.took)
	}
	t.Logf("with 100ms latency: %v", r.took)
}

func TestGoipmi(t *testing.T) {
	b, ch := startBMC(t, nil)
	conn := &ipmi.Connection{Hostname: "127.0.0.1", Port: b.Addr().Port,
		Username: "admin", Password: "secret", Interface: "lan"}
	c, err := ipmi.NewClient(conn)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.Open(); err != nil {
		t.Fatal(err)
	}
	t.Logf("open: %v", time.Since(start))
	if err := c.Control(ipmi.ControlPowerUp); err != nil {
		t.Fatal(err)
	}
	if !ch.IsPoweredOn() {
		t.Fatal("chassis not on")
	}
	status := &ipmi.ChassisStatusResponse{}
	start = time.Now()
	if err := c.Send(&ipmi.Request{NetworkFunction: ipmi.NetworkFunctionChassis,
		Command: ipmi.CommandChassisStatus, Data: &ipmi.ChassisStatusRequest{}}, status); err != nil {
		t.Fatal(err)
	}
	t.Logf("chassis status: %v", time.Since(start))
	if !status.IsSystemPowerOn() {
		t.Fatalf("status says off: %+v", status)
	}
	if err := c.SetBootDevice(ipmi.BootDevicePxe); err != nil {
		t.Fatal(err)
	}
	if got := ch.boot(); got != "pxe persistent=false efi=false" {
		t.Fatalf("boot: %s", got)
	}
	// Persistent EFI needs a raw Set System Boot Options, parameter 5.
	if err := c.Send(&ipmi.Request{NetworkFunction: ipmi.NetworkFunctionChassis,
		Command: ipmi.CommandSetSystemBootOptions,
		Data:    &ipmi.SetSystemBootOptionsRequest{Param: ipmi.BootParamBootFlags, Data: []uint8{0xe0, 0x08, 0, 0, 0}}},
		&ipmi.SetSystemBootOptionsResponse{}); err != nil {
		t.Fatal(err)
	}
	if got := ch.boot(); got != "disk persistent=true efi=true" {
		t.Fatalf("boot: %s", got)
	}
	opts := &ipmi.SystemBootOptionsResponse{}
	if err := c.Send(&ipmi.Request{NetworkFunction: ipmi.NetworkFunctionChassis,
		Command: ipmi.CommandGetSystemBootOptions,
		Data:    &ipmi.SystemBootOptionsRequest{Param: ipmi.BootParamBootFlags}}, opts); err != nil {
		t.Fatal(err)
	}
	if opts.BootDeviceSelector() != ipmi.BootDeviceDisk || opts.Data[0] != 0xe0 {
		t.Fatalf("boot options: %+v", opts)
	}
	id, err := c.DeviceID()
	if err != nil || id.IPMIVersion != 0x02 {
		t.Fatalf("device id: %+v %v", id, err)
	}
	if err := c.Control(ipmi.ControlPowerDown); err != nil || ch.IsPoweredOn() {
		t.Fatalf("power down: %v on=%v", err, ch.IsPoweredOn())
	}
	// An unknown command answers 0xC1.
	err = c.Send(&ipmi.Request{NetworkFunction: ipmi.NetworkFunctionApp, Command: 0x99,
		Data: &ipmi.DeviceIDRequest{}}, &ipmi.DeviceIDResponse{})
	if err != ipmi.CompletionCode(0xc1) {
		t.Fatalf("unknown command: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if s := b.Stats(); s.SessionsOpened != 1 || s.SessionsClosed != 1 || s.Commands["Chassis Control"] != 2 {
		t.Fatalf("stats: %v", s)
	}

	// A wrong user name fails at once (Get Session Challenge: 0x81).
	bad, _ := ipmi.NewClient(&ipmi.Connection{Hostname: "127.0.0.1", Port: b.Addr().Port,
		Username: "nobody", Password: "secret", Interface: "lan"})
	if err := bad.Open(); err == nil {
		t.Fatal("wrong user accepted")
	} else {
		t.Logf("wrong user: %v", err)
	}
}

func TestShutdown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b, err := Start(ctx, newFakeChassis(), Options{Addr: "127.0.0.1:0", Username: "admin", Password: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	addr := b.Addr()
	cancel()
	done := make(chan struct{})
	go func() { _ = b.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not return after the context ended")
	}
	_ = b.Close() // twice is fine
	// The port is free again.
	b2, err := Start(context.Background(), newFakeChassis(), Options{Addr: addr.String(), Username: "a", Password: "b"})
	if err != nil {
		t.Fatal(err)
	}
	_ = b2.Close()
	if _, err := Start(context.Background(), nil, Options{}); err == nil {
		t.Fatal("nil chassis accepted")
	}
}

// TestGoipmiWrongPassword: goipmi's lan transport has a fixed 5 s read
// timeout and the BMC drops an Activate Session whose auth code is wrong.
func TestGoipmiWrongPassword(t *testing.T) {
	t.Parallel()
	b, _ := startBMC(t, nil)
	c, err := ipmi.NewClient(&ipmi.Connection{Hostname: "127.0.0.1", Port: b.Addr().Port,
		Username: "admin", Password: "wrong", Interface: "lan"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.Open(); err == nil {
		t.Fatal("wrong password accepted")
	} else {
		t.Logf("after %v: %v", time.Since(start), err)
	}
	if s := b.Stats(); s.AuthFailures != 1 || s.SessionsOpened != 0 {
		t.Fatalf("stats: %v", s)
	}
}
