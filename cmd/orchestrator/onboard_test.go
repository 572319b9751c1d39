package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/siteregistry"
)

// TestOnboardCLI: `onboarding add HOST=BMC` onboards a node the lab has
// but the applied design lacks (pxe-only addressing: the PXE MAC is found
// when the machine enlists itself); `onboarding show` follows it until
// the lab's MAAS says the machine is Deployed; `design-layer` prints the
// node to commit, and `apply` of the design with it says it was taken
// over.
func TestOnboardCLI(t *testing.T) {
	t.Parallel()
	s := remoteServer(t)
	admin, op := s.Token[api.RoleAdmin], s.Token[api.RoleOperator]
	run := func(tok string, args ...string) string {
		t.Helper()
		code, out, errs := cli(t, append([]string{"--server", s.URL, "--token", tok}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		return out
	}
	site := copyExample(t)
	p := filepath.Join(site, "nodes-r02.yaml")
	orig, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(orig), "\n---\n")
	if !strings.Contains(docs[0], "name: r02-cmp01\n") {
		t.Fatalf("the first document of nodes-r02.yaml is not r02-cmp01's")
	}
	if err := os.WriteFile(p, []byte(strings.Join(docs[1:], "\n---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	run(op, "apply", site)
	createSite(t, s, `{"name":"lab","url":"`+s.Env.Lab.Info().MAASURL+`","api_key":"`+s.Env.Lab.Info().APIKey+`"}`)
	run(op, "prepare-site")

	// The site profile is required (the GPUaaS boundary names it).
	add := []string{"onboarding", "add", "r02-cmp01=10.10.0.111", "--site", "lab", "--sku", "supermicro-as2024", "--host-profile", "compute", "--rack", "r02"}
	if code, out, errs := cli(t, append([]string{"--server", s.URL, "--token", admin}, add...)...); code == 0 || !strings.Contains(errs, "--profile SITE_PROFILE") {
		t.Fatalf("add without --profile: exit %d\n%s%s", code, out, errs)
	}
	createProfile(t, s, "lab", `{"name":"std"}`)
	out := run(admin, append(add, "--profile", "std")...)
	if !strings.Contains(out, "1 nodes in revision") || !strings.Contains(out, "host profile compute") {
		t.Fatalf("add:\n%s", out)
	}
	id := strings.TrimSuffix(strings.Fields(out)[1], ":")
	var w apitypes.Onboarding
	for deadline := time.Now().Add(60 * time.Second); w.Status != "succeeded"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("onboarding %s: %s after 60 s", id, w.Status)
		}
		if err := json.Unmarshal([]byte(run(admin, "onboarding", "show", id, "-o", "json")), &w); err != nil {
			t.Fatal(err)
		}
		if w.Status == "failed" {
			t.Fatalf("onboarding failed: %+v", w.Results)
		}
	}
	deployed := false
	for _, r := range s.Env.Lab.Regions() {
		for _, m := range r.MAAS.Machines() {
			deployed = deployed || (m.Hostname == "r02-cmp01" && m.Status == "Deployed")
		}
	}
	if !deployed {
		t.Fatal("the lab's MAAS does not have r02-cmp01 Deployed")
	}
	if out := run(admin, "onboarding", "list", "--site", "lab"); !strings.Contains(out, id) || !strings.Contains(out, "succeeded") {
		t.Errorf("list:\n%s", out)
	}
	layer := run(op, "design-layer")
	if !strings.Contains(layer, "name: r02-cmp01") || !strings.Contains(layer, "address: 10.10.0.111") {
		t.Fatalf("design-layer:\n%s", layer)
	}
	// Committed as a root of its own over the design's: taken over.
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "api-layer.yaml"), []byte(layer), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := run(op, "apply", site, root); !strings.Contains(out, "taken over from the API-managed layer (now defined in git): Node/r02-cmp01") {
		t.Errorf("apply with the layer committed:\n%s", out)
	}
}

// createProfile creates a profile in the site record named site.
func createProfile(t *testing.T, s *apitest.Server, site, body string) {
	t.Helper()
	do := func(method, path, body string) []byte {
		req, _ := http.NewRequestWithContext(t.Context(), method, s.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.Token[api.RoleAdmin])
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %s %s", method, path, resp.Status, b)
		}
		return b
	}
	var recs []siteregistry.Record
	if err := json.Unmarshal(do("GET", "/api/v1/admin/maas-sites", ""), &recs); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Name == site {
			do("POST", "/api/v1/admin/maas-sites/"+r.ID+"/profiles", body)
			return
		}
	}
	t.Fatalf("no site record %s", site)
}
