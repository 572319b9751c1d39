package ipmi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	"github.com/slipway-dev/slipway/sim/bmc"
)

// Credentials of the sim/bmc BMCs: a distinctive password, so that the
// leak checks can't match an ordinary word.
const (
	simUser     = "admin"
	simPassword = "Qx7-sim-pw-41" // 13 bytes: fits IPMI v1.5's 16
)

// chassis is a bmc.Chassis that cycles like ipmi_sim does: off at once,
// on again a moment later.
type chassis struct {
	mu         sync.Mutex
	on         bool
	gen        int // bumped by every power change, so a late "on" of a cycle is dropped
	dev        string
	persistent bool
	efi        bool
	cycleDelay time.Duration
	cycles     atomic.Int32
	controls   atomic.Int32
}

func newChassis() *chassis { return &chassis{dev: "none", cycleDelay: 100 * time.Millisecond} }

func (c *chassis) PowerOn() {
	c.controls.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = true
	c.gen++
}

func (c *chassis) PowerOff() {
	c.controls.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	c.gen++
}

func (c *chassis) PowerCycle() {
	c.controls.Add(1)
	c.cycles.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	c.gen++
	g := c.gen
	time.AfterFunc(c.cycleDelay, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.gen == g {
			c.on = true
		}
	})
}

func (c *chassis) HardReset() {}

func (c *chassis) IsPoweredOn() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.on
}

func (c *chassis) SetBootDevice(dev string, persistent, efi bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dev, c.persistent, c.efi = dev, persistent, efi
}

func (c *chassis) BootDevice() (string, bool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dev, c.persistent, c.efi
}

func (c *chassis) boot() string {
	dev, p, e := c.BootDevice()
	return fmt.Sprintf("%s persistent=%v efi=%v", dev, p, e)
}

// testSettings are short enough for tests and still above a loaded CI
// machine's latency.
func testSettings() map[string]string {
	return map[string]string{
		SettingTimeout: "500ms", SettingRetries: "2", SettingBackoff: "20ms",
		SettingPollInterval: "50ms", SettingPowerWait: "5s",
	}
}

