package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers/plugin"
)

func TestDriversCommand(t *testing.T) {
	dir := t.TempDir()
	plug := filepath.Join(dir, "slipway-driver-network-ext")
	if out, err := exec.Command("go", "build", "-o", plug, "github.com/slipway-dev/slipway/cmd/slipway-driver-network-noop").CombinedOutput(); err != nil {
		t.Fatalf("build plugin: %v\n%s", err, out)
	}
	code, out, errs := cli(t, "drivers", "--plugin-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"network  ext      " + plug, "network  gnmi     builtin", "network  noop     builtin", "oob      redfish  builtin", "ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = cli(t, "drivers", "-o", "json", "--plugin-dir", dir)
	var list []struct {
		Kind, Name, Source string
		Protocol           int
		Error              string
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != 0 {
		t.Fatalf("json: exit %d, %v\n%s", code, err, out)
	}
	if len(list) != 7 || list[0].Name != "ext" || list[0].Protocol != plugin.ProtocolVersion || list[0].Source != plug ||
		list[1].Kind != "network" || list[1].Name != "gnmi" || list[1].Source != "builtin" || list[2].Source != "builtin" ||
		list[3].Kind != "network" || list[3].Name != "ovs" || list[3].Source != "builtin" ||
		list[4].Kind != "oob" || list[4].Name != "ipmi" || list[4].Source != "builtin" ||
		list[5].Kind != "oob" || list[5].Name != "redfish" || list[5].Source != "builtin" ||
		list[6].Kind != "server" || list[6].Name != "maas" || list[6].Source != "builtin" {
		t.Errorf("json list: %+v", list)
	}
	t.Setenv("SLIPWAY_PLUGIN_DIR", filepath.Join(dir, "missing"))
	code, out, _ = cli(t, "drivers")
	if code != 0 || strings.Contains(out, "ext") || !strings.Contains(out, "noop") {
		t.Errorf("env plugin dir: exit %d\n%s", code, out)
	}
	if code, _, _ := cli(t, "drivers", "-o", "xml"); code != exitUsage {
		t.Errorf("-o xml: exit %d", code)
	}
}
