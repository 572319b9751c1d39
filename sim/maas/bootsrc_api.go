package maas

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Boot sources and their selections (src/maasserver/api/boot_sources.py,
// boot_source_selections.py; BootSourceForm and BootSourceSelectionForm
// in src/maasserver/forms/__init__.py; the model's keyring checks in
// src/maasserver/models/bootsource.py), and the import that makes every
// selected image complete. The lab has no simplestreams mirror: what a
// source offers is bootSourceCatalogue, and an import takes
// Durations.Import (scaled) and then marks the selected images synced.

// DefaultImportDuration is how long an import takes at time scale 1.
const DefaultImportDuration = 2 * time.Minute

// maxBootSources and maxSelections bound what a client can create.
const (
	maxBootSources = 16
	maxSelections  = 256
)

// catalogueEntry is an image the boot source offers (its cache).
type catalogueEntry struct {
	os, release, version string
}

// bootSourceCatalogue is what the lab's boot source offers: Ubuntu LTS
// releases, each for catalogueArches.
var bootSourceCatalogue = []catalogueEntry{
	{"ubuntu", "bionic", "18.04"}, {"ubuntu", "focal", "20.04"}, {"ubuntu", "jammy", "22.04"}, {"ubuntu", "noble", "24.04"},
}

var catalogueArches = []string{"amd64", "arm64", "ppc64el", "s390x"}

// imageState is the region's image side: the upload directory, the
// counters, the boot sources and the import.
type imageState struct {
	dir         string
	tempDir     bool // dir is the server's own (removed at Close)
	stats       ImageStats
	sources     []*bootSource
	importing   bool
	importTimer *time.Timer
	importGen   int
	syncTimers  map[int]*time.Timer // by file ID: the other regions' copies under way (bootres_regions.go)
	lastSource  int                 // boot sources and selections are numbered apart, from 1, as MAAS's tables
	lastSel     int
}

func (st *imageState) nextSource() int { st.lastSource++; return st.lastSource }

func (st *imageState) nextSelection() int { st.lastSel++; return st.lastSel }

type bootSource struct {
	ID              int
	URL             string
	KeyringFilename string
	KeyringData     []byte
	Created         time.Time
	Updated         time.Time
	Selections      []*bootSelection
}

type bootSelection struct {
	ID        int
	OS        string
	Release   string
	Arches    []string
	Subarches []string
	Labels    []string
}

// defaultBootSource is a fresh region's: images.maas.io, with a selection
// per release the lab has synced (amd64).
func defaultBootSource(st *imageState) *bootSource {
	now := time.Now()
	src := &bootSource{ID: st.nextSource(), URL: "http://images.maas.io/ephemeral-v3/stable/",
		KeyringFilename: "/snap/maas/current/usr/share/keyrings/ubuntu-cloudimage-keyring.gpg", Created: now, Updated: now}
	for _, rel := range []string{"focal", "jammy", "noble"} {
		src.Selections = append(src.Selections, &bootSelection{ID: st.nextSelection(), OS: "ubuntu", Release: rel,
			Arches: []string{"amd64"}, Subarches: []string{"*"}, Labels: []string{"*"}})
	}
	return src
}

func (s *Server) routesBootSources() {
	s.handleRestricted("GET", "/boot-sources/", "", func(s *Server, _ *request) (any, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		out := []any{}
		for _, src := range s.img.sources {
			out = append(out, renderBootSource(src))
		}
		return out, nil
	})
	s.handleRestricted("POST", "/boot-sources/", "", (*Server).bootSourceCreate)
	withSrc := func(fn func(s *Server, src *bootSource, req *request) (any, *apiError)) handler {
		return withFound("BootSource", func(s *Server, req *request) *bootSource { return s.bootSource(req.params["id"]) }, fn)
	}
	s.handleRestricted("GET", "/boot-sources/{id}/", "", withSrc(func(s *Server, src *bootSource, _ *request) (any, *apiError) {
		return renderBootSource(src), nil
	}))
	s.handleRestricted("PUT", "/boot-sources/{id}/", "", withSrc((*Server).bootSourceUpdate))
	s.handleRestricted("DELETE", "/boot-sources/{id}/", "", withSrc(func(s *Server, src *bootSource, _ *request) (any, *apiError) {
		out := s.img.sources[:0:0]
		for _, x := range s.img.sources {
			if x != src {
				out = append(out, x)
			}
		}
		s.img.sources = out
		return nil, nil
	}))
	s.routesSelections(withSrc)
}

func (s *Server) bootSource(id string) *bootSource {
	n, err := strconv.Atoi(id)
	if err != nil {
		return nil
	}
	for _, src := range s.img.sources {
		if src.ID == n {
			return src
		}
	}
	return nil
}

func renderBootSource(src *bootSource) map[string]any {
	return map[string]any{"id": src.ID, "url": src.URL, "keyring_filename": src.KeyringFilename,
		"keyring_data": base64.StdEncoding.EncodeToString(src.KeyringData),
		"created":      src.Created.UTC().Format("2006-01-02T15:04:05.000"), "updated": src.Updated.UTC().Format("2006-01-02T15:04:05.000"),
		"resource_uri": uri("/boot-sources/%d/", src.ID)}
}

// bootSourceForm applies BootSourceForm's fields and the model's keyring
// rule to src (a copy when it fails).
func (s *Server) bootSourceForm(src *bootSource, f formValues, creating bool) *apiError {
	errs := fieldErrors{}
	if creating || f.has("url") {
		u := f.get("url")
		pu, err := url.Parse(u)
		switch {
		case u == "":
			errs.add("url", "This field is required.")
		case len(u) > 200 || err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "":
			errs.add("url", "Enter a valid URL.")
		case s.sourceURLTaken(u, src):
			errs.add("url", "Boot source with this Url already exists.")
		}
		src.URL = u
	}
	if f.has("keyring_filename") {
		src.KeyringFilename = f.get("keyring_filename")
	}
	if f.has("keyring_data") {
		src.KeyringData = []byte(f.get("keyring_data"))
	}
	if len(src.KeyringFilename) > 4096 || len(src.KeyringData) > 1<<20 { // the lab's bounds
		errs.add("keyring_data", "The keyring is over the lab's bound (4096 bytes of file name, 1 MiB of data).")
	}
	switch {
	case src.KeyringFilename == "" && len(src.KeyringData) == 0:
		errs.add("__all__", "One of keyring_data or keyring_filename must be specified.")
	case src.KeyringFilename != "" && len(src.KeyringData) > 0:
		errs.add("__all__", "Only one of keyring_filename or keyring_data can be specified.")
	}
	if len(errs) > 0 {
		return errs.err()
	}
	return nil
}

func (s *Server) sourceURLTaken(u string, self *bootSource) bool {
	for _, src := range s.img.sources {
		if src != self && src.URL == u {
			return true
		}
	}
	return false
}

func (s *Server) bootSourceCreate(req *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.img.sources) >= maxBootSources {
		return nil, errorf(http.StatusBadRequest, "The lab keeps at most %d boot sources.", maxBootSources)
	}
	src := &bootSource{}
	if err := s.bootSourceForm(src, req.form, true); err != nil {
		return nil, err
	}
	src.ID, src.Created, src.Updated = s.img.nextSource(), time.Now(), time.Now()
	s.img.sources = append(s.img.sources, src)
	return created{renderBootSource(src)}, nil
}

