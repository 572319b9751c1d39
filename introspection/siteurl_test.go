package introspection

import (
	"context"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design/designtest"
)

// TestSiteURLPerRevision: with SiteURL (serve), the user data of a node
// carries the introspection URL of the design revision it is issued
// from, the configured URL only when that revision's Site names none; an
// invalid Site URL is refused naming the field. Without SiteURL the
// configured URL is told whatever the design says.
func TestSiteURLPerRevision(t *testing.T) {
	const node = "r01-cmp01"
	e := newEnv(t, func(c *Config) { c.SiteURL = true })
	pinned := newEnv(t)
	for i, tc := range []struct{ site, want string }{
		{"http://10.20.0.1:8701", "http://10.20.0.1:8701"},
		{"http://10.30.0.1:9000/", "http://10.30.0.1:9000"},
		{"", testURL},
	} {
		d := designtest.Example(t)
		d.Site.Spec.Introspection.URL = tc.site
		e.store(d)
		pinned.store(d)
		ud, err := e.srv.UserData(context.Background(), d, node, string(rune('1'+i)))
		if err != nil || !strings.Contains(string(ud), "SLIPWAY_URL='"+tc.want+"'") {
			t.Errorf("Site URL %q: user data %v, want it to carry %s:\n%s", tc.site, err, tc.want, ud)
		}
		p, err := e.srv.BootstrapStatus(context.Background(), d, node, string(rune('1'+i)))
		if err != nil || p.URL != tc.want {
			t.Errorf("Site URL %q: bootstrap status names %q (%v), want %s", tc.site, p.URL, err, tc.want)
		}
		ud, err = pinned.srv.UserData(context.Background(), d, node, string(rune('1'+i)))
		if err != nil || !strings.Contains(string(ud), "SLIPWAY_URL='"+testURL+"'") {
			t.Errorf("without SiteURL, Site URL %q: user data %v, want it to carry %s", tc.site, err, testURL)
		}
	}
	d := designtest.Example(t)
	d.Site.Spec.Introspection.URL = "ftp://10.20.0.1/"
	e.store(d)
	if _, err := e.srv.UserData(context.Background(), d, node, "9"); err == nil || !strings.Contains(err.Error(), "introspection.url") {
		t.Errorf("an ftp Site URL: %v, want an error naming introspection.url", err)
	}
}
