package maas

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The boot-resources API as MAAS 2.0 serves it
// (src/maasserver/api/boot_resources.py): list, read with sets and files,
// create through BootResourceForm (src/maasserver/forms/__init__.py),
// delete, the chunked upload of an uploaded file, and the import ops.

func (s *Server) routesBootResources() {
	s.handle("GET", "/boot-resources/", "", (*Server).bootResourcesList)
	s.handleAdmin("POST", "/boot-resources/", "", (*Server).bootResourceCreate)
	s.handle("GET", "/boot-resources/", "is_importing", func(s *Server, _ *request) (any, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.img.importing, nil
	})
	s.handleAdmin("POST", "/boot-resources/", "import", (*Server).bootImport)
	s.handleAdmin("POST", "/boot-resources/", "stop_import", (*Server).bootStopImport)
	withRes := func(fn func(s *Server, b *bootResource, req *request) (any, *apiError)) handler {
		return withFound("BootResource", func(s *Server, req *request) *bootResource {
			return s.bootResource(req.params["id"])
		}, fn)
	}
	s.handle("GET", "/boot-resources/{id}/", "", withRes(func(s *Server, b *bootResource, _ *request) (any, *apiError) {
		if aerr := divisionByZero(b); aerr != nil {
			return nil, aerr
		}
		return s.renderBootResource(b, true), nil
	}))
	s.handleAdmin("DELETE", "/boot-resources/{id}/", "", (*Server).bootResourceDelete)
	s.handleAdmin("PUT", "/boot-resources/{id}/upload/{file_id}/", "", (*Server).bootUpload)
}

// bootResourceDelete is DELETE boot-resources/{id}/: MAAS looks the
// resource up with BootResource.objects.get, so a missing one is an
// unhandled DoesNotExist (500 with its text), not a 404.
func (s *Server) bootResourceDelete(req *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := req.params["id"]
	if _, err := strconv.Atoi(id); err != nil {
		return nil, errorf(http.StatusInternalServerError, "Field 'id' expected a number but got '%s'.", id)
	}
	b := s.bootResource(id)
	if b == nil {
		return nil, errorf(http.StatusInternalServerError, "BootResource matching query does not exist.")
	}
	removeFiles(b.Sets)
	s.bootRes = removeResource(s.bootRes, b)
	s.img.stats.Deletes++
	return nil, nil
}

func (s *Server) bootResource(id string) *bootResource {
	n, err := strconv.Atoi(id)
	if err != nil {
		return nil
	}
	for _, b := range s.bootRes {
		if b.ID == n {
			return b
		}
	}
	return nil
}

func removeResource(list []*bootResource, b *bootResource) []*bootResource {
	out := list[:0:0]
	for _, x := range list {
		if x != b {
			out = append(out, x)
		}
	}
	return out
}

// bootResourcesList is GET boot-resources/: every resource ordered by
// type, name and architecture, or those of ?type=synced|uploaded ordered
// by name and architecture.
func (s *Server) bootResourcesList(req *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	typ := "all"
	if v, ok := req.r.URL.Query()["type"]; ok && len(v) > 0 {
		typ = v[0]
	}
	want := ""
	switch typ {
	case "all":
	case "synced":
		want = "Synced"
	case "uploaded":
		want = "Uploaded"
	default:
		return nil, errorf(http.StatusBadRequest, "'%s' is not a valid boot resource type. Available types: ['synced', 'uploaded']", typ)
	}
	list := make([]*bootResource, 0, len(s.bootRes))
	for _, b := range s.bootRes {
		if want == "" || b.Type == want {
			list = append(list, b)
		}
	}
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.Type != b.Type {
			return rtypeOf(a.Type) < rtypeOf(b.Type)
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Architecture < b.Architecture
	})
	out := make([]any, 0, len(list))
	for _, b := range list {
		out = append(out, s.renderBootResource(b, false))
	}
	return out, nil
}

func rtypeOf(t string) int {
	if t == "Uploaded" {
		return rtypeUploaded
	}
	return rtypeSynced
}

// renderBootResource is boot_resource_to_dict: the extra fields (title,
// subarches) merged in, base_image when set, the sets (newest first in
// MAAS; a JSON object here) when asked.
func (s *Server) renderBootResource(b *bootResource, withSets bool) map[string]any {
	out := map[string]any{"id": b.ID, "type": b.Type, "name": b.Name, "architecture": b.Architecture,
		"resource_uri": uri("/boot-resources/%d/", b.ID), "last_deployed": nil, "subarches": b.Subarches}
	if !b.LastDeployed.IsZero() {
		out["last_deployed"] = b.LastDeployed.UTC().Format("2006-01-02T15:04:05.000")
	}
	if b.Title != "" || b.Type == "Uploaded" {
		out["title"] = b.Title
	}
	if b.BaseImage != "" {
		out["base_image"] = b.BaseImage
	}
	if b.Type == "Synced" {
		out["kflavor"] = "generic"
	}
	if withSets {
		sets := map[string]any{}
		for _, st := range b.Sets {
			sets[st.Version] = s.renderBootSet(b, st)
		}
		out["sets"] = sets
	}
	return out
}

