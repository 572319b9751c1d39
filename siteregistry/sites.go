// Package sites keeps the site records: server-side state, owned by
// admins, that says where a site's provisioner is and how Slipway logs in
// to it. A design's Site binds to the record of its name; the endpoint
// and the credentials come from the record, never from the design, so an
// operator who may apply designs can't point a site's key at a URL of
// their own.
//
// # Layout
//
// In the [statestore.KeyedRecords] given to [New]:
//
//	collection "maas_sites"
//	    key: the record's ID ("ms-" and 10 hex digits)
//	    value: JSON Record
//
// The API key is not in the record: it is the secret store's secret
// CredentialSecret(id), encrypted, written and rotated through [Registry]
// and never read back through it.
package siteregistry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/storedrec"
	"github.com/slipway-dev/slipway/statestore"
)

const coll = "maas_sites"

// Stored forms of the registry's records: each carries its schema
// version (internal/storedrec).
var (
	siteKind    = storedrec.NewKind("site", reflect.TypeFor[Record]())
	profileKind = storedrec.NewKind("site profile", reflect.TypeFor[Profile]())
	roceKind    = storedrec.NewKind("RoCE assignment", reflect.TypeFor[RoCEAssignment]())
)

// Bounds of a record's fields.
const (
	MaxNameLen   = 63
	MaxURLLen    = 512
	MaxAPIKeyLen = 512
	MaxSites     = 256
)

// Statuses.
const (
	StatusEnabled  = "enabled"
	StatusDisabled = "disabled"
)

// KindMAAS is the one provisioner kind today.
const KindMAAS = "maas"

// Erase policies a site's policy may name.
var erasePolicies = []string{"", "none", "quick", "secure"}

var (
	// ErrNotFound is wrapped by errors for records that do not exist.
	ErrNotFound = errors.New("site not found")
	// ErrConflict is wrapped by errors for a name taken by another record,
	// or too many records.
	ErrConflict = errors.New("site conflict")
	// ErrInvalid is wrapped by errors for values a record can't take.
	ErrInvalid = errors.New("invalid site")
	// ErrDisabled is wrapped by Binding's error for a disabled site.
	ErrDisabled = errors.New("site disabled")
)

// Record is one site.
type Record struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Kind        string      `json:"kind"`
	URL         string      `json:"url"`
	Status      string      `json:"status"`
	Policy      Policy      `json:"policy"`
	Credentials Credentials `json:"credentials"`
	Created     time.Time   `json:"created"`
	Updated     time.Time   `json:"updated"`
}

// Policy is the site's operating policy.
type Policy struct {
	// MaxConcurrent bounds the provisioner calls the engine makes to this
	// site at once (0: the engine's default).
	MaxConcurrent int `json:"max_concurrent,omitempty"`
	// Erase is the disk erase policy when a node's machine is released
	// ("": the design's).
	Erase string `json:"erase,omitempty"`
	// SkipBMCConfig: MAAS's commissioning leaves the BMC alone (nil:
	// Slipway's default, true: Slipway owns the BMC and its credentials;
	// false lets MAAS configure it, creating its own BMC user).
	SkipBMCConfig *bool `json:"skip_bmc_config,omitempty"`
	// DefaultProfile names the site profile nodes get when they name none.
	DefaultProfile string `json:"default_profile,omitempty"`
}

// Credentials say whether the API key is set and when it was written;
// never the key.
type Credentials struct {
	Set     bool      `json:"set"`
	Updated time.Time `json:"updated,omitzero"`
}

// Secrets is the secret store the API keys live in.
type Secrets interface {
	Put(ctx context.Context, name, value string) error
	Get(ctx context.Context, name string) (drivers.Secret, error)
	Delete(ctx context.Context, name string) error
}

// CredentialPrefix starts the names of the secrets site records hold;
// designs and the secret routes can't name them (ReservedSecret).
const CredentialPrefix = "maas-site."

// CredentialSecret is the name of site id's API key in the secret store.
func CredentialSecret(id string) string { return CredentialPrefix + id }

// ReservedSecret reports whether a secret name belongs to a site record.
func ReservedSecret(name string) bool { return strings.HasPrefix(name, CredentialPrefix) }

// Registry reads and writes site records.
type Registry struct {
	st  statestore.KeyedRecords
	sec Secrets
	now func() time.Time
}

// New returns the registry over st, with the API keys in sec.
func New(st statestore.KeyedRecords, sec Secrets) *Registry {
	return &Registry{st: st, sec: sec, now: func() time.Time { return time.Now().UTC() }}
}

// Create is what a new site needs.
type Create struct {
	Name   string
	Kind   string // "" is maas
	URL    string
	APIKey string
	Policy Policy
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// CheckName reports whether name can name a site: a DNS label.
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%w: name %.80q: use a DNS label (1 to 63 characters a-z, 0-9 and '-', not starting or ending with '-'), the name of the design's Site", ErrInvalid, name)
	}
	return nil
}

