package redfish

import (
	"testing"
	"time"

	"github.com/stmcginnis/gofish/redfish"
)

// TestAppliedResetsCounted: a reset that applies staged BIOS settings is
// counted once; a reset with nothing staged is not; the durations are
// the Options' (and the volume build's).
func TestAppliedResetsCounted(t *testing.T) {
	s, _, ca := start(t, Options{UpdateDuration: 300 * time.Millisecond, BMCResetDuration: 700 * time.Millisecond})
	if d := s.Durations(); d.Update != 300*time.Millisecond || d.BMCReset != 700*time.Millisecond || d.VolumeBuild != volumeBuild || d.SystemReset != 0 {
		t.Fatalf("durations %+v", d)
	}
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Patch(settingsPath, map[string]any{"Attributes": map[string]any{"UsbControl": "UsbDisabled"}})
	if err != nil {
		t.Fatalf("PATCH settings: %v", err)
	}
	resp.Body.Close()
	for i := 0; i < 2; i++ {
		if err := system(t, c).Reset(redfish.ForceRestartResetType); err != nil {
			t.Fatal(err)
		}
	}
	s.SystemReset() // a boot the service did not see, nothing staged
	if n := s.AppliedResets(); n != 1 {
		t.Fatalf("%d resets applied staged changes, want 1", n)
	}
}