func (s *Server) renderBootSet(b *bootResource, st *bootSet) map[string]any {
	size, held, total := st.sizes()
	out := map[string]any{"version": st.Version, "label": st.Label, "size": size, "complete": st.complete()}
	if !st.complete() {
		out["progress"] = percent(held, total)
	}
	files := map[string]any{}
	for _, f := range st.Files {
		fd := map[string]any{"filename": f.Filename, "filetype": f.Filetype, "sha256": f.SHA256,
			"filename_on_disk": diskName(f.SHA256), "size": f.Size, "complete": f.complete()}
		if !f.complete() {
			fd["progress"], _ = fileProgress(f, f.rowed || b.Type == "Synced")
			if b.Type == "Uploaded" {
				fd["upload_uri"] = uri("/boot-resources/%d/upload/%d/", b.ID, f.ID)
			}
		}
		files[f.Filename] = fd
	}
	out["files"] = files
	return out
}

// percent is MAAS's sync_progress: 100 * held / size, a float.
func percent(held, size int64) float64 {
	if size <= 0 {
		return 0
	}
	return 100 * float64(held) / float64(size)
}

// diskName is filename_on_disk: the SHA-256's first 7 characters.
func diskName(sha string) string { return sha[:min(7, len(sha))] }

// fileOf finds a file by ID among every resource's sets.
func (s *Server) fileOf(id string) *bootFile {
	n, err := strconv.Atoi(id)
	if err != nil {
		return nil
	}
	for _, b := range s.bootRes {
		for _, st := range b.Sets {
			for _, f := range st.Files {
				if f.ID == n {
					return f
				}
			}
		}
	}
	return nil
}

// uploadFiletypes maps the upload filetypes (BOOT_RESOURCE_FILE_TYPE_
// CHOICES_UPLOAD) to the stored ones, in MAAS's order.
var uploadFiletypes = []struct{ upload, stored string }{
	{"tgz", "root-tgz"}, {"tbz", "root-tbz"}, {"txz", "root-txz"}, {"ddtgz", "root-dd"}, {"ddtbz", "root-dd.tar.bz2"},
	{"ddtxz", "root-dd.tar.xz"}, {"ddtar", "root-dd.tar"}, {"ddbz2", "root-dd.bz2"}, {"ddgz", "root-dd.gz"},
	{"ddxz", "root-dd.xz"}, {"ddraw", "root-dd.raw"},
}

func storedFiletype(upload string) string {
	for _, t := range uploadFiletypes {
		if t.upload == upload {
			return t.stored
		}
	}
	return ""
}

// uploadedFilename is get_uploaded_filename: root tarballs get an
// extension, the rest are named by their filetype.
func uploadedFilename(filetype string) string {
	switch filetype {
	case "root-tgz":
		return "root.tgz"
	case "root-tbz":
		return "root.tbz"
	case "root-txz":
		return "root.txz"
	}
	return filetype
}

// bootResourceForm is what BootResourceForm (or its no-content variant)
// cleaned.
type bootResourceForm struct {
	name, arch, title, filetype, sha, baseImage string
	size                                        int64
	content                                     []byte
	hasContent                                  bool
}

var centosName = regexp.MustCompile(`^centos\d\d?$`)

// supportedOSystems are the operating systems MAAS's registry knows
// (OperatingSystemRegistry); linuxOSystems may be a custom image's base.
var (
	supportedOSystems = []string{"centos", "custom", "ol", "rhel", "suse", "ubuntu", "windows", "esxi"}
	linuxOSystems     = []string{"ubuntu", "centos", "rhel", "ol"}
)

