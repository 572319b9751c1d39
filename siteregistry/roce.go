package siteregistry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/statestore"
)

// RoCE assignments: site-scoped, typed records of the IPv4 address (a /31,
// or a /30, per GPU NIC port) each node's RoCE interface takes. A bulk
// upsert is checked whole against the site's other assignments and the
// current design, and refused with every finding at once.
//
//	collection "roce_assignments"
//	    key: SITE_ID "/" ASSIGNMENT_ID ("ra-" and 10 hex digits)
//	    value: JSON RoCEAssignment

const roceColl = "roce_assignments"

// Bounds of RoCE assignments.
const (
	MaxRoCEItems    = 4096  // in one bulk upsert
	MaxRoCEPerSite  = 65536 // kept per site
	maxHostnameLen  = 253
	maxInterfaceLen = 63
)

// RoCEItem is one assignment as a bulk upsert gives it.
type RoCEItem struct {
	Hostname  string `json:"hostname"`
	Interface string `json:"interface"`
	IPv4CIDR  string `json:"ipv4_cidr"`
}

// RoCEAssignment is a stored assignment.
type RoCEAssignment struct {
	ID   string `json:"id"`
	Site string `json:"site"`
	RoCEItem
	Updated time.Time `json:"updated"`
}

// RoCEDesign is what the checks need of the current design.
type RoCEDesign interface {
	// Interfaces returns the names a node of the site calls its NICs
	// (device aliases, interface names, inventory names); false when the
	// design has no such node in the site.
	Interfaces(site, hostname string) ([]string, bool)
	// Networks returns the design's networks' prefixes, by name.
	Networks() map[string]netip.Prefix
	// Carries returns why the node cannot carry the address on the
	// interface when a deploy would refuse it (an address on a bond's
	// member or beside DHCP), nil when it can: the deploy's own check.
	Carries(site, hostname, iface, cidr string) error
}

