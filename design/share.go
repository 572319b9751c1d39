package design

import (
	"encoding/json"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"weak"
)

// A decoded revision repeats what the nodes inherit from their profiles in
// every node: the hardware profile, the interfaces, the storage layout,
// the platform's kernel parameters, tags and owner data. encoding/json
// gives each node its own maps of them, about 9 KB a node, which a running
// engine holds for the whole run (#39). shareParts makes the nodes share
// each equal part, as Build's resolution shares what a profile gives
// (resolve.go: the decoder's memo, and Spec.Hardware pointing at the
// hardware profile's spec). DecodeShared's readers never write into a
// node's maps or slices (one that edits a design takes DecodeRevision's,
// its own), and shared slices are clipped, so an append copies.

// sharer keeps one copy of each distinct part, keyed by its type and
// canonical JSON (a decoded revision's parts have no positions, so equal
// JSON is an equal value), and one copy of each distinct string.
type sharer struct {
	parts   map[partKey]any
	strings map[string]string
}

type partKey struct {
	t    reflect.Type
	json string
}

// sharedPart is the copy of v that s keeps: v itself, the first time its
// value is seen (or when it is empty or cannot be encoded).
func sharedPart[T any](s *sharer, v T) T {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.IsZero() || (rv.Kind() != reflect.Pointer && rv.Len() == 0) {
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	k := partKey{reflect.TypeFor[T](), string(b)}
	if c, ok := s.parts[k]; ok {
		return c.(T)
	}
	s.parts[k] = v
	return v
}

// str is s's copy of v.
func (s *sharer) str(v string) string {
	if c, ok := s.strings[v]; ok {
		return c
	}
	s.strings[v] = v
	return v
}

// shareParts makes the nodes of d share their equal parts and strings;
// a node's hardware is its hardware profile's spec when equal, as Build
// makes it.
func (d *Design) shareParts() {
	s := &sharer{parts: map[partKey]any{}, strings: map[string]string{}}
	for _, hw := range d.HardwareProfiles {
		if hw != nil {
			sharedPart(s, &hw.Spec)
		}
	}
	for _, n := range d.Nodes {
		if n != nil {
			s.node(n)
		}
	}
}

// node shares n's parts.
func (s *sharer) node(n *Node) {
	n.Metadata.Labels = sharedPart(s, n.Metadata.Labels)
	sp := &n.Spec
	sp.Hardware = sharedPart(s, sp.Hardware)
	sp.Interfaces = sharedPart(s, sp.Interfaces)
	sp.Storage.Devices = sharedPart(s, sp.Storage.Devices)
	sp.Storage.VolumeGroups = sharedPart(s, sp.Storage.VolumeGroups)
	sp.Platform.KernelParams = sharedPart(s, sp.Platform.KernelParams)
	sp.Tags = slices.Clip(sharedPart(s, sp.Tags))
	sp.OwnerData = sharedPart(s, sp.OwnerData)
	sp.OOB.Credentials = sharedPart(s, sp.OOB.Credentials)
	sp.Constraints = sharedPart(s, sp.Constraints)
	for _, p := range []*string{&sp.HostProfile, &sp.Site, &sp.HardwareProfile, &sp.PrimaryNetwork,
		&sp.Platform.Image, &sp.Platform.Kernel, &sp.Erase, &sp.SiteProfile, &sp.Rack, &sp.OOB.SystemID} {
		*p = s.str(*p)
	}
	for i := range sp.Addressing {
		sp.Addressing[i].Network = s.str(sp.Addressing[i].Network)
		if sp.Addressing[i].Address == addressDHCP { // the constant's bytes, not a copy a node
			sp.Addressing[i].Address = addressDHCP
		}
	}
}

// addressDHCP is the address of a node's network that MAAS addresses by
// DHCP.
const addressDHCP = "dhcp"

// sharedRevisions are the designs DecodeShared gave, by the SHA-256 of
// their canonical JSON, held weakly: a revision's entry goes when no
// reader holds its design any more.
var sharedRevisions = revisionCache{byHash: map[[32]byte]weak.Pointer[Design]{}}

type revisionCache struct {
	mu     sync.Mutex
	byHash map[[32]byte]weak.Pointer[Design]
}

// get is the design of the revision whose JSON hashes to sum, when a
// reader still holds it; else nil.
func (c *revisionCache) get(sum [32]byte) *Design {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byHash[sum].Value()
}

// put keeps d as the design of sum until no reader holds it.
func (c *revisionCache) put(sum [32]byte, d *Design) {
	c.mu.Lock()
	c.byHash[sum] = weak.Make(d)
	c.mu.Unlock()
	runtime.AddCleanup(d, c.forget, sum)
}

// forget drops sum's entry once its design is gone (a later put may have
// replaced it with a live one: that stays).
func (c *revisionCache) forget(sum [32]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byHash[sum].Value() == nil {
		delete(c.byHash, sum)
	}
}

// has reports whether sum has an entry, its design held or not (tests).
func (c *revisionCache) has(sum [32]byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.byHash[sum]
	return ok
}
