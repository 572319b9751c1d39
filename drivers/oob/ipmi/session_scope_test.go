package ipmi

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/sim/bmc"
)

// TestSessionScopeSharesOneSession: the calls made in one session scope
// (drivers.WithSessionScope) share one session, over lanplus and lan,
// which the scope's end closes; without a scope each call has its own.
func TestSessionScopeSharesOneSession(t *testing.T) {
	for _, proto := range []string{"lanplus", "lan"} {
		b, ch := startSim(t, bmc.Options{})
		d := newTestDriver(t, nil)
		target := simTarget(b, proto, 3)
		ctx, end := drivers.WithSessionScope(ctxT(t, 10*time.Second))
		if _, err := d.PowerStatus(ctx, target); err != nil {
			t.Fatal(err)
		}
		if _, err := d.SetBootDevice(ctx, target, drivers.BootDevice{Device: "pxe"}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.PowerOn(ctx, target); err != nil {
			t.Fatal(err)
		}
		if s := b.Stats(); s.SessionsOpened != 1 || s.ActiveSessions != 1 {
			t.Errorf("%s: three calls in a scope: %d sessions opened, %d active; want 1 and 1", proto, s.SessionsOpened, s.ActiveSessions)
		}
		end()
		if s := b.Stats(); s.ActiveSessions != 0 || s.SessionsClosed != 1 {
			t.Errorf("%s: after the scope ended: %d active, %d closed; want 0 and 1", proto, s.ActiveSessions, s.SessionsClosed)
		}
		if !ch.IsPoweredOn() || ch.boot() != "pxe persistent=false efi=false" {
			t.Errorf("%s: the calls did not all act: powered %v, boot %q", proto, ch.IsPoweredOn(), ch.boot())
		}
		for range 2 { // no scope: a session each, closed after it
			if _, err := d.PowerStatus(ctxT(t, 10*time.Second), target); err != nil {
				t.Fatal(err)
			}
		}
		if s := b.Stats(); s.SessionsOpened != 3 || s.ActiveSessions != 0 {
			t.Errorf("%s: two calls without a scope: %d sessions opened in all, %d active; want 3 and 0", proto, s.SessionsOpened, s.ActiveSessions)
		}
	}
}

// TestSessionScopeReuseRules: a kept session is reused only by a call
// with the same credentials and the same context; a failed call's
// session is not kept.
func TestSessionScopeReuseRules(t *testing.T) {
	b, _ := startSim(t, bmc.Options{})
	d := newTestDriver(t, map[string]string{SettingTimeout: "5s", SettingRetries: "0"})
	target := simTarget(b, "lanplus", 3)
	ctx, end := drivers.WithSessionScope(ctxT(t, 20*time.Second))
	defer end()
	if _, err := d.PowerStatus(ctx, target); err != nil {
		t.Fatal(err)
	}
	wrong := target
	wrong.Password = drivers.NewSecret("wrong-pw-93")
	if _, err := d.PowerStatus(ctx, wrong); err == nil {
		t.Fatal("a wrong password was accepted: the kept session answered for other credentials")
	}
	child, cancel := context.WithCancel(ctx) // the same scope, another context
	defer cancel()
	if _, err := d.PowerStatus(child, target); err != nil {
		t.Fatal(err)
	}
	if s := b.Stats(); s.SessionsOpened != 2 || s.ActiveSessions != 1 {
		t.Errorf("after a call with another context: %d opened, %d active; want 2 (one per context) and 1 (the first closed)", s.SessionsOpened, s.ActiveSessions)
	}
	if _, err := d.PowerStatus(child, target); err != nil {
		t.Fatal(err)
	}
	if s := b.Stats(); s.SessionsOpened != 2 {
		t.Errorf("the same context again: %d opened; want 2 (reused)", s.SessionsOpened)
	}
	d.keptIdle = time.Millisecond // a session idle longer is replaced
	time.Sleep(5 * time.Millisecond)
	if _, err := d.PowerStatus(child, target); err != nil {
		t.Fatal(err)
	}
	if s := b.Stats(); s.SessionsOpened != 3 || s.ActiveSessions != 1 {
		t.Errorf("after the session idled: %d opened, %d active; want 3 and 1 (the idle one closed)", s.SessionsOpened, s.ActiveSessions)
	}
}

// TestSessionScopeFailedCallNotKept: a call that fails closes its
// session, even in a scope.
func TestSessionScopeFailedCallNotKept(t *testing.T) {
	b, err := bmc.Start(context.Background(), stubbornChassis{newChassis()}, bmc.Options{Addr: "127.0.0.1:0", Username: simUser, Password: simPassword})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	d := newTestDriver(t, nil)
	ctx, end := drivers.WithSessionScope(ctxT(t, 10*time.Second))
	defer end()
	if _, err := d.SetBootDevice(ctx, simTarget(b, "lanplus", 3), drivers.BootDevice{Device: "pxe"}); !errors.Is(err, drivers.ErrBootNotKept) {
		t.Fatalf("%v, want ErrBootNotKept", err)
	}
	if s := b.Stats(); s.SessionsOpened != 1 || s.ActiveSessions != 0 {
		t.Errorf("after a failed call: %d opened, %d active; want 1 and 0", s.SessionsOpened, s.ActiveSessions)
	}
}

// TestSessionScopeIPMISim: OpenIPMI's ipmi_sim takes calls that share one
// session in a scope (the session's sequence numbers carried from call to
// call), over lanplus and lan: power state, boot device, power on and
// power state again all succeed and act.
func TestSessionScopeIPMISim(t *testing.T) {
	c := startIPMISim(t, 2)
	for i, proto := range []string{"lanplus", "lan"} {
		d := realDriver(t, nil)
		target := realTarget(c.BMCs[i], proto, 3)
		ctx, end := drivers.WithSessionScope(ctxT(t, time.Minute))
		if _, err := d.PowerStatus(ctx, target); err != nil {
			t.Fatalf("%s: PowerStatus: %v", proto, err)
		}
		if _, err := d.SetBootDevice(ctx, target, drivers.BootDevice{Device: "pxe"}); err != nil {
			t.Fatalf("%s: SetBootDevice: %v", proto, err)
		}
		if _, err := d.PowerOn(ctx, target); err != nil {
			t.Fatalf("%s: PowerOn: %v", proto, err)
		}
		p, err := d.PowerStatus(ctx, target)
		if err != nil || p != drivers.PowerOn {
			t.Fatalf("%s: PowerStatus after PowerOn in the same session: %v, %v", proto, p, err)
		}
		end()
	}
}