func newTestDriver(t testing.TB, extra map[string]string) *Driver {
	t.Helper()
	s := testSettings()
	for k, v := range extra {
		s[k] = v
	}
	d, err := NewDriver(drivers.Config{Settings: s})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// startSim starts a sim/bmc BMC and returns it with its chassis.
func startSim(t testing.TB, o bmc.Options) (*bmc.BMC, *chassis) {
	t.Helper()
	ch := newChassis()
	if o.Username == "" {
		o.Username, o.Password = simUser, simPassword
	}
	o.Addr = "127.0.0.1:0"
	copy(o.GUID[:], "slipway-ipmi-sim")
	b, err := bmc.Start(context.Background(), ch, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, ch
}

func simTarget(b *bmc.BMC, protocol string, suite int) drivers.BMC {
	return drivers.BMC{Node: "sim01", Address: "127.0.0.1", Port: b.Addr().Port, Protocol: protocol, CipherSuite: suite,
		Privilege: "administrator", Username: simUser, Password: drivers.NewSecret(simPassword)}
}

func TestConformanceSimBMC(t *testing.T) {
	for _, tc := range []struct {
		name, protocol string
		suite          int
	}{{"lanplus", "lanplus", 3}, {"lanplus-C17", "lanplus", 17}, {"lan", "lan", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := startSim(t, bmc.Options{})
			d := newTestDriver(t, nil)
			driverstest.RunOOB(t, func(t *testing.T) (drivers.OOB, drivers.BMC) {
				return d, simTarget(b, tc.protocol, tc.suite)
			})
		})
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestCipherSuitesSimBMC opens a session with every suite the driver offers.
func TestCipherSuitesSimBMC(t *testing.T) {
	b, _ := startSim(t, bmc.Options{})
	d := newTestDriver(t, nil)
	for _, id := range []int{1, 2, 3, 15, 16, 17} {
		info, err := d.Probe(ctxT(t, 10*time.Second), simTarget(b, "lanplus", id))
		if err != nil || !info.Authorized {
			t.Errorf("cipher suite %d: %+v, %v", id, info, err)
		}
	}
	for _, tc := range []struct {
		bmc  drivers.BMC
		want string
	}{
		{drivers.BMC{Address: "127.0.0.1", Protocol: "lanplus", CipherSuite: 12}, "cipher suite 12 is not supported"},
		{drivers.BMC{Address: "127.0.0.1", Protocol: "lanplus", CipherSuite: 8}, "cipher suite 8 is not supported"},
		{drivers.BMC{Address: "127.0.0.1", Protocol: "ipmi"}, `protocol "ipmi"`},
		{drivers.BMC{Address: "127.0.0.1", Privilege: "root"}, `privilege "root"`},
		{drivers.BMC{Address: ""}, "no address"},
		{drivers.BMC{Address: "127.0.0.1", Password: drivers.NewSecret(strings.Repeat("p", 21))}, "longer than 20 bytes"},
		{drivers.BMC{Address: "127.0.0.1", Protocol: "lan", Password: drivers.NewSecret(strings.Repeat("p", 17))}, "longer than 16 bytes"},
	} {
		_, err := d.PowerStatus(ctxT(t, time.Second), tc.bmc)
		if err == nil || drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a permanent error with %q", tc.bmc, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "ppppp") {
			t.Errorf("error reveals the password: %v", err)
		}
	}
}

// TestBootFlagsSimBMC checks the raw parameter 5 flags reach the chassis.
func TestBootFlagsSimBMC(t *testing.T) {
	for _, proto := range []string{"lanplus", "lan"} {
		b, ch := startSim(t, bmc.Options{})
		d := newTestDriver(t, nil)
		target := simTarget(b, proto, 0)
		for _, tc := range []struct {
			dev  drivers.BootDevice
			want string
		}{
			{drivers.BootDevice{Device: "pxe"}, "pxe persistent=false efi=false"},
			{drivers.BootDevice{Device: "pxe", Persistent: true, EFI: true}, "pxe persistent=true efi=true"},
			{drivers.BootDevice{Device: "disk", Persistent: true}, "disk persistent=true efi=false"},
			{drivers.BootDevice{Device: "disk", EFI: true}, "disk persistent=false efi=true"},
		} {
			r, err := d.SetBootDevice(ctxT(t, 10*time.Second), target, tc.dev)
			if err != nil || r.Status != drivers.StatusDone {
				t.Fatalf("%s %+v: %+v %v", proto, tc.dev, r, err)
			}
			if got := ch.boot(); got != tc.want {
				t.Errorf("%s %+v: chassis has %s, want %s", proto, tc.dev, got, tc.want)
			}
			r, err = d.SetBootDevice(ctxT(t, 10*time.Second), target, tc.dev)
			if err != nil || r.Status != drivers.StatusDone || !strings.Contains(r.Message, "already") {
				t.Errorf("%s %+v again: %+v %v, want Done already", proto, tc.dev, r, err)
			}
		}
		if _, err := d.SetBootDevice(ctxT(t, time.Second), target, drivers.BootDevice{Device: "cdrom"}); drivers.Classify(err) != drivers.Permanent {
			t.Errorf("cdrom: %v, want permanent", err)
		}
	}
}

// stubbornChassis boots from disk whatever override it is given: its BMC
// reads back another device than was set.
type stubbornChassis struct{ *chassis }

func (c stubbornChassis) SetBootDevice(_ string, persistent, efi bool) {
	c.chassis.SetBootDevice("disk", persistent, efi)
}

// TestBootDeviceNotKeptSimBMC: a BMC that reads back another device than
// it was given fails SetBootDevice with the transient ErrBootNotKept
// naming the bytes; only the device counts (the valid bit may be clear).
func TestBootDeviceNotKeptSimBMC(t *testing.T) {
	ch := stubbornChassis{newChassis()}
	b, err := bmc.Start(context.Background(), ch, bmc.Options{Addr: "127.0.0.1:0", Username: simUser, Password: simPassword})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	d := newTestDriver(t, nil)
	for _, proto := range []string{"lanplus", "lan"} {
		_, err := d.SetBootDevice(ctxT(t, 10*time.Second), simTarget(b, proto, 3), drivers.BootDevice{Device: "pxe", EFI: true})
		if !errors.Is(err, drivers.ErrBootNotKept) || drivers.Classify(err) != drivers.Transient || !strings.Contains(err.Error(), "reads back boot flags a008") {
			t.Errorf("%s: %v, want a transient ErrBootNotKept naming the flags read back (disk)", proto, err)
		}
		if dev, _, _ := ch.BootDevice(); dev != "disk" {
			t.Fatalf("the chassis boots %s", dev)
		}
	}
}

// TestPowerCycleSimBMC: off -> power on; on -> power cycle; both confirmed.
func TestPowerCycleSimBMC(t *testing.T) {
	for _, proto := range []string{"lanplus", "lan"} {
		b, ch := startSim(t, bmc.Options{})
		d := newTestDriver(t, nil)
		target := simTarget(b, proto, 0)
		r, err := d.PowerCycle(ctxT(t, 10*time.Second), target)
		if err != nil || r.Status != drivers.StatusDone || !strings.Contains(r.Message, "was off") || !ch.IsPoweredOn() || ch.cycles.Load() != 0 {
			t.Fatalf("%s cycle from off: %+v %v (on=%v cycles=%d)", proto, r, err, ch.IsPoweredOn(), ch.cycles.Load())
		}
		start := time.Now()
		r, err = d.PowerCycle(ctxT(t, 10*time.Second), target)
		if err != nil || r.Status != drivers.StatusDone || !strings.Contains(r.Message, "power cycled") || ch.cycles.Load() != 1 {
			t.Fatalf("%s cycle from on: %+v %v (cycles=%d)", proto, r, err, ch.cycles.Load())
		}
		if el := time.Since(start); el < ch.cycleDelay {
			t.Errorf("%s: cycle confirmed after %v, before the chassis came back (%v)", proto, el, ch.cycleDelay)
		}
		if !ch.IsPoweredOn() {
			t.Errorf("%s: off after a confirmed cycle", proto)
		}
	}
}

// TestPowerCyclePending: a cycle that outlasts powerWait answers
// InProgress, and the next call waits for the same cycle rather than
// cycling again.
func TestPowerCyclePending(t *testing.T) {
	b, ch := startSim(t, bmc.Options{})
	ch.cycleDelay = 700 * time.Millisecond
	ch.PowerOn()
	d := newTestDriver(t, map[string]string{SettingPowerWait: "200ms"})
	target := simTarget(b, "lanplus", 3)
	r, err := d.PowerCycle(ctxT(t, 10*time.Second), target)
	if err != nil || r.Status != drivers.StatusInProgress || !r.Valid() {
		t.Fatalf("first call: %+v %v, want InProgress", r, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for r.Status == drivers.StatusInProgress && time.Now().Before(deadline) {
		time.Sleep(r.RetryAfter)
		r, err = d.PowerCycle(ctxT(t, 10*time.Second), target)
		if err != nil {
			t.Fatal(err)
		}
	}
	if r.Status != drivers.StatusDone || ch.cycles.Load() != 1 {
		t.Errorf("%+v after polling, %d cycles; want Done after 1 cycle", r, ch.cycles.Load())
	}
}

func TestPowerCycleTimeout(t *testing.T) {
	b, ch := startSim(t, bmc.Options{})
	ch.cycleDelay = time.Hour // never comes back
	ch.PowerOn()
	d := newTestDriver(t, map[string]string{SettingPowerWait: "100ms", SettingCycleTimeout: "300ms"})
	target := simTarget(b, "lanplus", 3)
	var r drivers.Result
	var err error
	for range 20 {
		r, err = d.PowerCycle(ctxT(t, 10*time.Second), target)
		if err != nil || r.Status != drivers.StatusInProgress {
			break
		}
		time.Sleep(r.RetryAfter)
	}
	if err != nil || r.Status != drivers.StatusFailed || !r.Valid() || ch.cycles.Load() != 1 {
		t.Errorf("%+v %v (%d cycles), want Failed after one cycle", r, err, ch.cycles.Load())
	}
}

// TestCredentialsSimBMC: wrong password and wrong user over both
// protocols are Permanent with the exact message; for lanplus from the
// BMC's answer, not a timeout (its driver's one attempt lasts 5 s, and
// the rejection comes well before).
func TestCredentialsSimBMC(t *testing.T) {
	b, _ := startSim(t, bmc.Options{})
	lan := newTestDriver(t, map[string]string{SettingTimeout: "200ms", SettingRetries: "1"})
	lanplus := newTestDriver(t, map[string]string{SettingTimeout: "5s", SettingRetries: "0"})
	for _, proto := range []string{"lanplus", "lan"} {
		d := lan
		if proto == "lanplus" {
			d = lanplus
		}
		for _, tc := range []struct{ user, pass string }{{simUser, "wrong-pw-93"}, {"nobody", simPassword}} {
			target := simTarget(b, proto, 3)
			target.Username, target.Password = tc.user, drivers.NewSecret(tc.pass)
			start := time.Now()
			info, err := d.Probe(ctxT(t, 10*time.Second), target)
			want := fmt.Sprintf("BMC 127.0.0.1:%d rejected the credentials for user %s", b.Addr().Port, tc.user)
			var ae *AuthError
			if err == nil || drivers.Classify(err) != drivers.Permanent || !errors.As(err, &ae) || ae.Error() != want {
				t.Errorf("%s %s: %v, want permanent %q", proto, tc.user, err, want)
			}
			if info.Authorized || !info.Reachable {
				t.Errorf("%s %s: %+v, want reachable, unauthorized", proto, tc.user, info)
			}
			if err != nil && (strings.Contains(err.Error(), tc.pass) || strings.Contains(fmt.Sprintf("%+v", info), tc.pass)) {
				t.Errorf("password revealed: %v %+v", err, info)
			}
			if el := time.Since(start); proto == "lanplus" && el >= 4*time.Second {
				t.Errorf("%s %s: rejection took %v: a timeout, not the BMC's answer", proto, tc.user, el)
			}
		}
	}
	if s := b.Stats(); s.ActiveSessions != 0 {
		t.Errorf("sessions left open: %v", s)
	}
}

// TestUnreachable: nothing listens (ICMP port unreachable) and a BMC that
// drops everything: Transient, within the context's deadline.
func TestUnreachable(t *testing.T) {
	d := newTestDriver(t, map[string]string{SettingTimeout: "2s", SettingRetries: "3"})
	b, _ := startSim(t, bmc.Options{Unreachable: func() bool { return true }})
	silent := simTarget(b, "lanplus", 3)
	closed := simTarget(b, "lanplus", 3)
	closed.Port = freeUDPPort(t)
	for name, target := range map[string]drivers.BMC{"silent": silent, "closed port": closed} {
		for _, proto := range []string{"lanplus", "lan"} {
			target.Protocol = proto
			start := time.Now()
			ctx := ctxT(t, 700*time.Millisecond)
			_, err := d.PowerStatus(ctx, target)
			el := time.Since(start)
			if err == nil || drivers.Classify(err) != drivers.Transient {
				t.Errorf("%s %s: %v, want transient", name, proto, err)
			}
			// Without the context's deadline the first attempt alone would
			// last the driver's 2 s timeout: ending before that is the
			// deadline's doing, however loaded the machine (CI saw 1.0 s).
			if el >= 1900*time.Millisecond {
				t.Errorf("%s %s: returned after %v, deadline 700ms (one attempt is 2 s)", name, proto, el)
			}
			t.Logf("%s %s: %v after %v", name, proto, err, el.Round(time.Millisecond))
		}
	}
	// Without a deadline: the retries bound the call.
	d = newTestDriver(t, map[string]string{SettingTimeout: "100ms", SettingRetries: "2", SettingBackoff: "10ms"})
	start := time.Now()
	_, err := d.PowerStatus(context.Background(), silent)
	var nr *noReplyError
	if !errors.As(err, &nr) || nr.attempts != 3 || drivers.Classify(err) != drivers.Transient {
		t.Errorf("no deadline: %v, want no reply after 3 attempts", err)
	}
	if el := time.Since(start); el < 300*time.Millisecond || el > 2*time.Second {
		t.Errorf("no deadline: %v", el)
	}
}

func freeUDPPort(t testing.TB) int {
	b, _ := startSim(t, bmc.Options{})
	port := b.Addr().Port
	_ = b.Close()
	return port
}

// gauge counts calls in progress and remembers the most at once.
type gauge struct {
	mu       sync.Mutex
	cur, max int
}

func (g *gauge) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cur++
	g.max = max(g.max, g.cur)
}

func (g *gauge) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cur--
}

func (g *gauge) peak() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.max
}

// slowChassis answers power status slowly and counts how many status
// reads run at once, per BMC and over all BMCs.
type slowChassis struct {
	*chassis
	one, all *gauge
}

func (c slowChassis) IsPoweredOn() bool {
	c.one.enter()
	c.all.enter()
	defer c.one.leave()
	defer c.all.leave()
	time.Sleep(30 * time.Millisecond)
	return c.chassis.IsPoweredOn()
}

// TestOneCallPerBMCAndGlobalLimit: calls to one BMC never overlap, and
// no more than maxConcurrent calls run at once over all BMCs.
func TestOneCallPerBMCAndGlobalLimit(t *testing.T) {
	const bmcs, callsEach = 4, 5
	all := &gauge{}
	var ones []*gauge
	var targets []drivers.BMC
	for range bmcs {
		one := &gauge{}
		ch := slowChassis{chassis: newChassis(), one: one, all: all}
		var o bmc.Options
		o.Addr, o.Username, o.Password = "127.0.0.1:0", simUser, simPassword
		b, err := bmc.Start(context.Background(), ch, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		ones = append(ones, one)
		targets = append(targets, simTarget(b, "lanplus", 3))
	}
	d := newTestDriver(t, map[string]string{SettingMaxConcurrent: "2", SettingTimeout: "2s"})
	var wg sync.WaitGroup
	for _, tg := range targets {
		for range callsEach {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := d.PowerStatus(ctxT(t, 30*time.Second), tg); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	for i, one := range ones {
		if one.peak() != 1 {
			t.Errorf("BMC %d: %d calls at once, want 1", i, one.peak())
		}
	}
	if p := all.peak(); p != 2 {
		t.Errorf("%d calls at once over all BMCs, want 2 (maxConcurrent)", p)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.locks) != 0 {
		t.Errorf("%d per-BMC locks left", len(d.locks))
	}
}

// TestOperatorPrivilegeSimBMC: an operator session may power and set the
// boot device.
func TestOperatorPrivilegeSimBMC(t *testing.T) {
	b, ch := startSim(t, bmc.Options{})
	d := newTestDriver(t, nil)
	for _, proto := range []string{"lanplus", "lan"} {
		tg := simTarget(b, proto, 3)
		tg.Privilege = "operator"
		if r, err := d.PowerOn(ctxT(t, 10*time.Second), tg); err != nil || r.Status != drivers.StatusDone {
			t.Errorf("%s PowerOn: %+v %v", proto, r, err)
		}
		if r, err := d.SetBootDevice(ctxT(t, 10*time.Second), tg, drivers.BootDevice{Device: "disk"}); err != nil || r.Status != drivers.StatusDone {
			t.Errorf("%s SetBootDevice: %+v %v", proto, r, err)
		}
		if r, err := d.PowerOff(ctxT(t, 10*time.Second), tg); err != nil || r.Status != drivers.StatusDone {
			t.Errorf("%s PowerOff: %+v %v", proto, r, err)
		}
	}
	if ch.IsPoweredOn() {
		t.Error("on")
	}
}