// RoCEFinding is one thing wrong with a bulk upsert: Item is the index
// of the item it is about.
type RoCEFinding struct {
	Item    int    `json:"item"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// RoCEError is a refused bulk upsert: all its findings.
type RoCEError struct{ Findings []RoCEFinding }

func (e *RoCEError) Error() string {
	msgs := make([]string, 0, len(e.Findings))
	for _, f := range e.Findings {
		msgs = append(msgs, fmt.Sprintf("item %d: %s", f.Item, f.Message))
	}
	return fmt.Sprintf("%d findings: %s", len(e.Findings), strings.Join(msgs, "; "))
}

func (e *RoCEError) Unwrap() error { return ErrInvalid }

// parsedItem is an item with its prefix.
type parsedItem struct {
	idx    int // -1: an assignment already stored
	item   RoCEItem
	prefix netip.Prefix
}

// UpsertRoCE stores items in site id, replacing the site's assignment of
// the same hostname and interface; nothing is stored unless every item
// passes (a *RoCEError lists what does not).
func (r *Registry) UpsertRoCE(ctx context.Context, site string, items []RoCEItem, d RoCEDesign) ([]RoCEAssignment, error) {
	rec, err := r.Get(ctx, site)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 || len(items) > MaxRoCEItems {
		return nil, fmt.Errorf("%w: %d items: send 1 to %d", ErrInvalid, len(items), MaxRoCEItems)
	}
	stored, err := r.RoCE(ctx, site, "")
	if err != nil {
		return nil, err
	}
	parsed, findings := parseItems(items, rec.Name, d)
	kept := keptAssignments(stored, items)
	findings = append(findings, overlaps(parsed, kept)...)
	findings = append(findings, networkCollisions(parsed, d)...)
	if len(findings) > 0 {
		slices.SortStableFunc(findings, func(a, b RoCEFinding) int { return cmp.Compare(a.Item, b.Item) })
		return nil, &RoCEError{Findings: findings}
	}
	if len(kept)+len(items) > MaxRoCEPerSite {
		return nil, fmt.Errorf("%w: site %s would hold %d RoCE assignments, at most %d", ErrConflict, site, len(kept)+len(items), MaxRoCEPerSite)
	}
	return r.writeRoCE(ctx, site, items, stored)
}

// parseItems checks each item alone, and that no two name the same
// hostname and interface.
func parseItems(items []RoCEItem, site string, d RoCEDesign) ([]parsedItem, []RoCEFinding) {
	var out []parsedItem
	var fs []RoCEFinding
	seen := map[string]int{}
	for i, it := range items {
		bad := func(rule, format string, args ...any) {
			fs = append(fs, RoCEFinding{Item: i, Rule: rule, Message: fmt.Sprintf(format, args...)})
		}
		key := it.Hostname + "/" + it.Interface
		if j, dup := seen[key]; dup {
			bad("roce-duplicate", "%s %s is item %d too: one assignment per interface", it.Hostname, it.Interface, j)
			continue
		}
		seen[key] = i
		if !fieldsOK(it, bad) {
			continue
		}
		p, err := netip.ParsePrefix(it.IPv4CIDR)
		if err != nil || !p.Addr().Is4() || (p.Bits() != 31 && p.Bits() != 30) {
			bad("roce-cidr", "%s %s: ipv4_cidr %.40q: give an IPv4 address with its /31 or /30, e.g. 10.200.0.0/31", it.Hostname, it.Interface, it.IPv4CIDR)
			continue
		}
		if d != nil && !hasInterface(d, site, it, bad) {
			continue
		}
		out = append(out, parsedItem{idx: i, item: it, prefix: p})
	}
	return out, fs
}

func fieldsOK(it RoCEItem, bad func(rule, format string, args ...any)) bool {
	switch {
	case it.Hostname == "" || len(it.Hostname) > maxHostnameLen:
		bad("roce-hostname", "hostname: give the node's name (1 to %d characters)", maxHostnameLen)
	case it.Interface == "" || len(it.Interface) > maxInterfaceLen || !tokenRE.MatchString(it.Interface):
		bad("roce-interface", "%s: interface %.64q: give the NIC's alias or name", it.Hostname, it.Interface)
	default:
		return true
	}
	return false
}

func hasInterface(d RoCEDesign, site string, it RoCEItem, bad func(rule, format string, args ...any)) bool {
	names, ok := d.Interfaces(site, it.Hostname)
	if !ok {
		bad("roce-node", "%s: no node of that name in site %s in the current design", it.Hostname, site)
		return false
	}
	if !slices.Contains(names, it.Interface) {
		bad("roce-interface", "%s has no interface %s (it has %s)", it.Hostname, it.Interface, strings.Join(names, ", "))
		return false
	}
	if err := d.Carries(site, it.Hostname, it.Interface, it.IPv4CIDR); err != nil {
		bad("roce-carry", "%s %s %s: the node cannot carry it: %v", it.Hostname, it.Interface, it.IPv4CIDR, err)
		return false
	}
	return true
}

// keptAssignments are the stored assignments the upsert does not replace.
func keptAssignments(stored []RoCEAssignment, items []RoCEItem) []parsedItem {
	replaced := map[string]bool{}
	for _, it := range items {
		replaced[it.Hostname+"/"+it.Interface] = true
	}
	var out []parsedItem
	for _, a := range stored {
		if replaced[a.Hostname+"/"+a.Interface] {
			continue
		}
		if p, err := netip.ParsePrefix(a.IPv4CIDR); err == nil {
			out = append(out, parsedItem{idx: -1, item: a.RoCEItem, prefix: p})
		}
	}
	return out
}

// overlaps finds the new items whose prefix overlaps another's (new or
// kept): sorted by first address, a prefix overlaps when it starts at or
// before the furthest end seen so far.
func overlaps(items, kept []parsedItem) []RoCEFinding {
	all := append(slices.Clone(kept), items...)
	slices.SortFunc(all, func(a, b parsedItem) int { return a.prefix.Masked().Addr().Compare(b.prefix.Masked().Addr()) })
	var fs []RoCEFinding
	if len(all) == 0 {
		return nil
	}
	far := all[0] // the prefix ending furthest so far
	for _, b := range all[1:] {
		if far.prefix.Overlaps(b.prefix) && (far.idx >= 0 || b.idx >= 0) {
			fs = append(fs, overlapFinding(far, b))
		}
		if lastAddr(b.prefix).Compare(lastAddr(far.prefix)) > 0 {
			far = b
		}
	}
	return fs
}

// overlapFinding reports an overlap on the new item of the two.
func overlapFinding(a, b parsedItem) RoCEFinding {
	if a.idx < 0 {
		a, b = b, a
	}
	where := "stored"
	if b.idx >= 0 {
		where = fmt.Sprintf("item %d", b.idx)
	}
	return RoCEFinding{Item: a.idx, Rule: "roce-overlap", Message: fmt.Sprintf("%s %s %s overlaps %s %s %s (%s)",
		a.item.Hostname, a.item.Interface, a.item.IPv4CIDR, b.item.Hostname, b.item.Interface, b.item.IPv4CIDR, where)}
}

// lastAddr is the last address of an IPv4 prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v |= uint32(1)<<(32-p.Bits()) - 1
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// networkCollisions finds the items whose prefix is inside (or holds) a
// network of the design.
func networkCollisions(items []parsedItem, d RoCEDesign) []RoCEFinding {
	if d == nil {
		return nil
	}
	nets := d.Networks()
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range nets {
			if !yield(n) {
				return
			}
		}
	})
	var fs []RoCEFinding
	for _, it := range items {
		for _, n := range names {
			if nets[n].Overlaps(it.prefix) {
				fs = append(fs, RoCEFinding{Item: it.idx, Rule: "roce-network", Message: fmt.Sprintf("%s %s %s collides with the design's network %s (%s)",
					it.item.Hostname, it.item.Interface, it.item.IPv4CIDR, n, nets[n])})
			}
		}
	}
	return fs
}

func (r *Registry) writeRoCE(ctx context.Context, site string, items []RoCEItem, stored []RoCEAssignment) ([]RoCEAssignment, error) {
	byKey := map[string]RoCEAssignment{}
	for _, a := range stored {
		byKey[a.Hostname+"/"+a.Interface] = a
	}
	now := r.now()
	ops := make([]statestore.Op, 0, len(items))
	out := make([]RoCEAssignment, 0, len(items))
	for _, it := range items {
		a, ok := byKey[it.Hostname+"/"+it.Interface]
		if !ok {
			a = RoCEAssignment{ID: "ra-" + newID()[3:], Site: site}
		}
		a.RoCEItem, a.Updated = it, now
		b, err := roceKind.Encode(a)
		if err != nil {
			return nil, err
		}
		ops = append(ops, statestore.Put(roceColl, site+"/"+a.ID, b))
		out = append(out, a)
	}
	if _, err := r.st.Write(ctx, ops...); err != nil {
		return nil, err
	}
	return out, nil
}

// RoCE lists site id's assignments (of hostname, when given), by
// hostname and interface.
func (r *Registry) RoCE(ctx context.Context, site, hostname string) ([]RoCEAssignment, error) {
	all, err := statestore.ListJSON[RoCEAssignment](ctx, r.st, roceKind, roceColl, site+"/")
	if err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(all, func(a RoCEAssignment) bool { return hostname != "" && a.Hostname != hostname })
	slices.SortFunc(out, func(a, b RoCEAssignment) int {
		return cmp.Or(cmp.Compare(a.Hostname, b.Hostname), cmp.Compare(a.Interface, b.Interface))
	})
	return out, nil
}

// DeleteRoCE removes assignment aid of site id.
func (r *Registry) DeleteRoCE(ctx context.Context, site, aid string) error {
	if _, err := r.st.Get(ctx, roceColl, site+"/"+aid); err != nil {
		if errors.Is(err, statestore.ErrNoRecord) {
			return fmt.Errorf("%w: site %.40q has no RoCE assignment %.40q", ErrNotFound, site, aid)
		}
		return err
	}
	_, err := r.st.Write(ctx, statestore.Delete(roceColl, site+"/"+aid))
	return err
}