func (s *Server) bootSourceUpdate(src *bootSource, req *request) (any, *apiError) {
	c := *src
	if err := s.bootSourceForm(&c, req.form, false); err != nil {
		return nil, err
	}
	c.Updated = time.Now()
	*src = c
	return renderBootSource(src), nil
}

func (s *Server) routesSelections(withSrc func(fn func(s *Server, src *bootSource, req *request) (any, *apiError)) handler) {
	s.handleRestricted("GET", "/boot-sources/{id}/selections/", "", withSrc(func(s *Server, src *bootSource, _ *request) (any, *apiError) {
		out := []any{}
		for _, sel := range src.Selections {
			out = append(out, renderSelection(src, sel))
		}
		return out, nil
	}))
	s.handleRestricted("POST", "/boot-sources/{id}/selections/", "", withSrc(func(s *Server, src *bootSource, req *request) (any, *apiError) {
		if len(src.Selections) >= maxSelections {
			return nil, errorf(http.StatusBadRequest, "The lab keeps at most %d selections per boot source.", maxSelections)
		}
		sel := &bootSelection{}
		if err := selectionForm(src, sel, req.form, true); err != nil {
			return nil, err
		}
		sel.ID = s.img.nextSelection()
		src.Selections = append(src.Selections, sel)
		return renderSelection(src, sel), nil
	}))
	withSel := func(fn func(s *Server, src *bootSource, sel *bootSelection, req *request) (any, *apiError)) handler {
		return withSrc(func(s *Server, src *bootSource, req *request) (any, *apiError) {
			for _, sel := range src.Selections {
				if strconv.Itoa(sel.ID) == req.params["sel"] {
					return fn(s, src, sel, req)
				}
			}
			return nil, notFound("BootSourceSelection")
		})
	}
	s.handleRestricted("GET", "/boot-sources/{id}/selections/{sel}/", "", withSel(func(s *Server, src *bootSource, sel *bootSelection, _ *request) (any, *apiError) {
		return renderSelection(src, sel), nil
	}))
	s.handleRestricted("PUT", "/boot-sources/{id}/selections/{sel}/", "", withSel(func(s *Server, src *bootSource, sel *bootSelection, req *request) (any, *apiError) {
		c := *sel
		if err := selectionForm(src, &c, req.form, false); err != nil {
			return nil, err
		}
		*sel = c
		return renderSelection(src, sel), nil
	}))
	s.handleRestricted("DELETE", "/boot-sources/{id}/selections/{sel}/", "", withSel(func(s *Server, src *bootSource, sel *bootSelection, _ *request) (any, *apiError) {
		out := src.Selections[:0:0]
		for _, x := range src.Selections {
			if x != sel {
				out = append(out, x)
			}
		}
		src.Selections = out
		return nil, nil
	}))
}

