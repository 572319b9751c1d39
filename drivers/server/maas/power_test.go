package maas

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/sim/lab"
)

// TestIdentifySetsPowerParameters: a machine that enlisted itself gets the
// design's BMC as its power parameters, and MAAS can then power it (the
// lab's power driver checks address and credentials).
func TestIdentifySetsPowerParameters(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	l := startLab(t, lab.Config{Machines: 1})
	d := newTestDriver(t, l, nil)
	m := l.Machines()[0]
	pxeBoot(m)
	waitEnlisted(t, d, m.Hardware.NICs[0].MAC)
	user, pw := m.BMCCredentials()
	n := genericNode(m)
	n.BootMAC = m.Hardware.NICs[0].MAC
	n.Power = &drivers.PowerSettings{Type: "ipmi", Address: "127.0.0.1", Port: m.BMC.Port, Protocol: "lanplus",
		CipherSuite: 3, Privilege: "administrator", Username: user, Password: drivers.NewSecret(pw), EFI: true}
	ctx := testCtx(t)
	// The machine enlisted with its own BMC settings; forget them, as after
	// a manual enlistment.
	var ms []mMachine
	if err := d.c.call(ctx, http.MethodGet, "machines/", "", url.Values{"mac_address": {n.BootMAC}}, &ms); err != nil || len(ms) != 1 {
		t.Fatalf("find: %v %v", ms, err)
	}
	if err := d.c.call(ctx, http.MethodPut, "machines/"+ms[0].SystemID+"/", "", url.Values{"power_type": {"manual"}}, nil); err != nil {
		t.Fatal(err)
	}
	mach, r, err := d.IdentifyNode(ctx, n)
	if err != nil || !strings.Contains(r.Message, "power parameters") || strings.Contains(r.Message, pw) {
		t.Fatalf("identify: %+v %+v %v", mach, r, err)
	}
	var st map[string]string
	if err := d.c.call(ctx, http.MethodGet, "machines/"+mach.MachineID+"/", "query_power_state", nil, &st); err != nil || (st["state"] != "on" && st["state"] != "off") {
		t.Fatalf("MAAS cannot power the machine with the parameters: %v %v", st, err)
	}
	_, r, err = d.IdentifyNode(ctx, n)
	if err != nil || strings.Contains(r.Message, "power parameters") {
		t.Errorf("second identify changed the power parameters again: %+v %v", r, err)
	}
	n.Power.Password = drivers.NewSecret("wrong-password")
	if _, r, err = d.IdentifyNode(ctx, n); err != nil || !strings.Contains(r.Message, "power parameters") {
		t.Errorf("a changed password is not written: %+v %v", r, err)
	}
	if err := d.c.call(ctx, http.MethodGet, "machines/"+mach.MachineID+"/", "query_power_state", nil, &st); err == nil {
		t.Errorf("MAAS powered the machine with a wrong password: %v", st)
	} else if strings.Contains(err.Error(), "wrong-password") {
		t.Errorf("the password leaked into an error: %v", err)
	}
}
