package ipmi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	"github.com/slipway-dev/slipway/internal/ipmisim"
)

// Integration tests against OpenIPMI's ipmi_sim (internal/ipmisim). They
// skip where ipmi_sim is missing, and fail instead when CI is set.

const (
	realUser     = "admin"
	realPassword = "Zr8-ipmisim-pw-5" // 16 bytes: fits IPMI v1.5
)

func startIPMISim(t testing.TB, n int) *ipmisim.Cluster {
	t.Helper()
	return startIPMISimWith(t, n, realPassword)
}

func startIPMISimWith(t testing.TB, n int, password string) *ipmisim.Cluster {
	t.Helper()
	ipmisim.RequireOrSkip(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := ipmisim.Start(ctx, n, ipmisim.Options{Username: realUser, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("ipmisim: %v", err)
		}
	})
	return c
}

func realTarget(b *ipmisim.BMC, protocol string, suite int) drivers.BMC {
	return drivers.BMC{Node: b.Name, Address: b.Address, Port: b.Port, Protocol: protocol, CipherSuite: suite,
		Privilege: "administrator", Username: b.Username, Password: drivers.NewSecret(b.Password)}
}

// realSettings: ipmi_sim answers in milliseconds; a wrong IPMI v1.5
// password is only seen as silence, so keep the timeout short.
func realDriver(t testing.TB, extra map[string]string) *Driver {
	s := map[string]string{SettingTimeout: "1s", SettingRetries: "2", SettingBackoff: "50ms", SettingPollInterval: "100ms", SettingPowerWait: "10s"}
	for k, v := range extra {
		s[k] = v
	}
	d, err := NewDriver(drivers.Config{Settings: s})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestConformanceIPMISim(t *testing.T) {
	c := startIPMISim(t, 2)
	for i, tc := range []struct {
		name, protocol string
		suite          int
	}{{"lanplus-C3", "lanplus", 3}, {"lan", "lan", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			d := realDriver(t, nil)
			driverstest.RunOOB(t, func(t *testing.T) (drivers.OOB, drivers.BMC) {
				return d, realTarget(c.BMCs[i], tc.protocol, tc.suite)
			})
		})
	}
}

// TestIPMISimOperations runs every operation over both protocols and
// checks the chassis state ipmi_sim's chassis_control program stored.
func TestIPMISimOperations(t *testing.T) {
	c := startIPMISim(t, 2)
	for i, proto := range []string{"lanplus", "lan"} {
		t.Run(proto, func(t *testing.T) {
			b := c.BMCs[i]
			d := realDriver(t, nil)
			target := realTarget(b, proto, 3)
			ctx := ctxT(t, time.Minute)

			info, err := d.Probe(ctx, target)
			if err != nil || !info.Reachable || !info.Authorized || info.Firmware == "" || info.Description == "" {
				t.Fatalf("Probe: %+v %v", info, err)
			}
			t.Logf("Probe: %+v", info)

			wantPower := func(want bool) {
				t.Helper()
				p, err := d.PowerStatus(ctx, target)
				if err != nil || p != onOff(want) {
					t.Fatalf("PowerStatus: %q %v, want %v", p, err, onOff(want))
				}
				if on, err := b.Power(); err != nil || on != want {
					t.Fatalf("ipmi_sim power: %v %v, want %v", on, err, want)
				}
			}
			wantPower(false)
			done := func(what string, r drivers.Result, err error, msg string) {
				t.Helper()
				if err != nil || r.Status != drivers.StatusDone || !strings.Contains(r.Message, msg) {
					t.Fatalf("%s: %+v %v, want Done %q", what, r, err, msg)
				}
			}

			r, err := d.PowerCycle(ctx, target) // from off: power on
			done("PowerCycle from off", r, err, "was off")
			wantPower(true)
			start := time.Now()
			r, err = d.PowerCycle(ctx, target) // from on: ipmi_sim is off for ~1 s
			done("PowerCycle from on", r, err, "power cycled")
			if el := time.Since(start); el < 500*time.Millisecond {
				t.Errorf("PowerCycle from on confirmed after %v: before ipmi_sim powered back on", el)
			}
			wantPower(true)
			r, err = d.PowerOn(ctx, target)
			done("PowerOn when on", r, err, "already on")
			r, err = d.PowerOff(ctx, target)
			done("PowerOff", r, err, "powered off")
			wantPower(false)
			r, err = d.PowerOff(ctx, target)
			done("PowerOff when off", r, err, "already off")
			r, err = d.PowerOn(ctx, target)
			done("PowerOn", r, err, "powered on")
			wantPower(true)

			for _, dev := range []drivers.BootDevice{
				{Device: "pxe"}, {Device: "disk", Persistent: true}, {Device: "pxe", Persistent: true, EFI: true}, {Device: "disk", EFI: true},
			} {
				// ipmi_sim acts on the device but keeps no flags: it reads
				// back the device with the valid bit clear (00 04 00 00 00
				// for PXE), as real BMCs may: Done, saying so, for the
				// caller to set it again right before powering on.
				r, err := d.SetBootDevice(ctx, target, dev)
				if err != nil || r.Status != drivers.StatusDone || !strings.Contains(r.Message, drivers.BootFlagsCleared) ||
					!strings.Contains(r.Message, "reads back boot flags 00") {
					t.Errorf("SetBootDevice(%+v) on ipmi_sim: %+v %v, want Done saying the valid bit reads back clear", dev, r, err)
				}
				if got, err := b.BootDevice(); err != nil || got != dev.Device {
					t.Errorf("ipmi_sim boot device after %+v: %q %v", dev, got, err)
				}
			}
			r, err = d.PowerOff(ctx, target)
			done("PowerOff", r, err, "powered off")
		})
	}
}

