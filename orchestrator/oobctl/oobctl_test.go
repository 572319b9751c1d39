package oobctl

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
)

// TestResolve: the node's BMC as the example design describes it, with
// the options over it; options that do not fit the design are a
// UsageError naming the option, the rest plain errors naming the node.
func TestResolve(t *testing.T) {
	d := designtest.Example(t)
	t.Setenv("SLIPWAY_SECRET_BMC_ADMIN", "pw-resolve-3kQ")

	tg, err := Resolve(d, Options{Node: "r01-cmp01", Addr: "127.0.0.1:6230"})
	if err != nil {
		t.Fatal(err)
	}
	// r01-cmp01's hardware profile: ipmi, bootMode uefi, pxe.persistent.
	if tg.Driver != "ipmi" || tg.BMC.Address != "127.0.0.1" || tg.BMC.Port != 6230 || tg.BMC.Password.Reveal() != "pw-resolve-3kQ" ||
		tg.Boot != (drivers.BootDevice{Device: "pxe", Persistent: true, EFI: true}) {
		t.Errorf("r01-cmp01: %+v", tg)
	}
	no := false
	if tg, err = Resolve(d, Options{Node: "r01-cmp01", EFI: &no, Persistent: &no}); err != nil || tg.Boot.EFI || tg.Boot.Persistent || tg.BMC.Address == "" {
		t.Errorf("pxe overrides: %+v %v", tg, err)
	}

	// r02-gpu01: Redfish first, IPMI as its fallback.
	for method, want := range map[string]string{"": "redfish", "redfish": "redfish", "fallback": "ipmi", "ipmi": "ipmi"} {
		if tg, err := Resolve(d, Options{Node: "r02-gpu01", Method: method, CAFile: "/ca.pem"}); err != nil || tg.Driver != want || tg.BMC.CAFile != "/ca.pem" {
			t.Errorf("r02-gpu01 --oob %q: %+v %v, want %s", method, tg, err, want)
		}
	}

	for _, c := range []struct {
		o      Options
		option string
	}{
		{Options{Node: "nosuchnode"}, "node"},
		{Options{Node: "r02-gpu01", Method: "amt"}, "oob"},
		{Options{Node: "r01-cmp01", Method: "fallback"}, "oob"},
		{Options{Node: "r01-cmp01", Addr: "127.0.0.1"}, "bmc"},
		{Options{Node: "r01-cmp01", Addr: "127.0.0.1:0"}, "bmc"},
	} {
		var ue *UsageError
		if _, err := Resolve(d, c.o); !errors.As(err, &ue) || ue.Option != c.option {
			t.Errorf("%+v: %v, want a usage error of %s", c.o, err, c.option)
		}
	}

	os.Unsetenv("SLIPWAY_SECRET_BMC_ADMIN") // t.Setenv above restores it
	var ue *UsageError
	if _, err := Resolve(d, Options{Node: "r01-cmp01"}); err == nil || errors.As(err, &ue) ||
		!strings.Contains(err.Error(), "r01-cmp01") || !strings.Contains(err.Error(), "SLIPWAY_SECRET_BMC_ADMIN") {
		t.Errorf("unset secret: %v", err)
	}
}

// TestUntilDone: InProgress results are reported and waited on until the
// step is done; a deadline ends the wait with the last message.
func TestUntilDone(t *testing.T) {
	calls := 0
	step := func(context.Context) (drivers.Result, error) {
		calls++
		if calls < 3 {
			return drivers.Result{Status: drivers.StatusInProgress, Message: "waiting", RetryAfter: time.Millisecond}, nil
		}
		return drivers.Result{Status: drivers.StatusDone, Message: "powered on"}, nil
	}
	var seen []string
	r, err := untilDone(t.Context(), step, func(r drivers.Result) { seen = append(seen, r.Message) })
	if err != nil || r.Message != "powered on" || calls != 3 || len(seen) != 2 {
		t.Errorf("%+v %v after %d calls, %d reports", r, err, calls, len(seen))
	}

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	forever := func(context.Context) (drivers.Result, error) {
		return drivers.Result{Status: drivers.StatusInProgress, Message: "still cycling", RetryAfter: time.Hour}, nil
	}
	if _, err := untilDone(ctx, forever, func(drivers.Result) {}); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "still cycling") {
		t.Errorf("deadline: %v", err)
	}
}
