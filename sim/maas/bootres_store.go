package maas

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Boot resources as a MAAS region keeps them (src/maasserver/models/
// bootresource.py, bootresourceset.py, bootresourcefile.py): a resource
// (name, architecture, type) has sets, each a version of it made of
// files; a set is complete when every file is, and a deploy takes the
// newest complete set. Uploaded files are written to the region's disk
// chunk by chunk (src/maasservicelayer/utils/image_local_files.py): the
// SHA-256 is checked when the last byte arrives. The lab keeps uploaded
// content under Options.ImageDir; synced files have no content (the lab
// has no simplestreams mirror, docs/lab.md).

// DefaultMaxImageBytes bounds one uploaded file when Options.MaxImageBytes
// is zero.
const DefaultMaxImageBytes = 1 << 30

// The resource types as MAAS stores them (BOOT_RESOURCE_TYPE) and names
// them in the API.
const (
	rtypeSynced   = 0
	rtypeUploaded = 2
)

type bootResource struct {
	ID           int
	Type         string // Synced | Uploaded
	Name         string // ubuntu/jammy; an uploaded custom image's bare name (gpu-golden)
	Architecture string // amd64/ga-22.04 (synced: the architecture, then the kernel), amd64/generic
	Subarches    string // the kernel's compatibility levels
	Title        string
	BaseImage    string // an uploaded image's base OS (ubuntu/jammy)
	Sets         []*bootSet
	LastDeployed time.Time
}

// bootSet is a version of a resource.
type bootSet struct {
	ID      int
	Version string // YYYYmmdd, then YYYYmmdd.1 ... (get_next_version_name)
	Label   string // uploaded | stable
	Files   []*bootFile
}

// bootFile is one file of a set.
type bootFile struct {
	ID       int
	Filename string
	Filetype string
	SHA256   string
	Size     int64
	Held     int64  // bytes the receiving region holds
	path     string // uploaded content on disk ("" for synced files)
	hash     hash.Hash
	mu       sync.Mutex // one upload request at a time (bootres_upload.go)
	// The other region controllers' copies (bootres_regions.go): want of
	// them must copy the file once the receiving region holds it whole;
	// copies did. rowed: the receiving region has a sync row for it (an
	// upload was attempted; MAAS's progress divides by the size then).
	want, copies int
	rowed        bool
}

// holdsAll: the receiving region holds every byte (MAAS's "Cannot upload
// to a complete file." test, on that region's row).
func (f *bootFile) holdsAll() bool { return f.Held == f.Size }

// complete is MAAS's complete: every region holds the whole file
// (sync_progress == 100, never for a size <= 0).
func (f *bootFile) complete() bool { return f.Size > 0 && f.holdsAll() && f.copies >= f.want }

// regionBytes is the numerator and denominator of MAAS's sync_progress:
// the bytes every region holds, and size times the regions.
func (f *bootFile) regionBytes() (held, total int64) {
	return f.Held + int64(f.copies)*f.Size, f.Size * int64(f.want+1)
}

func (st *bootSet) complete() bool {
	if len(st.Files) == 0 {
		return false
	}
	for _, f := range st.Files {
		if !f.complete() {
			return false
		}
	}
	return true
}

// sizes are the set's total size, and the bytes every region holds and
// size times the regions (MAAS's set sync_progress).
func (st *bootSet) sizes() (size, held, total int64) {
	for _, f := range st.Files {
		h, t := f.regionBytes()
		size, held, total = size+f.Size, held+h, total+t
	}
	return size, held, total
}

// latestComplete is the newest complete set (nil: none).
func (b *bootResource) latestComplete() *bootSet {
	for i := len(b.Sets) - 1; i >= 0; i-- {
		if b.Sets[i].complete() {
			return b.Sets[i]
		}
	}
	return nil
}

// archOnly is the architecture without its subarchitecture (amd64).
func archOnly(a string) string {
	arch, _, _ := strings.Cut(a, "/")
	return arch
}

// nextVersion names a new set of b as MAAS does: today's date, then
// today's date with the next revision.
func (b *bootResource) nextVersion(now time.Time) string {
	day := now.UTC().Format("20060102")
	max := -1
	for _, st := range b.Sets {
		if st.Version == day {
			max = max0(max)
			continue
		}
		if rest, ok := strings.CutPrefix(st.Version, day+"."); ok {
			if n, err := strconv.Atoi(rest); err == nil && n > max {
				max = n
			}
		}
	}
	if max < 0 {
		return day
	}
	return day + "." + strconv.Itoa(max+1)
}

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}

// BootResourceView is a boot resource as the lab holds it: what tests and
// audits count, independently of any client.
type BootResourceView struct {
	ID           int
	Type         string // Synced | Uploaded
	Name         string
	Architecture string
	// Complete: the resource has a complete set (a deploy can use it);
	// SHA256, Size and Held are of its newest set's first file (of the
	// newest complete set when no newer set is under way).
	Complete bool
	SHA256   string
	Size     int64
	Held     int64 // bytes of that file the receiving region holds (on disk for an upload)
	Regions  int   // region controllers that hold that file whole
	Sets     int
}

// regionsHolding counts the region controllers that hold f whole.
func (s *Server) regionsHolding(f *bootFile) int {
	switch {
	case f.complete():
		return s.regionCount()
	case f.Size > 0 && f.holdsAll():
		return 1 + f.copies
	}
	return 0
}