// CheckURL reports whether u can be a site's provisioner endpoint: an
// absolute http(s) URL without credentials, query or fragment.
func CheckURL(u string) error {
	if len(u) > MaxURLLen {
		return fmt.Errorf("%w: url of %d bytes: at most %d", ErrInvalid, len(u), MaxURLLen)
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("%w: url %.80q: give the provisioner's absolute http(s) URL, e.g. http://maas.example:5240/MAAS", ErrInvalid, u)
	}
	if p.User != nil || p.RawQuery != "" || p.Fragment != "" {
		return fmt.Errorf("%w: url: no user, query or fragment (the API key goes in api_key)", ErrInvalid)
	}
	return nil
}

// CheckAPIKey reports whether key looks like a MAAS API key
// (consumer:token:secret); its error never repeats the key.
func CheckAPIKey(key string) error {
	if len(key) == 0 || len(key) > MaxAPIKeyLen {
		return fmt.Errorf("%w: api_key: give the MAAS API key (consumer:token:secret), at most %d bytes", ErrInvalid, MaxAPIKeyLen)
	}
	if parts := strings.Split(key, ":"); len(parts) != 3 || slices.Contains(parts, "") {
		return fmt.Errorf("%w: api_key: a MAAS API key has three parts separated by ':' (consumer:token:secret)", ErrInvalid)
	}
	return nil
}

// Check reports what of the policy a site can't take.
func (p Policy) Check() error {
	if p.MaxConcurrent < 0 || p.MaxConcurrent > 10000 {
		return fmt.Errorf("%w: policy.max_concurrent %d: 0 (the engine's default) to 10000", ErrInvalid, p.MaxConcurrent)
	}
	if !slices.Contains(erasePolicies, p.Erase) {
		return fmt.Errorf("%w: policy.erase %.40q: none, quick or secure", ErrInvalid, p.Erase)
	}
	if p.DefaultProfile != "" {
		if err := CheckName(p.DefaultProfile); err != nil {
			return fmt.Errorf("%w: policy.default_profile: a profile's name", ErrInvalid)
		}
	}
	return nil
}

// Create stores a new enabled site with its API key; the name must be
// free.
func (r *Registry) Create(ctx context.Context, c Create) (Record, error) {
	kind := c.Kind
	if kind == "" {
		kind = KindMAAS
	}
	if kind != KindMAAS {
		return Record{}, fmt.Errorf("%w: kind %.40q: maas is the one provisioner kind", ErrInvalid, kind)
	}
	for _, err := range []error{CheckName(c.Name), CheckURL(c.URL), CheckAPIKey(c.APIKey), c.Policy.Check()} {
		if err != nil {
			return Record{}, err
		}
	}
	if c.Policy.DefaultProfile != "" {
		return Record{}, fmt.Errorf("%w: policy.default_profile: a new site has no profiles yet; create the site, then its profile, then set default_profile", ErrInvalid)
	}
	all, err := r.List(ctx)
	if err != nil {
		return Record{}, err
	}
	if len(all) >= MaxSites {
		return Record{}, fmt.Errorf("%w: %d sites already, the most one server keeps", ErrConflict, len(all))
	}
	if s, ok := byName(all, c.Name); ok {
		return Record{}, fmt.Errorf("%w: site name %s is taken by %s", ErrConflict, c.Name, s.ID)
	}
	now := r.now()
	rec := Record{ID: newID(), Name: c.Name, Kind: kind, URL: c.URL, Status: StatusEnabled, Policy: c.Policy,
		Credentials: Credentials{Set: true, Updated: now}, Created: now, Updated: now}
	if err := r.sec.Put(ctx, CredentialSecret(rec.ID), c.APIKey); err != nil {
		return Record{}, fmt.Errorf("storing the site's API key: %w", err)
	}
	if err := r.put(ctx, rec); err != nil {
		_ = r.sec.Delete(context.WithoutCancel(ctx), CredentialSecret(rec.ID))
		return Record{}, err
	}
	return rec, nil
}

// Patch changes what is set of a record's name, URL, status and policy.
type Patch struct {
	Name   *string
	URL    *string
	Status *string
	Policy *Policy
}

// Update applies p to site id.
func (r *Registry) Update(ctx context.Context, id string, p Patch) (Record, error) {
	rec, err := r.Get(ctx, id)
	if err != nil {
		return Record{}, err
	}
	if p.Name != nil && *p.Name != rec.Name {
		if err := r.rename(ctx, &rec, *p.Name); err != nil {
			return Record{}, err
		}
	}
	if p.URL != nil {
		if err := CheckURL(*p.URL); err != nil {
			return Record{}, err
		}
		rec.URL = *p.URL
	}
	if p.Status != nil {
		if *p.Status != StatusEnabled && *p.Status != StatusDisabled {
			return Record{}, fmt.Errorf("%w: status %.40q: enabled or disabled", ErrInvalid, *p.Status)
		}
		rec.Status = *p.Status
	}
	if p.Policy != nil {
		if err := p.Policy.Check(); err != nil {
			return Record{}, err
		}
		if err := r.checkDefaultProfile(ctx, id, *p.Policy); err != nil {
			return Record{}, err
		}
		rec.Policy = *p.Policy
	}
	rec.Updated = r.now()
	return rec, r.put(ctx, rec)
}

