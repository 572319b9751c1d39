package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

const exampleSite = "../../examples/site-yaml"

// cli runs one command line in-process.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(t.Context(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run 'go test ./cmd/orchestrator -update' to create it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s differs (-want +got); run with -update if the change is intended:\n%s", p, d)
	}
}

// writeSite writes files into a fresh directory and returns it.
func writeSite(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// copyExample copies the example site into a fresh directory.
func copyExample(t *testing.T) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(exampleSite, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m[filepath.Base(f)] = string(b)
	}
	return writeSite(t, m)
}

// TestRenderGolden renders every node of every input under
// testdata/render/<case>/ and compares with testdata/render/<case>.<node>.json.
func TestRenderGolden(t *testing.T) {
	cases := map[string]string{"example": exampleSite}
	dirs, _ := filepath.Glob("testdata/render/*")
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			cases[filepath.Base(d)] = d
		}
	}
	for name, root := range cases {
		t.Run(name, func(t *testing.T) {
			code, out, errs := cli(t, "validate", "-o", "json", root)
			if code != 0 {
				t.Fatalf("validate exit %d: %s%s", code, out, errs)
			}
			var nodes []string
			code, _, _ = cli(t, "render", "-o", "json", "--node", "does-not-exist", root)
			if code != exitUsage {
				t.Errorf("render of a missing node: exit %d, want %d", code, exitUsage)
			}
			l, err := (&app{log: nopLog()}).load(t.Context(), []string{root})
			if err != nil {
				t.Fatal(err)
			}
			nodes = l.design.NodeNames()
			for _, n := range nodes {
				code, out, errs := cli(t, "render", "-o", "json", "--node", n, root)
				if code != 0 {
					t.Fatalf("render %s: exit %d: %s", n, code, errs)
				}
				golden(t, filepath.Join("render", name+"."+n+".json"), out)
			}
		})
	}
}

