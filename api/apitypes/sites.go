// The site registry's records as the API shows them: sites, their
// policies, profiles and RoCE assignments. The registry's types are what
// the store keeps; these are the HTTP contract, converted at the edge.

package apitypes

import (
	"slices"
	"time"

	"github.com/slipway-dev/slipway/siteregistry"
)

// Policy is the API's siteregistry.Policy (conversions below).
type Policy struct {
	MaxConcurrent  int    `json:"max_concurrent,omitempty"`
	Erase          string `json:"erase,omitempty"`
	SkipBMCConfig  *bool  `json:"skip_bmc_config,omitempty"`
	DefaultProfile string `json:"default_profile,omitempty"`
}

// RoCEItem is the API's siteregistry.RoCEItem (conversions below).
type RoCEItem struct {
	Hostname  string `json:"hostname"`
	Interface string `json:"interface"`
	IPv4CIDR  string `json:"ipv4_cidr"`
}

// RoCEAssignment is the API's siteregistry.RoCEAssignment (conversions below).
type RoCEAssignment struct {
	ID   string `json:"id"`
	Site string `json:"site"`
	RoCEItem
	Updated time.Time `json:"updated"`
}

// Profile is the API's siteregistry.Profile (conversions below).
type Profile struct {
	ID   string `json:"id"`
	Site string `json:"site"`
	ProfileSpec
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// ProfileSpec is the API's siteregistry.ProfileSpec (conversions below).
type ProfileSpec struct {
	Name                 string      `json:"name"`
	Architecture         string      `json:"architecture,omitempty"`
	Series               string      `json:"distro_series,omitempty"`
	Kernel               string      `json:"kernel,omitempty"`
	PXE                  PXEOverride `json:"pxe,omitzero"`
	Erase                string      `json:"erase,omitempty"`
	RoCE                 bool        `json:"roce,omitempty"`
	CommissioningScripts []string    `json:"commissioning_scripts,omitempty"`
	TestingScripts       []string    `json:"testing_scripts,omitempty"`
}

// PXEOverride is the API's siteregistry.PXEOverride (conversions below).
type PXEOverride struct {
	Interface string `json:"interface,omitempty"`
	Network   string `json:"network,omitempty"`
}

// Record is the API's siteregistry.Record (conversions below).
type Record struct {
	ID          string           `json:"id"`
	Name        string           `json:"name"`
	Kind        string           `json:"kind"`
	URL         string           `json:"url"`
	Status      string           `json:"status"`
	Policy      Policy           `json:"policy"`
	Credentials SitesCredentials `json:"credentials"`
	Created     time.Time        `json:"created"`
	Updated     time.Time        `json:"updated"`
}

// SitesCredentials is the API's siteregistry.Credentials (conversions below).
type SitesCredentials struct {
	Set     bool      `json:"set"`
	Updated time.Time `json:"updated,omitzero"`
}

// FromPolicy converts siteregistry.Policy to the wire.
func FromPolicy(v siteregistry.Policy) Policy {
	var w Policy
	w.MaxConcurrent = v.MaxConcurrent
	w.Erase = v.Erase
	w.SkipBMCConfig = v.SkipBMCConfig
	w.DefaultProfile = v.DefaultProfile
	return w
}

// ToRegistry converts the wire's Policy back to siteregistry.Policy.
func (w Policy) ToRegistry() siteregistry.Policy {
	var v siteregistry.Policy
	v.MaxConcurrent = w.MaxConcurrent
	v.Erase = w.Erase
	v.SkipBMCConfig = w.SkipBMCConfig
	v.DefaultProfile = w.DefaultProfile
	return v
}

// FromRoCEItem converts siteregistry.RoCEItem to the wire.
func FromRoCEItem(v siteregistry.RoCEItem) RoCEItem {
	var w RoCEItem
	w.Hostname = v.Hostname
	w.Interface = v.Interface
	w.IPv4CIDR = v.IPv4CIDR
	return w
}

// ToRegistry converts the wire's RoCEItem back to siteregistry.RoCEItem.
func (w RoCEItem) ToRegistry() siteregistry.RoCEItem {
	var v siteregistry.RoCEItem
	v.Hostname = w.Hostname
	v.Interface = w.Interface
	v.IPv4CIDR = w.IPv4CIDR
	return v
}

// FromRoCEAssignment converts siteregistry.RoCEAssignment to the wire.
func FromRoCEAssignment(v siteregistry.RoCEAssignment) RoCEAssignment {
	var w RoCEAssignment
	w.ID = v.ID
	w.Site = v.Site
	w.RoCEItem = FromRoCEItem(v.RoCEItem)
	w.Updated = v.Updated
	return w
}

// FromProfile converts siteregistry.Profile to the wire.
func FromProfile(v siteregistry.Profile) Profile {
	var w Profile
	w.ID = v.ID
	w.Site = v.Site
	w.ProfileSpec = FromProfileSpec(v.ProfileSpec)
	w.Created = v.Created
	w.Updated = v.Updated
	return w
}

// FromProfileSpec converts siteregistry.ProfileSpec to the wire.
func FromProfileSpec(v siteregistry.ProfileSpec) ProfileSpec {
	var w ProfileSpec
	w.Name = v.Name
	w.Architecture = v.Architecture
	w.Series = v.Series
	w.Kernel = v.Kernel
	w.PXE = FromPXEOverride(v.PXE)
	w.Erase = v.Erase
	w.RoCE = v.RoCE
	w.CommissioningScripts = slices.Clone(v.CommissioningScripts)
	w.TestingScripts = slices.Clone(v.TestingScripts)
	return w
}

// ToRegistry converts the wire's ProfileSpec back to siteregistry.ProfileSpec.
func (w ProfileSpec) ToRegistry() siteregistry.ProfileSpec {
	var v siteregistry.ProfileSpec
	v.Name = w.Name
	v.Architecture = w.Architecture
	v.Series = w.Series
	v.Kernel = w.Kernel
	v.PXE = w.PXE.ToRegistry()
	v.Erase = w.Erase
	v.RoCE = w.RoCE
	v.CommissioningScripts = slices.Clone(w.CommissioningScripts)
	v.TestingScripts = slices.Clone(w.TestingScripts)
	return v
}

// FromPXEOverride converts siteregistry.PXEOverride to the wire.
func FromPXEOverride(v siteregistry.PXEOverride) PXEOverride {
	var w PXEOverride
	w.Interface = v.Interface
	w.Network = v.Network
	return w
}

// ToRegistry converts the wire's PXEOverride back to siteregistry.PXEOverride.
func (w PXEOverride) ToRegistry() siteregistry.PXEOverride {
	var v siteregistry.PXEOverride
	v.Interface = w.Interface
	v.Network = w.Network
	return v
}

// FromRecord converts siteregistry.Record to the wire.
func FromRecord(v siteregistry.Record) Record {
	var w Record
	w.ID = v.ID
	w.Name = v.Name
	w.Kind = v.Kind
	w.URL = v.URL
	w.Status = v.Status
	w.Policy = FromPolicy(v.Policy)
	w.Credentials = FromSitesCredentials(v.Credentials)
	w.Created = v.Created
	w.Updated = v.Updated
	return w
}

// FromSitesCredentials converts siteregistry.Credentials to the wire.
func FromSitesCredentials(v siteregistry.Credentials) SitesCredentials {
	var w SitesCredentials
	w.Set = v.Set
	w.Updated = v.Updated
	return w
}

// Convert converts each element of in with conv: a list crossing the API
// edge (nil stays nil, so an answer's null stays null).
func Convert[S, W any](in []S, conv func(S) W) []W {
	if in == nil {
		return nil
	}
	out := make([]W, len(in))
	for i, v := range in {
		out[i] = conv(v)
	}
	return out
}

// RoCEFinding is the API's siteregistry.RoCEFinding: one thing wrong
// with a bulk upsert (the problem's findings of a refused one).
type RoCEFinding struct {
	Item    int    `json:"item"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// FromRoCEFinding converts siteregistry.RoCEFinding to the wire.
func FromRoCEFinding(v siteregistry.RoCEFinding) RoCEFinding {
	return RoCEFinding{Item: v.Item, Rule: v.Rule, Message: v.Message}
}
