package redfish

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

// TestBootOverrideModeChecked: BootSourceOverrideMode is UEFI or Legacy
// (the schema's values); another value is refused with 400 naming it, as
// BMCs answer, and the override stays as it was (a client writing "Uefi"
// does not silently get a legacy boot).
func TestBootOverrideModeChecked(t *testing.T) {
	s, m, ca := start(t, Options{})
	hc := rawClient(ca)
	token, _ := loginRaw(t, hc, s)
	patch := func(boot map[string]any) int {
		b, _ := json.Marshal(map[string]any{"Boot": boot})
		req, _ := http.NewRequest(http.MethodPatch, s.URL()+systemPath, bytes.NewReader(b))
		req.Header.Set("X-Auth-Token", token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := patch(map[string]any{"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once", "BootSourceOverrideMode": "UEFI"}); code != http.StatusNoContent {
		t.Fatalf("a UEFI PXE override: %d", code)
	}
	dev, _, efi := m.BootDevice()
	if dev != "pxe" || !efi {
		t.Fatalf("boot %s efi %v", dev, efi)
	}
	for _, mode := range []string{"Uefi", "BIOS", "x"} {
		if code := patch(map[string]any{"BootSourceOverrideTarget": "Hdd", "BootSourceOverrideMode": mode}); code != http.StatusBadRequest {
			t.Errorf("mode %q: %d, want 400", mode, code)
		}
	}
	if dev, _, efi := m.BootDevice(); dev != "pxe" || !efi {
		t.Fatalf("after refused modes: boot %s efi %v, want pxe UEFI as before", dev, efi)
	}
}
