package orchestrator

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// imagePlanDesign is a design of two Sites' nodes deploying gpu-golden
// (sha) in the sites listed.
func imagePlanDesign(sha string, sites ...string) *design.Design {
	d := &design.Design{Nodes: map[string]*design.Node{}, Sites: map[string]*design.Site{},
		Images: map[string]*design.Image{"gpu-golden": {Metadata: design.ObjectMeta{Name: "gpu-golden"},
			Spec: design.ImageSpec{Custom: &design.CustomImage{Source: design.FirmwareImage{File: "g.img", SHA256: sha}, Format: "ddraw", Size: 8}}}}}
	for _, s := range []string{"a", "b"} {
		d.Sites[s] = &design.Site{Metadata: design.ObjectMeta{Name: s}}
		n := &design.Node{Metadata: design.ObjectMeta{Name: "n-" + s}}
		n.Spec.Site = s
		for _, u := range sites {
			if u == s {
				n.Spec.Platform.Image = "gpu-golden"
			}
		}
		d.Nodes[n.Metadata.Name] = n
	}
	return d
}

// TestPlanImages: the plan lists, per Site, the images a change syncs:
// a new image, a changed one, one a Site deploys from now on; an
// unchanged image is not listed.
func TestPlanImages(t *testing.T) {
	sha1, sha2 := strings.Repeat("a", 64), strings.Repeat("b", 64)
	cases := []struct {
		name     string
		cur, d   *design.Design
		want     map[string]string // site → a word of the change's detail
		wantNone bool
	}{
		{"new", nil, imagePlanDesign(sha1, "a"), map[string]string{"a": "is new"}, false},
		{"unchanged", imagePlanDesign(sha1, "a"), imagePlanDesign(sha1, "a"), nil, true},
		{"content changed", imagePlanDesign(sha1, "a", "b"), imagePlanDesign(sha2, "a", "b"), map[string]string{"a": "changed content", "b": "changed content"}, false},
		{"another site", imagePlanDesign(sha1, "a"), imagePlanDesign(sha1, "a", "b"), map[string]string{"b": "from now on"}, false},
	}
	for _, c := range cases {
		sites := planImages([]record.SitePlan{{Site: "a"}}, c.cur, c.d)
		got := map[string]string{}
		for _, s := range sites {
			for _, ch := range s.Changes {
				if ch.Part != "image" || ch.Object != "custom/gpu-golden" {
					t.Errorf("%s: change %+v", c.name, ch)
				}
				got[s.Site] = ch.Detail
			}
		}
		if c.wantNone && len(got) != 0 {
			t.Errorf("%s: %v, want no image change", c.name, got)
		}
		for site, word := range c.want {
			if !strings.Contains(got[site], word) {
				t.Errorf("%s: site %s: %q, want %q", c.name, site, got[site], word)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %d site(s)", c.name, got, len(c.want))
		}
	}
}
