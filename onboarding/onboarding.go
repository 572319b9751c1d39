// Package onboarding keeps the onboarding records: one per request to add
// nodes to the fleet by hostname and BMC address. An onboarding builds a
// Node document per row (its site, SKU (a HardwareProfile), host profile,
// BMC address and a DHCP address on the PXE network; the PXE MAC is found
// when the machine enlists itself), which the server adds to the design's
// API-managed layer (package designlayer) before it deploys them.
//
// # Layout
//
// In the [statestore.KeyedRecords] given to [New]:
//
//	collection "onboardings"
//	    key: the record's ID ("ob-" and 10 hex digits)
//	    value: JSON Record
package onboarding

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/internal/storedrec"
	"github.com/slipway-dev/slipway/statestore"
)

const coll = "onboardings"

// recordKind is a Record's stored form: it carries its schema version
// (internal/storedrec).
var recordKind = storedrec.NewKind("onboarding", reflect.TypeFor[Record]())

// MaxRows bounds one batch.
const MaxRows = 500

// ErrInvalid is wrapped by errors of a request that can't be onboarded as
// it is (a 400 or 422); ErrNotFound by a missing record.
var (
	ErrInvalid  = errors.New("invalid onboarding")
	ErrNotFound = errors.New("onboarding not found")
)

// Row is one node to onboard.
type Row struct {
	Hostname string `json:"hostname"`
	// IPMIIP is the node's BMC address.
	IPMIIP string `json:"ipmi_ip"`
	// Rack is the node's rack, optional.
	Rack string `json:"rack,omitempty"`
	// Addresses are static addresses on networks besides the PXE one,
	// optional: {network: address}.
	Addresses map[string]string `json:"addresses,omitempty"`
}

// Request is what an onboarding asks for: rows sharing a site, a site
// profile and a SKU.
type Request struct {
	SiteID string `json:"site_id"`
	// ProfileID is the site profile, one of the site's (required: the
	// GPUaaS boundary names it in every onboarding).
	ProfileID string `json:"profile_id"`
	// SKUID names the design's HardwareProfile the machines are.
	SKUID string `json:"sku_id"`
	// HostProfile names the design's HostProfile (optional: the one that
	// names the site profile, else the Site's defaults.hostProfile).
	HostProfile string `json:"host_profile,omitempty"`
	Rows        []Row  `json:"rows"`
}

// Record is an onboarding.
type Record struct {
	ID string `json:"id"`
	Request
	// Site is the site's name (the design's Site), HostProfile resolved.
	SiteName        string `json:"site_name"`
	HostProfileUsed string `json:"host_profile_used"`
	// Revision is the design revision that added the nodes; Task the
	// deploy task (empty until submitted); Error why it was not.
	Revision string    `json:"revision,omitempty"`
	Task     string    `json:"task,omitempty"`
	Error    string    `json:"error,omitempty"`
	Created  time.Time `json:"created"`
	By       string    `json:"by,omitempty"`
}

// Nodes are the hostnames the record onboards.
func (r Record) Nodes() []string {
	out := make([]string, len(r.Rows))
	for i, row := range r.Rows {
		out[i] = row.Hostname
	}
	return out
}

var hostnameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Check checks the request on its own: bounds, forms, duplicates. Every
// problem is named at once.
func (r Request) Check() error {
	var probs []string
	add := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	if r.SiteID == "" {
		add("site_id is required")
	}
	if r.ProfileID == "" {
		add("profile_id (a site profile of the site) is required")
	}
	if r.SKUID == "" {
		add("sku_id (a HardwareProfile of the design) is required")
	}
	switch n := len(r.Rows); {
	case n == 0:
		add("rows: at least one {hostname, ipmi_ip} is required")
	case n > MaxRows:
		add("rows: %d rows, at most %d per batch: split it", n, MaxRows)
	}
	hosts, ips := map[string]int{}, map[netip.Addr]int{}
	for i, row := range r.Rows[:min(len(r.Rows), MaxRows)] {
		if !hostnameRE.MatchString(row.Hostname) {
			add("rows[%d].hostname %q is not a DNS label (a-z, 0-9, '-', at most 63)", i, row.Hostname)
		} else if j, dup := hosts[row.Hostname]; dup {
			add("rows[%d].hostname %s is also rows[%d]", i, row.Hostname, j)
		}
		hosts[row.Hostname] = i
		ip, err := netip.ParseAddr(row.IPMIIP)
		switch {
		case err != nil || ip.Zone() != "":
			add("rows[%d].ipmi_ip %q is not an IP address", i, row.IPMIIP)
		case ips[ip] > 0:
			add("rows[%d].ipmi_ip %s is also rows[%d]'s", i, ip, ips[ip]-1)
		default:
			ips[ip] = i + 1
		}
		if len(row.Rack) > 63 || len(row.Addresses) > 64 {
			add("rows[%d]: rack at most 63 characters, at most 64 addresses", i)
		}
		for net, a := range row.Addresses {
			if _, err := netip.ParseAddr(a); err != nil && a != "dhcp" {
				add("rows[%d].addresses.%s %q is neither an IP address nor dhcp", i, net, a)
			}
		}
	}
	if len(probs) > 0 {
		slices.Sort(probs)
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(probs, "; "))
	}
	return nil
}

// NodeDoc is the Node document of one row: its site, host profile, SKU,
// BMC, rack and addressing (DHCP on the PXE network, then the row's).
func NodeDoc(row Row, siteName, hostProfile, sku, pxeNetwork string) map[string]any {
	addressing := []any{}
	if pxeNetwork != "" {
		addressing = append(addressing, map[string]any{"network": pxeNetwork, "address": "dhcp"})
	}
	for _, net := range sortedKeys(row.Addresses) {
		if net != pxeNetwork {
			addressing = append(addressing, map[string]any{"network": net, "address": row.Addresses[net]})
		}
	}
	spec := map[string]any{
		"site":            siteName,
		"hostProfile":     hostProfile,
		"hardwareProfile": sku,
		"oob":             map[string]any{"address": row.IPMIIP},
		"addressing":      addressing,
	}
	if row.Rack != "" {
		spec["rack"] = row.Rack
	}
	return map[string]any{
		"apiVersion": design.APIVersion,
		"kind":       design.KindNode,
		"metadata":   map[string]any{"name": row.Hostname, "labels": map[string]any{"onboarded": "true"}},
		"spec":       spec,
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Store keeps the records.
type Store struct {
	rec statestore.KeyedRecords
	now func() time.Time
}

// New returns a Store over rec.
func New(rec statestore.KeyedRecords) *Store { return &Store{rec: rec, now: time.Now} }

// NewRecord is a record for req with a fresh ID, not yet stored.
func (s *Store) NewRecord(req Request, by string) (Record, error) {
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Record{}, err
	}
	return Record{ID: "ob-" + hex.EncodeToString(b[:]), Request: req, Created: s.now().UTC(), By: by}, nil
}

// PutOp is the op that stores r.
func PutOp(r Record) (statestore.Op, error) {
	b, err := recordKind.Encode(r)
	if err != nil {
		return statestore.Op{}, err
	}
	return statestore.Put(coll, r.ID, b), nil
}

// Put stores r.
func (s *Store) Put(ctx context.Context, r Record) error {
	op, err := PutOp(r)
	if err != nil {
		return err
	}
	_, err = s.rec.Write(ctx, op)
	return err
}

// Get returns the record id.
func (s *Store) Get(ctx context.Context, id string) (Record, error) {
	if !strings.HasPrefix(id, "ob-") || len(id) > 32 {
		return Record{}, fmt.Errorf("%w: %q is not an onboarding ID (ob-...)", ErrNotFound, id)
	}
	b, err := s.rec.Get(ctx, coll, id)
	if errors.Is(err, statestore.ErrNoRecord) {
		return Record{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Record{}, err
	}
	var r Record
	return r, recordKind.Decode(id, b, &r)
}

// List returns every record, newest first.
func (s *Store) List(ctx context.Context) ([]Record, error) {
	out, err := statestore.ListJSON[Record](ctx, s.rec, recordKind, coll, "")
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b Record) int { return b.Created.Compare(a.Created) })
	return out, nil
}