// ImageStats count what the region did with images.
type ImageStats struct {
	Creates         int   // boot resources created through the API (POST boot-resources/)
	Chunks          int   // upload requests that appended content
	BytesReceived   int64 // bytes appended
	ChecksumRefused int   // last chunks refused: the content's SHA-256 differs
	Deletes         int   // resources deleted through the API
	Imports         int   // imports started (boot-resources?op=import)
	ImportsDone     int   // imports that ran to their end
}

// BootResources lists the region's boot resources by ID.
func (s *Server) BootResources() []BootResourceView {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]BootResourceView, 0, len(s.bootRes))
	for _, b := range s.bootRes {
		v := BootResourceView{ID: b.ID, Type: b.Type, Name: b.Name, Architecture: b.Architecture,
			Complete: b.latestComplete() != nil, Sets: len(b.Sets)}
		if n := len(b.Sets); n > 0 && len(b.Sets[n-1].Files) > 0 {
			f := b.Sets[n-1].Files[0]
			v.SHA256, v.Size, v.Held, v.Regions = f.SHA256, f.Size, f.Held, s.regionsHolding(f)
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ImageStats returns the image counters.
func (s *Server) ImageStats() ImageStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.img.stats
}

// imageDir is where uploads go: Options.ImageDir, or a temporary
// directory the server made (and removes at Close); s.mu is held.
func (s *Server) imageDir() (string, error) {
	if s.img.dir != "" {
		return s.img.dir, nil
	}
	if s.opts.ImageDir != "" {
		if err := os.MkdirAll(s.opts.ImageDir, 0o700); err != nil {
			return "", err
		}
		s.img.dir = s.opts.ImageDir
		return s.img.dir, nil
	}
	d, err := os.MkdirTemp("", "slipway-lab-images-")
	if err != nil {
		return "", err
	}
	s.img.dir, s.img.tempDir = d, true
	return d, nil
}

// maxImageBytes is the bound of one uploaded file.
func (s *Server) maxImageBytes() int64 {
	if s.opts.MaxImageBytes > 0 {
		return s.opts.MaxImageBytes
	}
	return DefaultMaxImageBytes
}

// newUploadFile makes an empty file for an upload; s.mu is held.
func (s *Server) newUploadFile(f *bootFile) error {
	dir, err := s.imageDir()
	if err != nil {
		return err
	}
	f.path = filepath.Join(dir, fmt.Sprintf("file-%d.incomplete", f.ID))
	fh, err := os.OpenFile(f.path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	f.hash = sha256.New()
	return fh.Close()
}

// errTooMuch and errChecksum are the outcomes of appendChunk that MAAS
// answers with a 400 (msgTooMuch, msgChecksum).
var (
	errTooMuch  = errors.New("too much data")
	errChecksum = errors.New("checksum differs")
)

// MAAS's messages (BootResourceFileUploadHandler).
const (
	msgTooMuch  = "Too much data received."
	msgChecksum = "Saved content does not match given SHA256 value."
)

// appendChunk appends data to an uploaded file at what it holds; at the
// last byte it checks the SHA-256 and, when it differs, leaves the file
// as it was before the chunk (MAAS keeps the file incomplete); s.mu is
// held.
func (s *Server) appendChunk(f *bootFile, data []byte) error {
	if f.Held+int64(len(data)) > f.Size {
		return errTooMuch
	}
	if f.hash == nil { // the file was made without content on disk
		if err := s.newUploadFile(f); err != nil {
			return err
		}
	}
	last := f.Held+int64(len(data)) == f.Size
	var saved []byte
	if last {
		saved, _ = f.hash.(encoding.BinaryMarshaler).MarshalBinary()
	}
	if err := writeAt(f.path, f.Held, data); err != nil {
		return err
	}
	f.hash.Write(data)
	if last && hex.EncodeToString(f.hash.Sum(nil)) != f.SHA256 {
		_ = f.hash.(encoding.BinaryUnmarshaler).UnmarshalBinary(saved)
		_ = os.Truncate(f.path, f.Held)
		s.img.stats.ChecksumRefused++
		return errChecksum
	}
	f.Held += int64(len(data))
	s.img.stats.Chunks++
	s.img.stats.BytesReceived += int64(len(data))
	if last {
		done := strings.TrimSuffix(f.path, ".incomplete")
		if err := os.Rename(f.path, done); err == nil {
			f.path = done
		}
		f.hash = nil
	}
	return nil
}

func writeAt(path string, off int64, data []byte) error {
	fh, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := fh.WriteAt(data, off); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// removeFiles deletes the content of a resource's files from disk.
func removeFiles(sets []*bootSet) {
	for _, st := range sets {
		for _, f := range st.Files {
			if f.path != "" {
				_ = os.Remove(f.path)
			}
		}
	}
}

// closeImages stops a running import and removes the temporary image
// directory; s.mu is held.
func (s *Server) closeImages() {
	if s.img.importTimer != nil {
		s.img.importTimer.Stop()
	}
	for _, t := range s.img.syncTimers {
		t.Stop()
	}
	if s.img.tempDir && s.img.dir != "" {
		_ = os.RemoveAll(s.img.dir)
	}
}
