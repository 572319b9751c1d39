package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/design/designtest"
)

// withoutNode is a copy of the example site without node's document.
func withoutNode(t *testing.T, node string) string {
	t.Helper()
	site := copyExample(t)
	designtest.RemoveNode(t, site, node)
	return site
}

// labStatus is what the lab's own MAAS says of a hostname's machine.
func labStatus(s *apitest.Server, host string) string {
	for _, r := range s.Env.Lab.Regions() {
		for _, m := range r.MAAS.Machines() {
			if m.Hostname == host {
				return m.Status
			}
		}
	}
	return ""
}

// TestPlanCommand: against a served API over the lab, `plan` exits 2
// while the design changes machines (every node new before a deploy), 0
// once every node is deployed as designed (-o json is the wire plan),
// and 1 for an invalid design, a bad flag or no roots.
func TestPlanCommand(t *testing.T) {
	t.Parallel()
	s := remoteServer(t)
	viewer, op := s.Token[api.RoleViewer], s.Token[api.RoleOperator]
	as := func(tok string, args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--server", s.URL, "--token", tok}, args...)...)
	}
	site := copyExample(t)
	code, out, errs := as(viewer, "plan", site)
	if code != exitPlanChanges || !strings.Contains(out, "8 new") || !strings.Contains(out, "new       r01-cmp01") {
		t.Fatalf("plan before a deploy: exit %d\n%s%s", code, out, errs)
	}
	for _, verb := range []string{"prepare-site", "deploy"} {
		if code, out, errs := as(op, verb); code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", verb, code, out, errs)
		}
	}
	if st := labStatus(s, "r02-gpu02"); st != "Deployed" {
		t.Fatalf("the lab's MAAS says r02-gpu02 is %q after deploy", st)
	}
	code, out, errs = as(viewer, "plan", site)
	if code != 0 || !strings.Contains(out, "8 none") || !strings.Contains(out, "no changes") {
		t.Fatalf("plan once deployed: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = as(viewer, "plan", "-o", "json", site)
	var p apitypes.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil || code != 0 || p.Changed || p.Counts["none"] != 8 || !p.Observed {
		t.Fatalf("plan -o json: exit %d %v\n%s%s", code, err, out, errs)
	}
	// The same design as an archive, e.g. `git archive --format=tar.gz HEAD site/`.
	archive := filepath.Join(t.TempDir(), "site.tar.gz")
	if b, err := exec.Command("tar", "czf", archive, "-C", filepath.Dir(site), filepath.Base(site)).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, b)
	}
	if code, out, errs = as(viewer, "plan", archive); code != 0 || !strings.Contains(out, "8 none") {
		t.Fatalf("plan of the archive: exit %d\n%s%s", code, out, errs)
	}

	bad := copyExample(t)
	if err := os.WriteFile(filepath.Join(bad, "bad.yaml"), []byte("kind: Nope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{"invalid": {"plan", bad}, "bad flag": {"plan", "--nope", site}, "no roots": {"plan"},
		"bad output": {"plan", "-o", "xml", site}} {
		if code, out, errs := as(viewer, args...); code != exitPlanError {
			t.Errorf("%s: exit %d, want %d\n%s%s", name, code, exitPlanError, out, errs)
		}
	}
	if code, _, errs := as(viewer, "plan", bad); !strings.Contains(errs, "bad.yaml") {
		t.Errorf("invalid: exit %d, the findings do not name bad.yaml:\n%s", code, errs)
	}
}

// TestApplyApprove: with a node deployed, `apply` of a design without it
// is refused (exit 1, the release shown and how to approve it, nothing
// stored, the lab's MAAS still has the machine Deployed); with
// --approve it is stored with its plan, which `designs` and `designs
// show` show.
func TestApplyApprove(t *testing.T) {
	t.Parallel()
	s := remoteServer(t)
	viewer, op := s.Token[api.RoleViewer], s.Token[api.RoleOperator]
	as := func(tok string, args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--server", s.URL, "--token", tok}, args...)...)
	}
	const node = "r01-cmp01"
	for _, args := range [][]string{{"prepare-site"}, {"deploy", "--node", node}} {
		if code, out, errs := as(op, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
	before, err := s.Store.History(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	site := withoutNode(t, node)
	code, out, errs := as(op, "apply", site)
	if code != exitInvalid || !strings.Contains(out, "! release "+node) || !strings.Contains(errs, "destructive") ||
		!strings.Contains(errs, "--approve") {
		t.Fatalf("apply of a release: exit %d\n%s%s", code, out, errs)
	}
	if h, err := s.Store.History(t.Context()); err != nil || len(h) != len(before) {
		t.Fatalf("a refused apply was stored: %d → %d (%v)", len(before), len(h), err)
	}
	if st := labStatus(s, node); st != "Deployed" {
		t.Fatalf("refused, yet the lab's MAAS says %s is %q", node, st)
	}
	code, out, errs = as(op, "apply", "--approve", site)
	if code != 0 || !strings.HasPrefix(out, "revision ") || !strings.Contains(out, "release   "+node) {
		t.Fatalf("apply --approve: exit %d\n%s%s", code, out, errs)
	}
	rev := strings.Fields(out)[1]
	if code, out, errs := as(viewer, "designs"); code != 0 || !strings.Contains(out, "PLAN") || !strings.Contains(out, "!1 destructive: 1 release") {
		t.Errorf("designs: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := as(viewer, "designs", "show", rev); code != 0 || !strings.Contains(out, "release   "+node) || !strings.Contains(out, "! release "+node) {
		t.Errorf("designs show: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = as(op, "apply", "-o", "json", site)
	var res client.ApplyResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || res.Result != "unchanged" || !strings.HasPrefix(rev, res.Revision[:12]) {
		t.Errorf("apply -o json again: exit %d %v\n%s%s", code, err, out, errs)
	}
}