// TestIPMISimCredentials: a wrong password and a wrong user are Permanent
// with the exact message, over both protocols.
func TestIPMISimCredentials(t *testing.T) {
	c := startIPMISim(t, 1)
	b := c.BMCs[0]
	d := realDriver(t, map[string]string{SettingTimeout: "300ms", SettingRetries: "1"})
	for _, proto := range []string{"lanplus", "lan"} {
		for _, tc := range []struct{ name, user, pass string }{
			{"wrong password", realUser, "Wrong-pw-4242"},
			{"wrong user", "operator7", realPassword},
		} {
			t.Run(proto+"/"+tc.name, func(t *testing.T) {
				target := realTarget(b, proto, 3)
				target.Username, target.Password = tc.user, drivers.NewSecret(tc.pass)
				want := fmt.Sprintf("BMC 127.0.0.1:%d rejected the credentials for user %s", b.Port, tc.user)
				start := time.Now()
				info, err := d.Probe(ctxT(t, 10*time.Second), target)
				el := time.Since(start)
				var ae *AuthError
				if drivers.Classify(err) != drivers.Permanent || !errors.As(err, &ae) || ae.Error() != want {
					t.Errorf("Probe: %v, want permanent %q", err, want)
				}
				if info.Authorized {
					t.Errorf("Probe: %+v, want unauthorized", info)
				}
				for _, call := range []func() error{
					func() error { _, err := d.PowerStatus(ctxT(t, 10*time.Second), target); return err },
					func() error { _, err := d.PowerOn(ctxT(t, 10*time.Second), target); return err },
					func() error {
						_, err := d.SetBootDevice(ctxT(t, 10*time.Second), target, drivers.BootDevice{Device: "pxe"})
						return err
					},
				} {
					if err := call(); drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), want) {
						t.Errorf("%v, want permanent %q", err, want)
					}
				}
				if err != nil && strings.Contains(err.Error(), tc.pass) {
					t.Errorf("error reveals the password: %v", err)
				}
				t.Logf("%s %s: %v after %v", proto, tc.name, err, el.Round(time.Millisecond))
			})
		}
	}
	if on, err := b.Power(); err != nil || on {
		t.Errorf("power changed by rejected calls: %v %v", on, err)
	}
}

// TestIPMISimUnreachable: 127.0.0.1 on a port nobody listens on fails
// Transient within the deadline, over both protocols; so does an ipmi_sim
// that stopped answering.
func TestIPMISimUnreachable(t *testing.T) {
	ipmisim.RequireOrSkip(t)
	d := realDriver(t, map[string]string{SettingTimeout: "2s", SettingRetries: "3"})
	port := freeUDPPort(t)
	for _, proto := range []string{"lanplus", "lan"} {
		target := drivers.BMC{Node: "ghost", Address: "127.0.0.1", Port: port, Protocol: proto,
			Username: realUser, Password: drivers.NewSecret(realPassword)}
		for _, deadline := range []time.Duration{300 * time.Millisecond, 1500 * time.Millisecond} {
			start := time.Now()
			_, err := d.PowerStatus(ctxT(t, deadline), target)
			el := time.Since(start)
			if drivers.Classify(err) != drivers.Transient {
				t.Errorf("%s: %v, want transient", proto, err)
			}
			if el > deadline+300*time.Millisecond {
				t.Errorf("%s: returned after %v, deadline %v", proto, el, deadline)
			}
			t.Logf("%s, deadline %v: %v after %v", proto, deadline, err, el.Round(time.Millisecond))
		}
	}
}

