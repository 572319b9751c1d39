package design

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Diff is the difference between two designs, kind by kind.
type Diff struct {
	Kinds []KindDiff `json:"kinds"`
}

// KindDiff lists the objects of one kind added, removed and changed.
type KindDiff struct {
	Kind    string         `json:"kind"`
	Added   []string       `json:"added,omitempty"`
	Removed []string       `json:"removed,omitempty"`
	Changed []ObjectChange `json:"changed,omitempty"`
}

// ObjectChange names one changed object and the field paths that changed.
type ObjectChange struct {
	Name  string   `json:"name"`
	Paths []string `json:"paths"`
}

// Empty reports whether nothing changed.
func (d Diff) Empty() bool {
	for _, k := range d.Kinds {
		if len(k.Added)+len(k.Removed)+len(k.Changed) > 0 {
			return false
		}
	}
	return true
}

// Kind returns the part of the diff for one kind.
func (d Diff) Kind(kind string) KindDiff {
	for _, k := range d.Kinds {
		if k.Kind == kind {
			return k
		}
	}
	return KindDiff{Kind: kind}
}

// Summary is a one-line account such as "Node: 2 added, 1 removed, 3 changed".
func (d Diff) Summary() string {
	var parts []string
	for _, k := range d.Kinds {
		if n := len(k.Added) + len(k.Removed) + len(k.Changed); n > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d added, %d removed, %d changed", k.Kind, len(k.Added), len(k.Removed), len(k.Changed)))
		}
	}
	if len(parts) == 0 {
		return "no changes"
	}
	return strings.Join(parts, "; ")
}

var kindKeys = map[string]string{
	KindNetwork: "networks", KindNetworkLink: "network_links", KindHardwareProfile: "hardware_profiles",
	KindHostProfile: "host_profiles", KindNode: "nodes", KindBootAction: "boot_actions", KindImage: "images",
}

// DiffCanonical compares two designs in their canonical JSON form (as
// Canonical returns and the state store keeps them). old may be nil: every
// object is then added.
func DiffCanonical(old, new []byte) (Diff, error) {
	// A revision stored by a release before the snake_case names reads
	// under today's names, so the diff does not report the renaming.
	var a, b map[string]any
	if old != nil {
		up, err := RevisionRecord.Upgrade("", old)
		if err == nil {
			err = json.Unmarshal(up, &a)
		}
		if err != nil {
			return Diff{}, fmt.Errorf("decode old design: %w", err)
		}
	}
	new, err := RevisionRecord.Upgrade("", new)
	if err != nil {
		return Diff{}, fmt.Errorf("decode new design: %w", err)
	}
	if err := json.Unmarshal(new, &b); err != nil {
		return Diff{}, fmt.Errorf("decode new design: %w", err)
	}
	var out Diff
	for _, kind := range Kinds {
		var kd KindDiff
		if kind == KindSite {
			kd = diffObjects(kind, siteMap(a["site"]), siteMap(b["site"]))
		} else {
			am, _ := a[kindKeys[kind]].(map[string]any)
			bm, _ := b[kindKeys[kind]].(map[string]any)
			kd = diffObjects(kind, am, bm)
		}
		out.Kinds = append(out.Kinds, kd)
	}
	return out, nil
}

func siteMap(s any) map[string]any {
	m, ok := s.(map[string]any)
	if !ok {
		return nil
	}
	name, _ := m["metadata"].(map[string]any)["name"].(string)
	return map[string]any{name: m}
}

func diffObjects(kind string, a, b map[string]any) KindDiff {
	kd := KindDiff{Kind: kind}
	for _, n := range sortedNames(b) {
		old, ok := a[n]
		if !ok {
			kd.Added = append(kd.Added, n)
			continue
		}
		var paths []string
		diffValues("", old, b[n], &paths)
		if len(paths) > 0 {
			kd.Changed = append(kd.Changed, ObjectChange{Name: n, Paths: paths})
		}
	}
	for _, n := range sortedNames(a) {
		if _, ok := b[n]; !ok {
			kd.Removed = append(kd.Removed, n)
		}
	}
	return kd
}

// diffValues appends the paths under which a and b differ.
func diffValues(path string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, strings.TrimPrefix(path, "."))
		}
		return
	}
	keys := map[string]bool{}
	for k := range am {
		keys[k] = true
	}
	for k := range bm {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		diffValues(path+"."+k, am[k], bm[k], out)
	}
}
