package gnmi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	simgnmi "github.com/slipway-dev/slipway/sim/gnmi"
)

// gnmicPath finds the gnmic binary (.ci/run builds the pinned version
// into ~/go/bin with scripts/install-gnmic.sh):
// missing, the test fails in CI and is skipped elsewhere.
func gnmicPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("gnmic"); err == nil {
		return p
	}
	var dirs []string
	if gobin := os.Getenv("GOBIN"); gobin != "" {
		dirs = append(dirs, gobin)
	}
	if gp := os.Getenv("GOPATH"); gp != "" {
		dirs = append(dirs, filepath.Join(gp, "bin"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "gnmic")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("gnmic is not installed (PATH, GOBIN, GOPATH/bin, ~/go/bin); .ci/run builds it with scripts/install-gnmic.sh")
	}
	t.Skip("gnmic is not installed (PATH, GOBIN, GOPATH/bin, ~/go/bin): scripts/install-gnmic.sh builds it, to run this test")
	return ""
}

// gnmic runs the real client against addr; the password travels in its
// environment (GNMIC_PASSWORD), not in its arguments.
func gnmic(t *testing.T, bin, addr, password string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all := append([]string{"-a", addr, "-u", testUser, "--insecure", "--timeout", "10s", "--log=false", "-e", "json_ietf"}, args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	cmd.Env = append(os.Environ(), "GNMIC_PASSWORD="+password, "HOME="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("gnmic %s: %v\n%s", strings.Join(args, " "), err, out.String())
	return out.String(), err
}

// gnmicValues reads gnmic's get (or subscribe once) output: every
// update's values, by path.
func gnmicValues(t *testing.T, out string) map[string]any {
	t.Helper()
	vals := map[string]any{}
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var msg any
		if err := dec.Decode(&msg); err != nil {
			t.Fatalf("gnmic printed what is not JSON (%v):\n%s", err, out)
		}
		msgs, ok := msg.([]any)
		if !ok {
			msgs = []any{msg}
		}
		for _, m := range msgs {
			mm, _ := m.(map[string]any)
			ups, _ := mm["updates"].([]any)
			for _, u := range ups {
				um, _ := u.(map[string]any)
				v, _ := um["values"].(map[string]any)
				for k, x := range v {
					vals[k] = x
				}
			}
		}
	}
	return vals
}

// TestGnmicAgrees: the real gnmic client reads what the driver set,
// sets what the driver then reads, and is refused wrong credentials.
func TestGnmicAgrees(t *testing.T) {
	bin := gnmicPath(t)
	tg := lab(t, simgnmi.Config{Strict: true})
	d := open(t, tg.Addr(), testPassword, nil)
	node := driverstest.NetworkNode()
	if _, err := d.ConfigurePorts(t.Context(), node, drivers.PhaseProduction); err != nil {
		t.Fatal(err)
	}
	out, err := gnmic(t, bin, tg.Addr(), testPassword, "capabilities")
	if err != nil || !strings.Contains(out, "openconfig-interfaces") || !strings.Contains(out, "JSON_IETF") {
		t.Fatalf("gnmic capabilities: %v\n%s", err, out)
	}
	sw := driverstest.ConformanceSwitch
	out, err = gnmic(t, bin, tg.Addr(), testPassword, "get", "--target", sw, "--path", "/interfaces/interface[name=p2]")
	if err != nil {
		t.Fatalf("gnmic get: %v\n%s", err, out)
	}
	checkGnmicPort(t, out, node)

	out, err = gnmic(t, bin, tg.Addr(), testPassword, "set", "--target", sw,
		"--update-path", "/interfaces/interface[name=p2]/config/mtu", "--update-value", "1400")
	if err != nil {
		t.Fatalf("gnmic set: %v\n%s", err, out)
	}
	got, err := d.ReadPorts(t.Context(), []drivers.SwitchPort{{Switch: sw, Port: "p2"}})
	if err != nil || got[0].MTU != 1400 {
		t.Errorf("after gnmic set mtu 1400 the driver reads %+v, %v", got, err)
	}

	out, err = gnmic(t, bin, tg.Addr(), testPassword, "subscribe", "--target", sw, "--mode", "once",
		"--path", "/interfaces/interface[name=p2]/config/mtu")
	if err != nil || !strings.Contains(out, "1400") {
		t.Errorf("gnmic subscribe --mode once: %v\n%s", err, out)
	}

	fails := tg.AuthFailures()
	out, err = gnmic(t, bin, tg.Addr(), "wrong-Password-000", "get", "--target", sw, "--path", "/interfaces")
	if err == nil || !strings.Contains(out, "Unauthenticated") {
		t.Errorf("gnmic with a wrong password: %v\n%s; want refused (Unauthenticated)", err, out)
	}
	if tg.AuthFailures() == fails {
		t.Error("the target counted no refused credentials for gnmic's wrong password")
	}
}

// checkGnmicPort checks gnmic's view of p2 against the plan.
func checkGnmicPort(t *testing.T, out string, node drivers.Node) {
	t.Helper()
	plan, _ := drivers.PortPlan(node, drivers.PhaseProduction)
	want := plan[1] // p2
	vals := gnmicValues(t, out)
	var port map[string]any
	for _, v := range vals {
		port, _ = v.(map[string]any)
	}
	b, _ := json.Marshal(port)
	var p struct {
		Config struct {
			MTU     int  `json:"mtu"`
			Enabled bool `json:"enabled"`
		} `json:"config"`
		Ethernet struct {
			Config struct {
				AggregateID string `json:"openconfig-if-aggregate:aggregate-id"`
			} `json:"config"`
			SwitchedVLAN struct {
				Config struct {
					Mode   string `json:"interface-mode"`
					Native int    `json:"native-vlan"`
					Trunk  []int  `json:"trunk-vlans"`
				} `json:"config"`
			} `json:"openconfig-vlan:switched-vlan"`
		} `json:"openconfig-if-ethernet:ethernet"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("gnmic get of p2: %v\n%s", err, out)
	}
	sv := p.Ethernet.SwitchedVLAN.Config
	if p.Config.MTU != want.MTU || !p.Config.Enabled || sv.Mode != "TRUNK" || sv.Native != want.VLAN ||
		len(sv.Trunk) != len(want.Trunk) || sv.Trunk[0] != want.Trunk[0] || p.Ethernet.Config.AggregateID != want.Node+"-"+want.LAG {
		t.Errorf("gnmic reads p2 as %+v, want %+v:\n%s", p, want, out)
	}
}
