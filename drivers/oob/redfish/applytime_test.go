package redfish_test

import (
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
)

// TestBIOSAppliedOnDell: against a BMC that keeps settings staged without
// an apply time pending at a reset (iDRAC: no configuration job), the
// settings ApplyBIOS stages take effect at the next reset, since the
// Bios advertises ApplyTime OnReset and the driver asks for it; counted
// from the lab's BIOS, not the driver's answer.
func TestBIOSAppliedOnDell(t *testing.T) {
	for _, vendor := range []string{"dell", ""} {
		d, b, s, _ := lab(t, simrf.Options{Vendor: vendor})
		r, err := d.ApplyBIOS(t.Context(), b, map[string]string{"ProcTurboMode": "Disabled", "UsbControl": "UsbDisabled"})
		if err != nil || r.Status != drivers.StatusInProgress {
			t.Fatalf("%q: %+v %v", vendor, r, err)
		}
		s.SystemReset()
		bios, pending := s.BIOS()
		if bios["ProcTurboMode"] != "Disabled" || bios["UsbControl"] != "UsbDisabled" || len(pending) != 0 {
			t.Errorf("%q: after the reset in effect %v, still pending %v", vendor, bios, pending)
		}
	}
}
