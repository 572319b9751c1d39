package maas

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
)

// TestCreateCommissions: POST /machines/ with commission=true commissions
// the new machine with the request's scripts and skip_bmc_config (MAAS's
// create runs CommissionForm on the request's data); scripts that do not
// validate leave it New and the create still succeeds (MAAS ignores that
// form's errors, LP:1600328).
func TestCreateCommissions(t *testing.T) {
	st := newStorageSim(t)
	create := func(mac string, extra url.Values) (string, string) {
		f := url.Values{"mac_addresses": {mac}, "architecture": {"amd64/generic"}, "commission": {"1"}}
		for k, v := range extra {
			f[k] = v
		}
		code, body := st.call("POST", "/machines/", "", f)
		if code != http.StatusOK {
			t.Fatalf("create: %d %s", code, body)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatal(err)
		}
		return m["system_id"].(string), m["status_name"].(string)
	}
	id, state := create("52:54:00:00:30:01", url.Values{"skip_bmc_config": {"1"}, "commissioning_scripts": {"20-maas-01-install-lldpd"}, "testing_scripts": {"none"}})
	c := st.s.LastCommission(id)
	if state != "Commissioning" || !c.SkipBMCConfig || !slices.Contains(c.Commissioning, "20-maas-01-install-lldpd") {
		t.Errorf("create with commission: %s, commissioning %+v", state, c)
	}
	if _, state := create("52:54:00:00:30:02", url.Values{"commissioning_scripts": {"no-such-script"}}); state != "New" {
		t.Errorf("create with an unknown script: %s, want New", state)
	}
}
