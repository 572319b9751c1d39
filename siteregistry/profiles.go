package siteregistry

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/storedrec"
	"github.com/slipway-dev/slipway/statestore"
)

// Profiles: named policy bundles of a site (what a node of the site
// deploys with when its host profile names the profile). The site's
// policy stands in as its default profile: Policy.DefaultProfile names
// one of them, or the policy's own erase setting applies.
//
//	collection "maas_site_profiles"
//	    key: SITE_ID "/" PROFILE_ID ("sp-" and 10 hex digits)
//	    value: JSON Profile

const profileColl = "maas_site_profiles"

// MaxProfiles bounds a site's profiles.
const MaxProfiles = 256

// Profile is a named policy bundle of a site.
type Profile struct {
	ID   string `json:"id"`
	Site string `json:"site"` // the site's ID
	ProfileSpec
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// ProfileSpec is what a profile says.
type ProfileSpec struct {
	Name string `json:"name"`
	// Architecture is MAAS's, e.g. amd64/generic ("": the machine's).
	Architecture string `json:"architecture,omitempty"`
	// Series is the distro series deployed, e.g. jammy ("": the design's image).
	Series string `json:"distro_series,omitempty"`
	// Kernel is the kernel deployed, e.g. ga-22.04 ("": the design's).
	Kernel string `json:"kernel,omitempty"`
	// PXE says which NIC PXE-boots (a device alias of the hardware
	// profile) and on which network ("": the design's).
	PXE PXEOverride `json:"pxe,omitzero"`
	// Erase is the erase policy on release ("": the site's policy).
	Erase string `json:"erase,omitempty"`
	// RoCE: the site's RoCE assignments are applied to the node's GPU
	// NICs when it deploys (phase 2).
	RoCE bool `json:"roce,omitempty"`
	// CommissioningScripts and TestingScripts name the provisioner's
	// scripts (names or tags, never their content) the nodes'
	// commissioning runs: commissioning scripts besides MAAS's required
	// ones, and tests ("none": no tests; empty: MAAS's defaults). The
	// probe reports whether the site has them, and their versions.
	CommissioningScripts []string `json:"commissioning_scripts,omitempty"`
	TestingScripts       []string `json:"testing_scripts,omitempty"`
}

// MaxScripts bounds each of a profile's script lists.
const MaxScripts = 32

// PXEOverride names the NIC and network a node PXE-boots from.
type PXEOverride struct {
	Interface string `json:"interface,omitempty"`
	Network   string `json:"network,omitempty"`
}

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$`)

// Check reports everything the spec can't take, at once.
func (p ProfileSpec) Check() error {
	var errs []error
	if err := CheckName(p.Name); err != nil {
		errs = append(errs, err)
	}
	for _, f := range []struct{ field, v string }{{"architecture", p.Architecture}, {"distro_series", p.Series}, {"kernel", p.Kernel},
		{"pxe.interface", p.PXE.Interface}, {"pxe.network", p.PXE.Network}} {
		if f.v != "" && !tokenRE.MatchString(f.v) {
			errs = append(errs, fmt.Errorf("%w: %s %.80q: 1 to 63 characters A-Z, a-z, 0-9, '.', '_', '/' and '-'", ErrInvalid, f.field, f.v))
		}
	}
	if !slices.Contains(erasePolicies, p.Erase) {
		errs = append(errs, fmt.Errorf("%w: erase %.40q: none, quick or secure", ErrInvalid, p.Erase))
	}
	for _, f := range []struct {
		field string
		names []string
	}{{"commissioning_scripts", p.CommissioningScripts}, {"testing_scripts", p.TestingScripts}} {
		if len(f.names) > MaxScripts {
			errs = append(errs, fmt.Errorf("%w: %s: %d names, at most %d", ErrInvalid, f.field, len(f.names), MaxScripts))
			continue
		}
		for _, n := range f.names {
			if !scriptNameRE.MatchString(n) {
				errs = append(errs, fmt.Errorf("%w: %s: %.80q is not a script name or tag (1 to 64 characters A-Z, a-z, 0-9, '.', '_' and '-')", ErrInvalid, f.field, n))
			}
		}
	}
	return errors.Join(errs...)
}

// scriptNameRE is what a script's name or tag may be here (no commas: the
// provisioner takes a comma-separated list).
var scriptNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CreateProfile adds a profile to site id; its name must be free there.
func (r *Registry) CreateProfile(ctx context.Context, site string, p ProfileSpec) (Profile, error) {
	if _, err := r.Get(ctx, site); err != nil {
		return Profile{}, err
	}
	if err := p.Check(); err != nil {
		return Profile{}, err
	}
	all, err := r.Profiles(ctx, site)
	if err != nil {
		return Profile{}, err
	}
	if len(all) >= MaxProfiles {
		return Profile{}, fmt.Errorf("%w: site %s has %d profiles, the most it keeps", ErrConflict, site, len(all))
	}
	if x, ok := profileNamed(all, p.Name); ok {
		return Profile{}, fmt.Errorf("%w: site %s has a profile named %s already (%s)", ErrConflict, site, p.Name, x.ID)
	}
	now := r.now()
	out := Profile{ID: "sp-" + newID()[3:], Site: site, ProfileSpec: p, Created: now, Updated: now}
	return out, r.putProfile(ctx, out)
}

// Profiles lists site id's profiles, by ID.
func (r *Registry) Profiles(ctx context.Context, site string) ([]Profile, error) {
	return statestore.ListJSON[Profile](ctx, r.st, profileKind, profileColl, site+"/")
}

// Profile returns profile pid of site id.
func (r *Registry) Profile(ctx context.Context, site, pid string) (Profile, error) {
	b, err := r.st.Get(ctx, profileColl, site+"/"+pid)
	if errors.Is(err, statestore.ErrNoRecord) {
		return Profile{}, fmt.Errorf("%w: site %.40q has no profile %.40q", ErrNotFound, site, pid)
	}
	if err != nil {
		return Profile{}, err
	}
	var p Profile
	if err := profileKind.Decode(site+"/"+pid, b, &p); errors.Is(err, storedrec.ErrNewerVersion) {
		return Profile{}, err
	} else if err != nil {
		return Profile{}, fmt.Errorf("profile %s: damaged record: %w", pid, err)
	}
	return p, nil
}

// UpdateProfile replaces what profile pid says (its name must stay free
// in the site).
func (r *Registry) UpdateProfile(ctx context.Context, site, pid string, p ProfileSpec) (Profile, error) {
	cur, err := r.Profile(ctx, site, pid)
	if err != nil {
		return Profile{}, err
	}
	if err := p.Check(); err != nil {
		return Profile{}, err
	}
	if p.Name != cur.Name {
		all, err := r.Profiles(ctx, site)
		if err != nil {
			return Profile{}, err
		}
		if x, ok := profileNamed(all, p.Name); ok {
			return Profile{}, fmt.Errorf("%w: site %s has a profile named %s already (%s)", ErrConflict, site, p.Name, x.ID)
		}
		if rec, err := r.Get(ctx, site); err == nil && rec.Policy.DefaultProfile == cur.Name {
			return Profile{}, fmt.Errorf("%w: profile %s is site %s's default profile: change the site's policy.default_profile first", ErrConflict, cur.Name, site)
		}
	}
	cur.ProfileSpec, cur.Updated = p, r.now()
	return cur, r.putProfile(ctx, cur)
}

// DeleteProfile removes profile pid; the site's default profile can't be
// removed.
func (r *Registry) DeleteProfile(ctx context.Context, site, pid string) error {
	p, err := r.Profile(ctx, site, pid)
	if err != nil {
		return err
	}
	if rec, err := r.Get(ctx, site); err == nil && rec.Policy.DefaultProfile == p.Name {
		return fmt.Errorf("%w: profile %s is site %s's default profile: change the site's policy.default_profile first", ErrConflict, p.Name, site)
	}
	_, err = r.st.Write(ctx, statestore.Delete(profileColl, site+"/"+pid))
	return err
}

// checkDefaultProfile: a site policy's default profile must be one of the
// site's profiles.
func (r *Registry) checkDefaultProfile(ctx context.Context, site string, p Policy) error {
	if p.DefaultProfile == "" {
		return nil
	}
	all, err := r.Profiles(ctx, site)
	if err != nil {
		return err
	}
	if _, ok := profileNamed(all, p.DefaultProfile); !ok {
		return fmt.Errorf("%w: policy.default_profile %s: site %s has no such profile (create it first)", ErrInvalid, p.DefaultProfile, site)
	}
	return nil
}

func profileNamed(all []Profile, name string) (Profile, bool) {
	for _, p := range all {
		if strings.EqualFold(p.Name, name) {
			return p, true
		}
	}
	return Profile{}, false
}

func (r *Registry) putProfile(ctx context.Context, p Profile) error {
	b, err := profileKind.Encode(p)
	if err != nil {
		return err
	}
	_, err = r.st.Write(ctx, statestore.Put(profileColl, p.Site+"/"+p.ID, b))
	return err
}

// ProfileNamed is the profile called name of the site record called
// site; name "" asks for the site's default profile. ok is false when
// the site has no record, no such profile, or (for "") no default.
func (r *Registry) ProfileNamed(ctx context.Context, site, name string) (p Profile, ok bool, err error) {
	rec, err := r.ByName(ctx, site)
	if errors.Is(err, ErrNotFound) {
		return Profile{}, false, nil
	}
	if err != nil {
		return Profile{}, false, err
	}
	if name == "" {
		name = rec.Policy.DefaultProfile
	}
	if name == "" {
		return Profile{}, false, nil
	}
	all, err := r.Profiles(ctx, rec.ID)
	if err != nil {
		return Profile{}, false, err
	}
	for _, p := range all {
		if p.Name == name {
			return p, true, nil
		}
	}
	return Profile{}, false, nil
}
