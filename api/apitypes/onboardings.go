// Onboardings as the API shows them: a batch request and the record of
// one. The onboarding package's types are what the store keeps (versioned,
// storedrec); these are the HTTP contract, converted at the edge.

package apitypes

import (
	"maps"
	"time"

	"github.com/slipway-dev/slipway/onboarding"
)

// OnboardingBatch is the body of POST /admin/onboardings/batch: rows
// sharing a site, a site profile and a SKU (the API's onboarding.Request).
type OnboardingBatch struct {
	SiteID      string `json:"site_id"`
	ProfileID   string `json:"profile_id"`
	SKUID       string `json:"sku_id"`
	HostProfile string `json:"host_profile,omitempty"`
	Rows        []Row  `json:"rows"`
}

// Row is one node of a batch onboarding (the API's onboarding.Row).
type Row struct {
	Hostname  string            `json:"hostname"`
	IPMIIP    string            `json:"ipmi_ip"`
	Rack      string            `json:"rack,omitempty"`
	Addresses map[string]string `json:"addresses,omitempty"`
}

// OnboardingRecord is what was asked of an onboarding and what it did
// (the API's onboarding.Record).
type OnboardingRecord struct {
	ID string `json:"id"`
	OnboardingBatch
	SiteName        string    `json:"site_name"`
	HostProfileUsed string    `json:"host_profile_used"`
	Revision        string    `json:"revision,omitempty"`
	Task            string    `json:"task,omitempty"`
	Error           string    `json:"error,omitempty"`
	Created         time.Time `json:"created"`
	By              string    `json:"by,omitempty"`
}

// FromOnboardingBatch converts onboarding.Request to the wire.
func FromOnboardingBatch(v onboarding.Request) OnboardingBatch {
	var w OnboardingBatch
	w.SiteID = v.SiteID
	w.ProfileID = v.ProfileID
	w.SKUID = v.SKUID
	w.HostProfile = v.HostProfile
	if v.Rows != nil {
		w.Rows = make([]Row, len(v.Rows))
		for i1 := range v.Rows {
			w.Rows[i1] = FromRow(v.Rows[i1])
		}
	}
	return w
}

// ToOnboarding converts the wire's OnboardingBatch back to onboarding.Request.
func (w OnboardingBatch) ToOnboarding() onboarding.Request {
	var v onboarding.Request
	v.SiteID = w.SiteID
	v.ProfileID = w.ProfileID
	v.SKUID = w.SKUID
	v.HostProfile = w.HostProfile
	if w.Rows != nil {
		v.Rows = make([]onboarding.Row, len(w.Rows))
		for i1 := range w.Rows {
			v.Rows[i1] = w.Rows[i1].ToOnboarding()
		}
	}
	return v
}

// FromRow converts onboarding.Row to the wire.
func FromRow(v onboarding.Row) Row {
	var w Row
	w.Hostname = v.Hostname
	w.IPMIIP = v.IPMIIP
	w.Rack = v.Rack
	w.Addresses = maps.Clone(v.Addresses)
	return w
}

// ToOnboarding converts the wire's Row back to onboarding.Row.
func (w Row) ToOnboarding() onboarding.Row {
	var v onboarding.Row
	v.Hostname = w.Hostname
	v.IPMIIP = w.IPMIIP
	v.Rack = w.Rack
	v.Addresses = maps.Clone(w.Addresses)
	return v
}

// FromOnboardingRecord converts onboarding.Record to the wire.
func FromOnboardingRecord(v onboarding.Record) OnboardingRecord {
	var w OnboardingRecord
	w.ID = v.ID
	w.OnboardingBatch = FromOnboardingBatch(v.Request)
	w.SiteName = v.SiteName
	w.HostProfileUsed = v.HostProfileUsed
	w.Revision = v.Revision
	w.Task = v.Task
	w.Error = v.Error
	w.Created = v.Created
	w.By = v.By
	return w
}

// Nodes are the onboarding's hostnames, in the order of its rows.
func (w OnboardingRecord) Nodes() []string {
	out := make([]string, len(w.Rows))
	for i, row := range w.Rows {
		out[i] = row.Hostname
	}
	return out
}