func renderSelection(src *bootSource, sel *bootSelection) map[string]any {
	return map[string]any{"boot_source_id": src.ID, "id": sel.ID, "os": sel.OS, "release": sel.Release,
		"arches": sel.Arches, "subarches": sel.Subarches, "labels": sel.Labels,
		"resource_uri": uri("/boot-sources/%d/selections/%d/", src.ID, sel.ID)}
}

// selectionForm is BootSourceSelectionForm: os and release must be in
// the source's cache (the catalogue), the arches, subarches and labels
// among the cache's or "*"; one selection per os and release.
func selectionForm(src *bootSource, sel *bootSelection, f formValues, creating bool) *apiError {
	errs := fieldErrors{}
	if f.has("os") || creating {
		sel.OS = orDefault(f.get("os"), "ubuntu")
	}
	if f.has("release") || creating {
		sel.Release = f.get("release")
	}
	for _, p := range []struct {
		key string
		to  *[]string
	}{{"arches", &sel.Arches}, {"subarches", &sel.Subarches}, {"labels", &sel.Labels}} {
		if vals := splitList(f[p.key]); len(vals) > 0 {
			*p.to = vals
		} else if creating {
			*p.to = []string{"*"}
		}
	}
	if len(sel.OS) > 64 || len(sel.Release) > 64 || len(sel.Arches)+len(sel.Subarches)+len(sel.Labels) > 64 {
		return errorf(http.StatusBadRequest, "The selection is over the lab's bounds (64 characters of os and release, 64 list items).")
	}
	entry, ok := catalogueOf(sel.OS, sel.Release)
	if !ok {
		errs.add("os", "OS %s with release %s has no available images for download", sel.OS, sel.Release)
		return errs.err()
	}
	if !subset(sel.Arches, catalogueArches) {
		errs.add("arches", "No available images to download for %s", pyList(sel.Arches))
	}
	if !subset(sel.Subarches, []string{"generic", "ga-" + entry.version, "hwe-" + entry.version}) {
		errs.add("subarches", "No available images to download for %s", pyList(sel.Subarches))
	}
	if !subset(sel.Labels, []string{"stable"}) {
		errs.add("labels", "No available images to download for %s", pyList(sel.Labels))
	}
	for _, o := range src.Selections {
		if o.ID != sel.ID && o.OS == sel.OS && o.Release == sel.Release {
			errs.add("__all__", "Boot source selection with this Boot source, Os and Release already exists.")
		}
	}
	if len(errs) > 0 {
		return errs.err()
	}
	return nil
}

