// Package probe checks a site record's provisioner with a server driver
// of its own, built from the record and its stored key: what
// POST /admin/maas-sites/{id}/probe answers. It answers its own Result;
// the control API converts it to its wire type at its edge.
package probe

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	maasdrv "github.com/slipway-dev/slipway/drivers/server/maas"
	"github.com/slipway-dev/slipway/siteregistry"
)

// Timeout bounds one probe of a site's provisioner.
const Timeout = 30 * time.Second

// Result is what a probe of a site's provisioner found.
type Result struct {
	Site    string // the site's ID
	Name    string
	URL     string
	Checked time.Time
	Info    drivers.SiteInfo
	// Error says what failed when the provisioner did not answer or
	// refused the credentials ("" when it answered).
	Error string
	// Scripts are the scripts the site's profiles name (nil when no
	// profile names any, or the site's scripts could not be read).
	Scripts []ScriptCheck
}

// ScriptCheck is a script (name or tag) site profiles depend on.
type ScriptCheck struct {
	Name     string
	Profiles []string // the profiles naming it
	Present  bool
	// Matches are the site's scripts it names (itself, or those a tag
	// names), with their types and versions.
	Matches []drivers.Script
}

// Prober checks a site record's MAAS with a server driver of its own,
// built by NewServer (the driver registry's) from the record and its key.
type Prober struct {
	NewServer func(kind string, cfg drivers.Config) (drivers.Server, error)
	Sites     *siteregistry.Registry
}

// ProbeSite answers what the site's MAAS says; a MAAS that does not
// answer or refuses the key is an answer too (Error says what failed),
// not an error of the call.
func (p Prober) ProbeSite(ctx context.Context, id string) (Result, error) {
	ep, err := p.Sites.Endpoint(ctx, id)
	if err != nil {
		return Result{}, err
	}
	out := Result{Site: ep.Record.ID, Name: ep.Record.Name, URL: ep.Record.URL, Checked: time.Now().UTC()}
	srv, err := p.NewServer(ep.Record.Kind, drivers.Config{Settings: map[string]string{maasdrv.SettingURL: ep.Record.URL},
		Secrets: map[string]drivers.Secret{maasdrv.SecretAPIKey: ep.APIKey}})
	if err != nil {
		out.Error = hideKey(err, ep.APIKey)
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	out.Info, err = srv.ProbeSite(ctx)
	if err != nil {
		out.Error = hideKey(err, ep.APIKey)
	}
	if out.Info.Scripts != nil {
		profiles, err := p.Sites.Profiles(ctx, id)
		if err != nil {
			return Result{}, err
		}
		out.Scripts = CheckScripts(profiles, out.Info.Scripts)
	}
	return out, nil
}

// hideKey is err's message with every form of the key, and of its secret
// part (what an OAuth PLAINTEXT signature carries), redacted and the text
// bounded: the built-in MAAS driver already leaves them out, a driver
// from a plugin may not.
func hideKey(err error, key drivers.Secret) string {
	k := key.Reveal()
	return drivers.PeerText(err.Error(), k, k[strings.LastIndexByte(k, ':')+1:])
}

// CheckScripts checks the scripts (names or tags) the profiles name
// against the site's: a commissioning list against its commissioning
// scripts, a testing list against its tests ("none" is no script).
func CheckScripts(profiles []siteregistry.Profile, have []drivers.Script) []ScriptCheck {
	type key struct{ name, typ string }
	byKey := map[key]*ScriptCheck{}
	var order []key
	for _, pr := range profiles {
		for _, l := range []struct {
			typ   string
			names []string
		}{{"commissioning", pr.CommissioningScripts}, {"testing", pr.TestingScripts}} {
			for _, n := range l.names {
				if n == "none" && l.typ == "testing" {
					continue
				}
				k := key{n, l.typ}
				if byKey[k] == nil {
					byKey[k] = &ScriptCheck{Name: n, Matches: matching(have, n, l.typ)}
					byKey[k].Present = len(byKey[k].Matches) > 0
					order = append(order, k)
				}
				byKey[k].Profiles = append(byKey[k].Profiles, pr.Name)
			}
		}
	}
	out := make([]ScriptCheck, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	return out
}

// matching are the scripts of type typ that name is (by name or tag).
func matching(have []drivers.Script, name, typ string) []drivers.Script {
	var out []drivers.Script
	for _, s := range have {
		if s.Type == typ && (s.Name == name || slices.Contains(s.Tags, name)) {
			out = append(out, s)
		}
	}
	return out
}
