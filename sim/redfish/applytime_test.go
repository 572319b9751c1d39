package redfish

import (
	"slices"
	"testing"
)

// TestBIOSApplyTime: the Bios advertises SupportedApplyTimes OnReset in
// its @Redfish.Settings. Modelling iDRAC (Vendor "dell"), settings staged
// without an apply time stay pending across a reset (no configuration
// job), while those staged with ApplyTime OnReset are applied by it;
// without the option a reset applies either. An apply time the BIOS does
// not support is refused (400 naming it), nothing staged.
func TestBIOSApplyTime(t *testing.T) {
	for _, tc := range []struct {
		vendor    string
		applyTime string
		applied   bool
	}{
		{"dell", "", false},
		{"dell", "OnReset", true},
		{"", "", true},
		{"", "OnReset", true},
	} {
		s, _, ca := start(t, Options{Vendor: tc.vendor})
		c, err := connect(t, s, ca, pass)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := getDoc(t, c, biosPath)["@Redfish.Settings"].(map[string]any)
		times, _ := st["SupportedApplyTimes"].([]any)
		if !slices.Contains(times, any("OnReset")) {
			t.Fatalf("the Bios advertises %v", st)
		}
		body := map[string]any{"Attributes": map[string]any{"ProcTurboMode": "Disabled"}}
		if tc.applyTime != "" {
			body["@Redfish.SettingsApplyTime"] = map[string]any{"ApplyTime": tc.applyTime}
		}
		resp, err := c.Patch(settingsPath, body)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		resp.Body.Close()
		s.SystemReset()
		bios, pending := s.BIOS()
		if got := bios["ProcTurboMode"] == "Disabled" && len(pending) == 0; got != tc.applied {
			t.Errorf("%+v: after a reset in effect %v, pending %v", tc, bios["ProcTurboMode"], pending)
		}
		if resp, err := c.Patch(settingsPath, map[string]any{"Attributes": map[string]any{"UsbControl": "UsbDisabled"},
			"@Redfish.SettingsApplyTime": map[string]any{"ApplyTime": "Immediate"}}); err == nil {
			resp.Body.Close()
			t.Errorf("%+v: ApplyTime Immediate accepted", tc)
		}
	}
}