func catalogueOf(os, release string) (catalogueEntry, bool) {
	for _, c := range bootSourceCatalogue {
		if c.os == os && c.release == release {
			return c, true
		}
	}
	return catalogueEntry{}, false
}

// subset: every value is "*" or one of have.
func subset(vals, have []string) bool {
	for _, v := range vals {
		if v != "*" && !contains(have, v) {
			return false
		}
	}
	return true
}

// bootImport is POST boot-resources/?op=import: every selected image the
// region lacks becomes a synced resource with an incomplete set, complete
// when the import ends (Durations.Import later, scaled). An import under
// way is not started again.
func (s *Server) bootImport(_ *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.img.stats.Imports++
	if !s.img.importing {
		s.img.importing = true
		s.img.importGen++
		gen := s.img.importGen
		s.addSelected()
		s.img.importTimer = time.AfterFunc(s.scale(or(s.dur.Import, DefaultImportDuration)), func() { s.importDone(gen) })
	}
	return rawBody{contentType: "text/plain; charset=utf-8", body: []byte("Import of boot resources started")}, nil
}

// bootStopImport is POST boot-resources/?op=stop_import: the import ends;
// what it had not completed stays incomplete.
func (s *Server) bootStopImport(_ *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.img.importTimer != nil {
		s.img.importTimer.Stop()
	}
	s.img.importing = false
	s.img.importGen++
	return rawBody{contentType: "text/plain; charset=utf-8", body: []byte("Import of boot resources is being stopped")}, nil
}

// addSelected makes the synced resources of every selection the region
// lacks, incomplete; s.mu is held.
func (s *Server) addSelected() {
	for _, src := range s.img.sources {
		for _, sel := range src.Selections {
			entry, ok := catalogueOf(sel.OS, sel.Release)
			if !ok {
				continue
			}
			arches := sel.Arches
			if contains(arches, "*") {
				arches = catalogueArches
			}
			for _, arch := range arches {
				for _, k := range []string{"ga-", "hwe-"} {
					s.bootRes = ensureSynced(s.bootRes, s.nextID, entry, arch+"/"+k+entry.version)
				}
			}
		}
	}
}

// ensureSynced adds a synced resource (incomplete) unless the list has
// one complete or under way of that name and architecture.
func ensureSynced(list []*bootResource, nextID func() int, entry catalogueEntry, arch string) []*bootResource {
	name := entry.os + "/" + entry.release
	for _, b := range list {
		if b.Type == "Synced" && b.Name == name && b.Architecture == arch {
			if len(b.Sets) == 0 {
				b.Sets = append(b.Sets, syncedSet(nextID, entry, false))
			}
			return list
		}
	}
	return append(list, &bootResource{ID: nextID(), Type: "Synced", Name: name, Architecture: arch,
		Subarches: "generic," + strings.SplitN(arch, "/", 2)[1], Sets: []*bootSet{syncedSet(nextID, entry, false)}})
}

// syncedSet is a synced image's set: kernel, initrd and squashfs (the
// lab holds no content for them; sizes and checksums are made up).
func syncedSet(nextID func() int, entry catalogueEntry, complete bool) *bootSet {
	st := &bootSet{ID: nextID(), Version: time.Now().UTC().Format("20060102"), Label: "stable"}
	for i, f := range []struct {
		name string
		size int64
	}{{"boot-kernel", 14 << 20}, {"boot-initrd", 72 << 20}, {"squashfs", 480 << 20}} {
		bf := &bootFile{ID: nextID(), Filename: f.name, Filetype: f.name, Size: f.size,
			SHA256: sha256Hex([]byte(fmt.Sprintf("%s/%s %s %d", entry.os, entry.release, f.name, i)))}
		if complete {
			bf.Held = bf.Size
		}
		st.Files = append(st.Files, bf)
	}
	return st
}

// importDone completes every synced file of the import gen (unless it
// was stopped or another started).
func (s *Server) importDone(gen int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || gen != s.img.importGen || !s.img.importing {
		return
	}
	for _, b := range s.bootRes {
		if b.Type != "Synced" {
			continue
		}
		for _, st := range b.Sets {
			for _, f := range st.Files {
				f.Held = f.Size
			}
		}
	}
	s.img.importing = false
	s.img.stats.ImportsDone++
}