func (r *Registry) rename(ctx context.Context, rec *Record, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	all, err := r.List(ctx)
	if err != nil {
		return err
	}
	if s, ok := byName(all, name); ok {
		return fmt.Errorf("%w: site name %s is taken by %s", ErrConflict, name, s.ID)
	}
	rec.Name = name
	return nil
}

// Disable marks site id disabled: the engine refuses to drive it; the
// record and its key stay.
func (r *Registry) Disable(ctx context.Context, id string) (Record, error) {
	st := StatusDisabled
	return r.Update(ctx, id, Patch{Status: &st})
}

// SetCredentials writes (rotates) site id's API key.
func (r *Registry) SetCredentials(ctx context.Context, id, apiKey string) (Record, error) {
	if err := CheckAPIKey(apiKey); err != nil {
		return Record{}, err
	}
	rec, err := r.Get(ctx, id)
	if err != nil {
		return Record{}, err
	}
	if err := r.sec.Put(ctx, CredentialSecret(id), apiKey); err != nil {
		return Record{}, fmt.Errorf("storing the site's API key: %w", err)
	}
	now := r.now()
	rec.Credentials = Credentials{Set: true, Updated: now}
	rec.Updated = now
	return rec, r.put(ctx, rec)
}

// Get returns site id.
func (r *Registry) Get(ctx context.Context, id string) (Record, error) {
	b, err := r.st.Get(ctx, coll, id)
	if errors.Is(err, statestore.ErrNoRecord) {
		return Record{}, fmt.Errorf("%w: no site %.40q", ErrNotFound, id)
	}
	if err != nil {
		return Record{}, err
	}
	var rec Record
	if err := siteKind.Decode(id, b, &rec); errors.Is(err, storedrec.ErrNewerVersion) {
		return Record{}, err
	} else if err != nil {
		return Record{}, fmt.Errorf("site %s: damaged record: %w", id, err)
	}
	return rec, nil
}

// List returns every site, by ID.
func (r *Registry) List(ctx context.Context) ([]Record, error) {
	return statestore.ListJSON[Record](ctx, r.st, siteKind, coll, "")
}

// ByName returns the site called name.
func (r *Registry) ByName(ctx context.Context, name string) (Record, error) {
	all, err := r.List(ctx)
	if err != nil {
		return Record{}, err
	}
	if rec, ok := byName(all, name); ok {
		return rec, nil
	}
	return Record{}, fmt.Errorf("%w: no site is named %.80q", ErrNotFound, name)
}

// Endpoint is what the engine needs to drive a site: the record and its
// API key.
type Endpoint struct {
	Record Record
	APIKey drivers.Secret
}

// Binding returns the endpoint of the enabled site called name; ErrNotFound
// when there is none, ErrDisabled when it is disabled.
func (r *Registry) Binding(ctx context.Context, name string) (Endpoint, error) {
	rec, err := r.ByName(ctx, name)
	if err != nil {
		return Endpoint{}, err
	}
	if rec.Status != StatusEnabled {
		return Endpoint{}, fmt.Errorf("%w: site %s (%s) is disabled: enable it (PATCH its status) to drive its machines", ErrDisabled, name, rec.ID)
	}
	return r.endpoint(ctx, rec)
}

// Endpoint returns site id's endpoint, enabled or not (to probe it).
func (r *Registry) Endpoint(ctx context.Context, id string) (Endpoint, error) {
	rec, err := r.Get(ctx, id)
	if err != nil {
		return Endpoint{}, err
	}
	return r.endpoint(ctx, rec)
}

func (r *Registry) endpoint(ctx context.Context, rec Record) (Endpoint, error) {
	key, err := r.sec.Get(ctx, CredentialSecret(rec.ID))
	if err != nil {
		return Endpoint{}, fmt.Errorf("site %s: its API key: %w", rec.Name, err)
	}
	return Endpoint{Record: rec, APIKey: key}, nil
}

func byName(all []Record, name string) (Record, bool) {
	for _, s := range all {
		if s.Name == name {
			return s, true
		}
	}
	return Record{}, false
}

func (r *Registry) put(ctx context.Context, rec Record) error {
	b, err := siteKind.Encode(rec)
	if err != nil {
		return err
	}
	_, err = r.st.Write(ctx, statestore.Put(coll, rec.ID, b))
	return err
}

func newID() string {
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "ms-" + hex.EncodeToString(b)
}
