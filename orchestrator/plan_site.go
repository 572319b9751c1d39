package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// planSites is each site's part of a plan: what PrepareSite would change
// in the provisioner (when the server driver can plan, for the sites it
// drives: not unboundSites) and the changed site-level documents of the
// design (Site, Network, NetworkLink) against the current revision cur
// (nil: none). An error wrapping drivers.ErrCannotPlan says the planner
// cannot plan after all.
func (e *Engine) planSites(ctx context.Context, planner drivers.ServerPlanner, cur, d *design.Design) ([]record.SitePlan, error) {
	recs, err := siteRecords(cur, d)
	if err != nil {
		return nil, err
	}
	unbound := unboundSites(cur, d)
	var out []record.SitePlan
	for _, spec := range driverspec.Sites(d) {
		sp := record.SitePlan{Site: spec.Name, Records: recs[spec.Name]}
		if planner != nil && !slices.Contains(unbound, spec.Name) {
			err := e.readServer(ctx, func(ctx context.Context) (err error) {
				sp.Changes, err = planner.PlanSite(ctx, spec)
				return err
			})
			if errors.Is(err, drivers.ErrCannotPlan) {
				return nil, err
			}
			if err != nil {
				return nil, fmt.Errorf("plan: reading site %s in the provisioner: %w; nothing was changed: try again", orDefault(spec.Name, "(the only one)"), err)
			}
		}
		out = append(out, sp)
	}
	for _, name := range sortedSiteNames(recs) { // a site the planned design no longer has
		if !slices.ContainsFunc(out, func(s record.SitePlan) bool { return s.Site == name }) {
			out = append(out, record.SitePlan{Site: name, Records: recs[name]})
		}
	}
	return out, nil
}

// unboundSites are the Sites of d that the current design cur lacks. The
// server driver is built from the current design's Sites (serve builds
// it again once a design is applied), so it does not drive these yet:
// asked, it would refuse (several Sites) or read another Site's
// provisioner (one).
func unboundSites(cur, d *design.Design) []string {
	var have []string
	if cur != nil {
		have = cur.SiteNames()
	}
	var out []string
	for _, name := range d.SiteNames() {
		if !slices.Contains(have, name) {
			out = append(out, name)
		}
	}
	return out
}

// unboundNotes say, for a plan that read the provisioner, which Sites it
// could not read yet.
func unboundNotes(cur, d *design.Design) []string {
	var out []string
	for _, name := range unboundSites(cur, d) {
		out = append(out, fmt.Sprintf("site %s is new: its provisioner is not read until the design is applied "+
			"(prepare-site then makes what its networks need; plan again after the apply to see it)", name))
	}
	return out
}

// siteRecords are the changed site-level documents by site: each Site
// document to its site, each Network and NetworkLink to every site whose
// nodes use it in either design (with one site, all of them to it).
func siteRecords(cur, d *design.Design) (map[string][]string, error) {
	raw := func(x *design.Design) ([]byte, error) {
		if x == nil {
			return nil, nil
		}
		v := design.Design{Site: x.Site, Networks: x.Networks, NetworkLinks: x.NetworkLinks}
		b, _, err := v.Canonical()
		return b, err
	}
	a, err := raw(cur)
	if err != nil {
		return nil, err
	}
	b, err := raw(d)
	if err != nil {
		return nil, err
	}
	diff, err := design.DiffCanonical(a, b)
	if err != nil {
		return nil, fmt.Errorf("plan: compare the site records: %w", err)
	}
	users := siteUsers(cur, d)
	out := map[string][]string{}
	for _, kind := range []string{design.KindNetwork, design.KindNetworkLink} {
		for _, line := range kindLines(diff.Kind(kind)) {
			for _, site := range users[kind+"/"+line.name] {
				out[site] = append(out[site], line.text)
			}
		}
	}
	for _, name := range unionSites(cur, d) {
		if line, ok := siteDocLine(cur, d, name); ok {
			out[name] = append([]string{line}, out[name]...)
		}
	}
	return out, nil
}

type kindLine struct{ name, text string }

// kindLines are one kind's changes in words: "Network oob: changed
// spec.cidr".
func kindLines(k design.KindDiff) []kindLine {
	var out []kindLine
	for _, n := range k.Added {
		out = append(out, kindLine{n, fmt.Sprintf("%s %s: added", k.Kind, n)})
	}
	for _, n := range k.Removed {
		out = append(out, kindLine{n, fmt.Sprintf("%s %s: removed", k.Kind, n)})
	}
	for _, c := range k.Changed {
		out = append(out, kindLine{c.Name, fmt.Sprintf("%s %s: changed %s", k.Kind, c.Name, strings.Join(c.Paths, ", "))})
	}
	return out
}

// siteUsers maps "Kind/name" of each network and link to the sites
// whose specs (driverspec.Sites) carry it, in either design.
func siteUsers(designs ...*design.Design) map[string][]string {
	out := map[string][]string{}
	add := func(key, site string) {
		if !slices.Contains(out[key], site) {
			out[key] = append(out[key], site)
		}
	}
	for _, x := range designs {
		if x == nil {
			continue
		}
		for _, s := range driverspec.Sites(x) {
			for _, sub := range s.Subnets {
				add(design.KindNetwork+"/"+sub.Name, s.Name)
			}
			for _, l := range s.Links {
				add(design.KindNetworkLink+"/"+l.Name, s.Name)
			}
		}
	}
	return out
}

// siteDocLine says how Site document name changed between the designs.
func siteDocLine(cur, d *design.Design, name string) (string, bool) {
	var a, b *design.Site
	if cur != nil {
		a = cur.SiteNamed(name)
	}
	if d != nil {
		b = d.SiteNamed(name)
	}
	switch {
	case a == nil && b == nil:
		return "", false
	case a == nil:
		return fmt.Sprintf("Site %s: added", name), true
	case b == nil:
		return fmt.Sprintf("Site %s: removed", name), true
	}
	ja, errA := json.Marshal(design.Design{Site: a})
	jb, errB := json.Marshal(design.Design{Site: b})
	if errA != nil || errB != nil {
		return fmt.Sprintf("Site %s: could not be compared", name), true
	}
	diff, err := design.DiffCanonical(ja, jb)
	if err != nil || diff.Empty() {
		return "", false
	}
	for _, c := range diff.Kind(design.KindSite).Changed {
		return fmt.Sprintf("Site %s: changed %s", name, strings.Join(c.Paths, ", ")), true
	}
	return "", false
}

func unionSites(cur, d *design.Design) []string {
	var out []string
	for _, x := range []*design.Design{cur, d} {
		if x == nil {
			continue
		}
		for _, n := range x.SiteNames() {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

func sortedSiteNames(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
