// Package redfishmock holds a subset of DMTF's published Redfish mockup
// public-rackmount1 (one rackmount server: its service root, system,
// BIOS and pending settings, virtual media, manager, chassis, sessions,
// firmware inventory and tasks), as DMTF publishes it in
// github.com/DMTF/Redfish-Mockup-Server (commit 9a86585, release 1.2.6;
// BSD 3-Clause, LICENSE.md beside this file). The lab's simulated Redfish
// service (sim/redfish) starts from these documents, and the Redfish
// driver's tests read them, so both are held to shapes a standards body
// published rather than ones this project invented.
package redfishmock

import (
	"embed"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed public-rackmount1
var files embed.FS

// Root is the mockup's root in resource paths.
const Root = "/redfish/v1"

// SystemID, ManagerID and ChassisID are the mockup's resource IDs.
const (
	SystemID  = "437XR1138R2"
	ManagerID = "BMC"
	ChassisID = "1U"
)

// Get returns the document of the resource at p, a path under Root
// ("/redfish/v1/Systems/437XR1138R2", with or without a trailing slash).
func Get(p string) ([]byte, bool) {
	rel, ok := relPath(p)
	if !ok {
		return nil, false
	}
	b, err := files.ReadFile(path.Join("public-rackmount1", rel, "index.json"))
	return b, err == nil
}

// Paths lists the resource paths the mockup holds, sorted.
func Paths() []string {
	var out []string
	_ = fs.WalkDir(files, "public-rackmount1", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && path.Base(p) == "index.json" {
			rel := strings.TrimPrefix(path.Dir(p), "public-rackmount1")
			out = append(out, Root+rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// relPath is p relative to Root; false when p is not under it.
func relPath(p string) (string, bool) {
	p = strings.TrimSuffix(p, "/")
	if p == Root {
		return ".", true
	}
	rel, ok := strings.CutPrefix(p, Root+"/")
	if !ok || rel == "" || strings.Contains(rel, "..") {
		return "", false
	}
	return rel, true
}
