package gensite_test

import (
	"testing"

	"github.com/slipway-dev/slipway/design"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/internal/gensite"
)

// A generated site validates clean with one Site or several; with several
// the racks go to the Sites round-robin, every node naming its Site.
func TestSites(t *testing.T) {
	for _, c := range []struct{ nodes, sites int }{{100, 0}, {200, 3}} {
		dir := t.TempDir()
		if _, err := gensite.Write(dir, gensite.Options{Nodes: c.nodes, Sites: c.sites}); err != nil {
			t.Fatal(err)
		}
		res, err := yamlingest.Load(t.Context(), []string{dir})
		if err != nil {
			t.Fatal(err)
		}
		d, fs := design.Build(res.Sources)
		if fs.HasErrors() || len(d.Nodes) != c.nodes {
			t.Fatalf("%+v: %d nodes, findings %v", c, len(d.Nodes), fs)
		}
		want := max(c.sites, 1)
		if got := d.SiteNames(); len(got) != want || got[0] != gensite.SiteName(1) {
			t.Fatalf("%+v: sites %v", c, got)
		}
		total := 0
		for k := 1; k <= want; k++ {
			n := len(d.NodesOfSite(gensite.SiteName(k)))
			if n == 0 {
				t.Errorf("%+v: site %s has no nodes", c, gensite.SiteName(k))
			}
			total += n
		}
		if total != c.nodes {
			t.Errorf("%+v: the sites hold %d nodes", c, total)
		}
	}
	if _, err := gensite.Write(t.TempDir(), gensite.Options{Nodes: 1, Sites: 65}); err == nil {
		t.Error("65 sites were written")
	}
}