func TestRenderYAMLMatchesJSON(t *testing.T) {
	_, j, _ := cli(t, "render", "-o", "json", "--node", "r02-gpu02", exampleSite)
	code, y, errs := cli(t, "render", "-o", "yaml", "--node", "r02-gpu02", exampleSite)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var fromJSON, fromYAML any
	if err := json.Unmarshal([]byte(j), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if err := yamlUnmarshal([]byte(y), &fromYAML); err != nil {
		t.Fatal(err)
	}
	// Through JSON once more, so that numbers compare as float64 on both sides.
	rt, err := json.Marshal(fromYAML)
	if err != nil {
		t.Fatal(err)
	}
	fromYAML = nil
	if err := json.Unmarshal(rt, &fromYAML); err != nil {
		t.Fatal(err)
	}
	// Both spell the names as the site files (camelCase).
	if d := cmp.Diff(fromJSON, fromYAML); d != "" {
		t.Errorf("yaml and json renderings differ (-json +yaml):\n%s", d)
	}
	for _, want := range []string{"kind: Node", "hardware:", "size: '>200g'"} {
		if !strings.Contains(y, want) {
			t.Errorf("yaml output lacks %q", want)
		}
	}
}

func TestValidateExitCodesAndFormats(t *testing.T) {
	bad := copyExample(t)
	// A second Site, an unknown field and a CIDR with host bits.
	if err := os.WriteFile(filepath.Join(bad, "zz-bad.yaml"), []byte(`apiVersion: slipway/v1
kind: Network
metadata: {name: extra}
spec:
  cidr: 10.50.0.1/24
  colour: blue
`), 0o644); err != nil {
		t.Fatal(err)
	}
	badFile := filepath.Join(bad, "zz-bad.yaml")

	code, out, _ := cli(t, "validate", exampleSite)
	if code != 0 || out != "" {
		t.Errorf("clean site: exit %d, output %q", code, out)
	}
	code, out, _ = cli(t, "validate", bad)
	if code != exitInvalid {
		t.Errorf("bad site: exit %d, want 1", code)
	}
	wantText := badFile + ":5: error cidr Network/extra: cidr \"10.50.0.1/24\" has host bits set; did you mean 10.50.0.0/24?\n" +
		badFile + ":6: error schema Network/extra: unknown field \"colour\" in spec (known fields: cidr, dns, gateway, mtu, ranges, routes, switchVlan, vlan)\n"
	if d := cmp.Diff(wantText, out); d != "" {
		t.Errorf("text output (-want +got):\n%s", d)
	}
	code, out, _ = cli(t, "validate", "-o", "json", bad)
	if code != exitInvalid {
		t.Errorf("json: exit %d", code)
	}
	var res struct {
		Valid    bool `json:"valid"`
		Findings []struct {
			Rule, Severity, Kind, Name, File, Message string
			Line                                      int
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("json output: %v\n%s", err, out)
	}
	if res.Valid || len(res.Findings) != 2 || res.Findings[0].Rule != "cidr" || res.Findings[0].Line != 5 || res.Findings[1].Rule != "schema" {
		t.Errorf("json output: %+v", res)
	}
	code, out, _ = cli(t, "validate", "-o", "json", exampleSite)
	if code != 0 || !strings.Contains(out, `"valid": true`) || !strings.Contains(out, `"findings": []`) {
		t.Errorf("clean json: exit %d: %s", code, out)
	}
	for _, args := range [][]string{
		{"validate"},
		{"validate", "-o", "xml", exampleSite},
		{"validate", "/does/not/exist"},
		{"validate", "--bogus", exampleSite},
		{"render", exampleSite},
		{"nonsense"},
	} {
		if code, _, errs := cli(t, args...); code != exitUsage || errs == "" {
			t.Errorf("%v: exit %d (stderr %q), want 2 with a message", args, code, errs)
		}
	}
}

func TestRenderInvalidDesign(t *testing.T) {
	dir := copyExample(t)
	if err := os.WriteFile(filepath.Join(dir, "zz.yaml"), []byte("apiVersion: slipway/v2\nkind: Network\nmetadata: {name: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, "render", "--node", "r01-cmp01", dir)
	if code != exitInvalid || out != "" || !strings.Contains(errs, "unknown apiVersion") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestApplyDesignsDiff(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state", "slipway.db")
	site := copyExample(t)

	code, out, errs := cli(t, "apply", "--state", state, site)
	if code != 0 {
		t.Fatalf("apply: exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "stored") || !strings.Contains(out, "Node: 8 added, 0 removed, 0 changed") || !strings.Contains(out, "  + node r01-cmp01") {
		t.Errorf("first apply output:\n%s", out)
	}
	firstID := strings.Fields(out)[1]

	code, out, _ = cli(t, "apply", "--state", state, site)
	if code != 0 || !strings.Contains(out, "already current: nothing stored") {
		t.Errorf("second apply: exit %d:\n%s", code, out)
	}

	// Change one node's storage address and remove another node.
	p := filepath.Join(site, "nodes-r01.yaml")
	b, _ := os.ReadFile(p)
	changed := strings.Replace(string(b), "address: 10.13.0.101", "address: 10.13.0.150", 1)
	if changed == string(b) {
		t.Fatal("fixture changed: 10.13.0.101 not found in nodes-r01.yaml")
	}
	if err := os.WriteFile(p, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = cli(t, "apply", "--state", state, site)
	if code != 0 {
		t.Fatalf("third apply: exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "Node: 0 added, 0 removed, 1 changed") || !strings.Contains(out, "~ node r01-cmp01: spec.addressing") {
		t.Errorf("third apply output:\n%s", out)
	}
	secondID := strings.Fields(out)[1]

	code, out, _ = cli(t, "designs", "--state", state)
	if code != 0 || strings.Count(out, "\n") != 3 || !strings.Contains(out, "*"+secondID) {
		t.Errorf("designs: exit %d:\n%s", code, out)
	}
	code, out, _ = cli(t, "diff", "--state", state, firstID, secondID)
	if code != 0 || !strings.Contains(out, "~ node r01-cmp01: spec.addressing") {
		t.Errorf("diff: exit %d:\n%s", code, out)
	}
	if code, _, errs := cli(t, "diff", "--state", state, "ffffff", secondID); code != exitUsage || !strings.Contains(errs, "not found") {
		t.Errorf("diff of unknown revision: exit %d: %s", code, errs)
	}

	// An invalid design is never stored.
	if err := os.WriteFile(filepath.Join(site, "bad.yaml"), []byte("kind: Nope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = cli(t, "apply", "--state", state, site)
	if code != exitInvalid || !strings.Contains(errs, "nothing applied") {
		t.Errorf("invalid apply: exit %d: %s", code, errs)
	}
	_, out, _ = cli(t, "designs", "--state", state)
	if strings.Count(out, "\n") != 3 {
		t.Errorf("an invalid apply changed the history:\n%s", out)
	}
}

func TestGenSiteValidates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "site")
	code, out, errs := cli(t, "gen-site", "--nodes", "250", "--out", dir)
	if code != 0 || !strings.Contains(out, "wrote 250 nodes") {
		t.Fatalf("gen-site: exit %d: %s%s", code, out, errs)
	}
	code, out, errs = cli(t, "validate", dir)
	if code != 0 || out != "" || !strings.Contains(errs, "250 nodes: 0 errors, 0 warnings") {
		t.Errorf("validate of generated site: exit %d\n%s%s", code, out, errs)
	}
	_, out, _ = cli(t, "render", "--node", "n000249", dir)
	for _, want := range []string{`"hostProfile": "leaf-1"`, `"tier-0"`, `"/tmp"`} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered generated node lacks %s", want)
		}
	}
	if code, _, _ := cli(t, "gen-site", "--nodes", "0", "--out", dir); code != exitUsage {
		t.Errorf("gen-site --nodes 0: exit %d", code)
	}
}

// TestDemo: the text demo of the example site (the shared run, without
// the switch fabric: see sharedDemo) deploys every node by the lab's
// count, and bootdata serves a demo node's data from the state it leaves.
func TestDemo(t *testing.T) {
	t.Parallel()
	state, code, out, errs := exampleDemo(t)
	if code != 0 {
		t.Fatalf("demo: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"== 1. validate", "kind: Node", "revision", "nothing stored", "8 of 8 nodes deployed, 0 failed, 0 stuck (counted by the lab; the engine says 8 deployed)", "0 leaked machines, 0 duplicate deploys", "against a floor of", "reported", "== Next"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	// What a demo node is served: netplan matching its NICs by MAC.
	code, out, errs = cli(t, "bootdata", "r01-cmp01", "--state", state, "--part", "network-config")
	var np struct {
		Network struct {
			Ethernets map[string]struct {
				Match struct {
					MACAddress string `yaml:"macaddress"`
				}
				SetName string `yaml:"set-name"`
			}
		}
	}
	if code != 0 || yamlUnmarshal([]byte(out), &np) != nil || len(np.Network.Ethernets) != 3 {
		t.Fatalf("bootdata network-config: exit %d\n%s%s", code, out, errs)
	}
	for name, e := range np.Network.Ethernets {
		if e.Match.MACAddress == "" || e.SetName != name {
			t.Errorf("ethernet %s: matched by MAC %q, set-name %q", name, e.Match.MACAddress, e.SetName)
		}
	}
	code, out, errs = cli(t, "bootdata", "r01-cmp01", "--state", state, "--part", "user-data")
	if code != 0 || !strings.HasPrefix(out, "#cloud-config\n") || !strings.Contains(out, "SLIPWAY_TOKEN='REDACTED-node-token'") || strings.Contains(out, "sni_") {
		t.Errorf("bootdata user-data: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs = cli(t, "bootdata", "r01-cmp01", "--state", state, "--part", "secrets"); code != exitUsage || !strings.Contains(errs, "use one of self") {
		t.Errorf("bootdata --part secrets: exit %d %s", code, errs)
	}
}

// TestDemoTwoSites: the example with examples/two-sites layered over it
// has two Sites; the demo deploys them side by side, each node's machine
// in its own Site's MAAS region, counted from each region's state.
func TestDemoTwoSites(t *testing.T) {
	t.Parallel()
	two := filepath.Join(filepath.Dir(exampleSite), "two-sites")
	code, out, errs := cli(t, "demo", "--site", exampleSite, "--site", two, "--no-fabric")
	if code != 0 {
		t.Fatalf("demo: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"8 of 8 nodes deployed, 0 failed, 0 stuck", "0 leaked machines, 0 duplicate deploys",
		"site lab: its MAAS region holds 4 machines Deployed", "site lab-east: its MAAS region holds 4 machines Deployed"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}