// parseBootResourceForm validates a create request as BootResourceForm
// and BootResourceNoContentForm do (clean_name, clean_base_image, the
// sha256 and size fields).
func (s *Server) parseBootResourceForm(f formValues) (bootResourceForm, *apiError) {
	errs := fieldErrors{}
	out := bootResourceForm{title: f.get("title"), filetype: orDefault(f.get("filetype"), "tgz")}
	out.name = s.cleanResourceName(errs, f.get("name"))
	out.arch = f.get("architecture")
	if out.arch == "" {
		errs.add("architecture", "This field is required.")
	} else if !contains(usableArchitectures, out.arch) {
		errs.add("architecture", "%s", msgInvalidChoiceOf(out.arch, "architecture", usableArchitectures))
	}
	if storedFiletype(out.filetype) == "" {
		errs.add("filetype", "%s", msgInvalidChoice(out.filetype))
	}
	if c, ok := f["content"]; ok && len(c) > 0 {
		out.content, out.hasContent = []byte(c[0]), true
	} else {
		out.sha, out.size = s.cleanShaAndSize(errs, f)
	}
	if len(out.title) > 1024 { // the lab's bound
		errs.add("title", "Ensure this value has at most 1024 characters (it has %d).", len(out.title))
	}
	out.baseImage = cleanBaseImage(errs, f.get("name"), f.get("base_image"), s.existingBase(out.name, out.arch))
	if len(errs) > 0 {
		return out, errs.err()
	}
	return out, nil
}

// cleanResourceName is clean_name: "custom/" is dropped, another OS
// prefix must be a supported OS, and the names of the boot source's
// images and of the operating systems are reserved.
func (s *Server) cleanResourceName(errs fieldErrors, name string) string {
	if name == "" {
		errs.add("name", "This field is required.")
		return ""
	}
	if len(name) > 255 {
		errs.add("name", "Ensure this value has at most 255 characters (it has %d).", len(name))
		return ""
	}
	if osys, rel, ok := strings.Cut(name, "/"); ok {
		switch {
		case strings.Contains(rel, "/"):
			errs.add("name", "too many values to unpack (expected 2)")
			return ""
		case osys == "custom":
			name = rel
		case !contains(supportedOSystems, osys):
			errs.add("name", "Unsupport operating system %s, supported operating systems: %s", osys, pyList(supportedOSystems))
			return ""
		}
	}
	if s.reservedName(name) || centosName.MatchString(name) {
		errs.add("name", "%s is a reserved name", name)
	}
	return name
}

// reservedName: an os/release or os or release the boot source offers, or
// an operating system's name.
func (s *Server) reservedName(name string) bool {
	if contains(supportedOSystems, name) {
		return true
	}
	for _, c := range bootSourceCatalogue {
		if name == c.os+"/"+c.release || name == c.os || name == c.release {
			return true
		}
	}
	return false
}

func (s *Server) cleanShaAndSize(errs fieldErrors, f formValues) (string, int64) {
	sha := f.get("sha256")
	switch {
	case sha == "":
		errs.add("sha256", "This field is required.")
	case len(sha) < 64:
		errs.add("sha256", "Ensure this value has at least 64 characters (it has %d).", len(sha))
	case len(sha) > 64:
		errs.add("sha256", "Ensure this value has at most 64 characters (it has %d).", len(sha))
	}
	raw := strings.TrimSpace(f.get("size"))
	if raw == "" {
		errs.add("size", "This field is required.")
		return sha, 0
	}
	size, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		errs.add("size", msgInvalidNumber)
		return sha, 0
	}
	// An IntegerField without a minimum: MAAS takes 0 and negative sizes
	// (an upload to them is then refused, bootres_upload.go).
	if max := s.maxImageBytes(); size > max {
		errs.add("size", "The image is %d bytes, over the lab's bound of %d bytes per file (Options.MaxImageBytes).", size, max)
	}
	return sha, size
}

// existingBase is the base image of the uploaded resource of that name
// and architecture ("" when none).
func (s *Server) existingBase(name, arch string) string {
	for _, b := range s.bootRes {
		if b.Type == "Uploaded" && b.Name == name && b.Architecture == arch {
			return b.BaseImage
		}
	}
	return ""
}

// cleanBaseImage is clean_base_image: only for custom images; absent, the
// existing resource's, else the commissioning release.
func cleanBaseImage(errs fieldErrors, rawName, base, existing string) string {
	if osys, _, ok := strings.Cut(rawName, "/"); ok && osys != "custom" {
		return ""
	}
	if base == "" {
		base = existing
	}
	if base == "" {
		return "ubuntu/jammy" // the commissioning OS and release (Config)
	}
	osys, rel, ok := strings.Cut(base, "/")
	if !ok || strings.Contains(rel, "/") {
		errs.add("base_image", "a base image must follow the format: <osystem>/<series>")
		return ""
	}
	osys, rel = strings.ToLower(osys), strings.ToLower(rel)
	if !contains(linuxOSystems, osys) {
		errs.add("base_image", "custom images require a valid non-custom OS type base image")
		return ""
	}
	if osys == "ubuntu" && !knownUbuntuRelease(rel) {
		errs.add("base_image", "please select a valid base image OS and version")
		return ""
	}
	return osys + "/" + rel
}

func knownUbuntuRelease(rel string) bool {
	for _, c := range bootSourceCatalogue {
		if c.os == "ubuntu" && c.release == rel {
			return true
		}
	}
	return false
}

