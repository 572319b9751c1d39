package main

import (
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
)

// TestRoCEImport: `roce import FILE.csv --site NAME` stores a CSV's rows
// through the bulk route; a file with an overlapping pair is refused
// naming it, storing nothing; `roce list` shows what is stored.
func TestRoCEImport(t *testing.T) {
	t.Parallel()
	s := remoteServer(t)
	admin := s.Token[api.RoleAdmin]
	d := designtest.Example(t)
	createSite(t, s, `{"name":"`+d.Site.Metadata.Name+`","url":"http://maas.example:5240/MAAS","api_key":"a:b:c"}`)
	var host string
	var aliases []string
	for _, name := range d.NodeNames() { // two NICs the node can carry a RoCE address on (no bond member, none beside DHCP)
		hp := d.HardwareProfiles[d.Nodes[name].Spec.HardwareProfile]
		if hp == nil {
			continue
		}
		aliases = slices.DeleteFunc(slices.Sorted(maps.Keys(hp.Spec.DeviceAliases)), func(a string) bool {
			return driverspec.CheckRoCE(d, d.Nodes[name], []driverspec.RoCEAddress{{Interface: a, CIDR: "10.250.0.0/31"}}) != nil
		})
		if len(aliases) >= 2 {
			host = name
			break
		}
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.csv")
	if err := os.WriteFile(good, []byte("hostname,interface,ipv4_cidr\n"+host+","+aliases[0]+",10.250.0.0/31\n"+host+","+aliases[1]+",10.250.0.2/31\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	site := d.Site.Metadata.Name
	code, out, errs := cli(t, "--server", s.URL, "--token", admin, "roce", "import", good, "--site", site)
	if code != 0 || !strings.Contains(out, "2 RoCE assignments stored") {
		t.Fatalf("import: exit %d\n%s%s", code, out, errs)
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("hostname,interface,ipv4_cidr\n"+host+","+aliases[0]+",10.250.0.2/31\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs = cli(t, "--server", s.URL, "--token", admin, "roce", "import", bad, "--site", site)
	if code == 0 || !strings.Contains(errs, "HTTP 422") || !strings.Contains(errs, "overlaps "+host+" "+aliases[1]+" 10.250.0.2/31 (stored)") {
		t.Fatalf("an overlapping pair: exit %d: %s", code, errs)
	}
	code, out, errs = cli(t, "--server", s.URL, "--token", admin, "roce", "list", "--site", site, "-o", "json")
	var got struct {
		Items []struct {
			Interface string `json:"interface"`
			IPv4CIDR  string `json:"ipv4_cidr"`
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got.Items) != 2 || got.Items[0].IPv4CIDR != "10.250.0.0/31" {
		t.Fatalf("list: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := cli(t, "--server", s.URL, "--token", admin, "roce", "import", good, "--site", "nowhere"); code == 0 || !strings.Contains(errs, "no site record") {
		t.Errorf("an unknown site: exit %d: %s", code, errs)
	}
}

// createSite creates a site record through the served API as its admin.
func createSite(t *testing.T, s *apitest.Server, body string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", s.URL+"/api/v1/admin/maas-sites", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.Token[api.RoleAdmin])
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create the site: %s", resp.Status)
	}
}