// TestIPMISimParallel drives 20 BMCs at once, both protocols.
func TestIPMISimParallel(t *testing.T) {
	const n = 20
	c := startIPMISim(t, n)
	d := realDriver(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for i, b := range c.BMCs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			proto := "lanplus"
			if i%2 == 1 {
				proto = "lan"
			}
			target := realTarget(b, proto, 3)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			fail := func(format string, args ...any) {
				errs <- fmt.Errorf("%s (%s): %s", b.Name, proto, fmt.Sprintf(format, args...))
			}
			if info, err := d.Probe(ctx, target); err != nil || !info.Authorized {
				fail("Probe: %+v %v", info, err)
				return
			}
			if r, err := d.SetBootDevice(ctx, target, drivers.BootDevice{Device: "pxe", Persistent: true}); !bootSet(r, err) {
				fail("SetBootDevice: %+v %v", r, err)
				return
			}
			if r, err := d.PowerOn(ctx, target); err != nil || r.Status != drivers.StatusDone {
				fail("PowerOn: %+v %v", r, err)
				return
			}
			if r, err := d.PowerCycle(ctx, target); err != nil || r.Status != drivers.StatusDone {
				fail("PowerCycle: %+v %v", r, err)
				return
			}
			if p, err := d.PowerStatus(ctx, target); err != nil || p != drivers.PowerOn {
				fail("PowerStatus: %q %v", p, err)
				return
			}
			if r, err := d.PowerOff(ctx, target); err != nil || r.Status != drivers.StatusDone {
				fail("PowerOff: %+v %v", r, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d BMCs: probe, boot device, on, cycle, status, off in %v", n, time.Since(start).Round(time.Millisecond))
	for _, b := range c.BMCs {
		if on, err := b.Power(); err != nil || on {
			t.Errorf("%s: power %v %v, want off", b.Name, on, err)
		}
		if dev, err := b.BootDevice(); err != nil || dev != "pxe" {
			t.Errorf("%s: boot device %q %v, want pxe", b.Name, dev, err)
		}
	}
}

// TestIPMISimPrivilegeAndCipherSuites: an operator session powers and
// sets the boot device; cipher suites 1-3 work; ipmi_sim (OpenIPMI 2.0.x)
// has no HMAC-SHA256 and drops the Open Session of suite 17, which ends
// Transient with a hint, within the attempts.
func TestIPMISimPrivilegeAndCipherSuites(t *testing.T) {
	c := startIPMISim(t, 1)
	b := c.BMCs[0]
	d := realDriver(t, map[string]string{SettingTimeout: "300ms", SettingRetries: "1"})
	for _, proto := range []string{"lanplus", "lan"} {
		tg := realTarget(b, proto, 3)
		tg.Privilege = "operator"
		for _, step := range []struct {
			name string
			call func() (drivers.Result, error)
		}{
			{"PowerOn", func() (drivers.Result, error) { return d.PowerOn(ctxT(t, 10*time.Second), tg) }},
			{"SetBootDevice", func() (drivers.Result, error) {
				return d.SetBootDevice(ctxT(t, 10*time.Second), tg, drivers.BootDevice{Device: "disk"})
			}},
			{"PowerOff", func() (drivers.Result, error) { return d.PowerOff(ctxT(t, 10*time.Second), tg) }},
		} {
			if r, err := step.call(); !bootSet(r, err) {
				t.Errorf("%s operator %s: %+v %v", proto, step.name, r, err)
			}
		}
	}
	for _, suite := range []int{1, 2, 3} {
		if p, err := d.PowerStatus(ctxT(t, 10*time.Second), realTarget(b, "lanplus", suite)); err != nil || p != drivers.PowerOff {
			t.Errorf("cipher suite %d: %q %v", suite, p, err)
		}
	}
	_, err := d.PowerStatus(ctxT(t, 10*time.Second), realTarget(b, "lanplus", 17))
	if drivers.Classify(err) != drivers.Transient || !strings.Contains(err.Error(), "try 3 rather than 17") {
		t.Errorf("cipher suite 17: %v, want transient with a hint", err)
	}
}

// bootSet: SetBootDevice did its part: Done, or (ipmi_sim, which keeps no
// boot flags) the transient ErrBootNotKept that says so.
func bootSet(r drivers.Result, err error) bool {
	if errors.Is(err, drivers.ErrBootNotKept) {
		return drivers.Classify(err) == drivers.Transient
	}
	return err == nil && r.Status == drivers.StatusDone
}