// pyList renders a list as Python prints one.
func pyList(l []string) string {
	q := make([]string, len(l))
	for i, v := range l {
		q[i] = "'" + v + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// bootResourceCreate is POST boot-resources/: the uploaded resource of
// that name and architecture (made when absent) gains a new set with one
// file; the files of its older sets are removed unless keep_old is true
// (LP:1660418 in BootResourceForm.save). An older complete set kept so
// stays deployable while the new one uploads.
func (s *Server) bootResourceCreate(req *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	form, ferr := s.parseBootResourceForm(req.form)
	if ferr != nil {
		return nil, ferr
	}
	if form.hasContent {
		if int64(len(form.content)) > s.maxImageBytes() {
			return nil, badRequest("content", "The content is %d bytes, over the lab's bound of %d bytes per file (Options.MaxImageBytes).", len(form.content), s.maxImageBytes())
		}
		form.sha, form.size = sha256Hex(form.content), int64(len(form.content))
	}
	if s.shaOfOtherSize(form.sha, form.size) {
		return nil, errorf(http.StatusBadRequest, "File already exists with sha256 that is of different size.")
	}
	b := s.uploadedResource(form)
	st := &bootSet{ID: s.nextID(), Version: b.nextVersion(time.Now()), Label: "uploaded"}
	stored := storedFiletype(form.filetype)
	f := &bootFile{ID: s.nextID(), Filename: uploadedFilename(stored), Filetype: stored, SHA256: form.sha, Size: form.size}
	s.newUploadedFile(f)
	if err := s.newUploadFile(f); err != nil {
		return nil, errorf(http.StatusInternalServerError, "Could not make the image file: %v", err)
	}
	if form.hasContent {
		if err := s.appendChunk(f, form.content); err != nil {
			return nil, errorf(http.StatusInternalServerError, "Could not store the content: %v", err)
		}
		s.img.stats.Chunks-- // content given at creation is no chunk
		f.rowed = true
		s.receivedWhole(f)
	}
	if !djangoBool(req.form.get("keep_old")) {
		removeFiles(b.Sets)
		for _, old := range b.Sets {
			old.Files = nil
		}
	}
	st.Files = []*bootFile{f}
	b.Sets = append(b.Sets, st)
	s.img.stats.Creates++
	return created{s.renderBootResource(b, true)}, nil
}

// djangoBool is a BooleanField's reading of a form value: "", "false"
// and "0" are false.
func djangoBool(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "false", "0":
		return false
	}
	return true
}

// uploadedResource finds or makes the uploaded resource of the form's
// name and architecture (get_existing_resource); s.mu is held.
func (s *Server) uploadedResource(form bootResourceForm) *bootResource {
	for _, b := range s.bootRes {
		if b.Type == "Uploaded" && b.Name == form.name && b.Architecture == form.arch {
			b.Title = form.title
			if b.BaseImage == "" {
				b.BaseImage = form.baseImage
			}
			return b
		}
	}
	_, sub, _ := strings.Cut(form.arch, "/")
	b := &bootResource{ID: s.nextID(), Type: "Uploaded", Name: form.name, Architecture: form.arch, Subarches: sub,
		Title: form.title, BaseImage: form.baseImage}
	s.bootRes = append(s.bootRes, b)
	return b
}

// shaOfOtherSize: a file of that SHA-256 exists with another size.
func (s *Server) shaOfOtherSize(sha string, size int64) bool {
	for _, b := range s.bootRes {
		for _, st := range b.Sets {
			for _, f := range st.Files {
				if f.SHA256 == sha && f.Size != size {
					return true
				}
			}
		}
	}
	return false
}

// usableArchitectures are the architectures the lab's rack offers
// (list_all_usable_architectures).
var usableArchitectures = []string{"amd64/generic", "arm64/generic", "ppc64el/generic", "s390x/generic"}

// created is an answer with status 201.
type created struct{ body any }

// statusWriter writes its status instead of 200.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(int) { w.ResponseWriter.WriteHeader(w.status) }

// DeployedImage is the image a machine was deployed with, as the region
// recorded it: the OS and release (custom and the uploaded name for a
// custom image) and, for an uploaded image, the SHA-256 of the set it
// deployed.
type DeployedImage struct {
	OSystem string
	Series  string
	SHA256  string
}

// Name is os/release (custom/gpu-golden, ubuntu/jammy).
func (d DeployedImage) Name() string {
	if d.OSystem == "" {
		return ""
	}
	return d.OSystem + "/" + d.Series
}

func sha256Hex(b []byte) string { return fmt.Sprintf("%x", sha256.Sum256(b)) }
