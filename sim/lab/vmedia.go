package lab

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"time"

	simrf "github.com/slipway-dev/slipway/sim/redfish"
)

// Virtual-media boot in the lab. A machine whose BMC speaks Redfish has a
// virtual CD (its Redfish service's). At power on it boots:
//   - from PXE when its boot device is pxe and it has PXE (SetPXE);
//   - from the virtual CD when its boot device is the CD and an image is
//     inserted, or when it should PXE-boot but has no PXE and an image is
//     inserted (the firmware falls through to the next device, as UEFI
//     boot orders do);
//   - else from its disk (the installed OS, if any).
//
// Booting the provisioner's boot ISO (BootISOURL, or the ISO the node's
// hardware profile names in virtualMedia) is a PXE boot into the
// provisioner: a machine MAAS does not know enlists itself. Another ISO
// boots, and nothing follows.

// BootISOPath is where the lab serves the provisioner's boot ISO on its
// MAAS listener.
const BootISOPath = "/sim/boot.iso"

// Boot sources a machine's BootLog records.
const (
	BootFromPXE         = "pxe"            // the network, into the provisioner
	BootFromProvisioner = "cd-provisioner" // the provisioner's boot ISO as a virtual CD
	BootFromCD          = "cd"             // another ISO as a virtual CD
	BootFromDisk        = "disk"           // the installed OS, or nothing
)

// maxBootLog bounds a machine's BootLog.
const maxBootLog = 64

// bootISOSize is the size of the lab's boot ISO.
const bootISOSize = 256 << 10

// BootISO is the lab provisioner's boot ISO: deterministic bytes (a
// header line, then padding), so a design can carry its SHA-256.
func BootISO() []byte {
	head := []byte("SLIPWAY-LAB-BOOT-ISO provisioner=maas\n")
	out := make([]byte, bootISOSize)
	copy(out, head)
	for i := len(head); i < len(out); i++ {
		out[i] = byte(i*31 + i>>8)
	}
	return out
}

// bootISOTime is the boot ISO's Last-Modified.
var bootISOTime = time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)

// BootISOSHA256 is BootISO's SHA-256, in hex.
func BootISOSHA256() string {
	sum := sha256.Sum256(BootISO())
	return hex.EncodeToString(sum[:])
}

// BootISOURL is where the lab serves its boot ISO.
func (l *Lab) BootISOURL() string { return "http://" + l.ln.Addr().String() + BootISOPath }

// serveBootISO serves BootISO (GET and HEAD, ranges as net/http does).
func serveBootISO(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/x-iso9660-image")
	w.Header().Set("ETag", strconv.Quote(BootISOSHA256()))
	http.ServeContent(w, r, "boot.iso", bootISOTime, bytes.NewReader(BootISO()))
}

// provisionerISO reports whether url is the provisioner's boot ISO for
// m: the lab's own, or the one m's node's hardware profile boots from.
func (l *Lab) provisionerISO(m *Machine, url string) bool {
	if url == "" {
		return false
	}
	if l.ln != nil && url == l.BootISOURL() {
		return true
	}
	d := l.cfg.Design
	if d == nil {
		return false
	}
	n := d.Nodes[m.Name]
	return n != nil && n.Spec.Hardware != nil && n.Spec.Hardware.VirtualMedia != nil && n.Spec.Hardware.VirtualMedia.ISO == url
}

// bootSource is where the machine boots from with boot device dev.
// rf is its Redfish service (its virtual CD), nil when it has none.
func (m *Machine) bootSource(rf *simrf.Service, dev string, pxe bool) (src, image string) {
	var inserted bool
	if rf != nil {
		image, inserted = rf.Media()
	}
	switch {
	case dev == "pxe" && pxe:
		return BootFromPXE, ""
	case (dev == "cdrom" || dev == "pxe") && inserted:
		if m.lab != nil && m.lab.provisionerISO(m, image) {
			return BootFromProvisioner, image
		}
		return BootFromCD, image
	}
	return BootFromDisk, ""
}

// isoName is an image URL's file name (what a console shows: never its
// host, query or credentials).
func isoName(image string) string {
	if u, err := url.Parse(image); err == nil {
		return path.Base(u.Path)
	}
	return "image"
}

// SetPXE gives the machine PXE or takes it away (a machine without PXE
// boots into the provisioner only from virtual media).
func (m *Machine) SetPXE(enabled bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.noPXE = !enabled
}

// BootLog lists where the machine booted from (BootFrom*), oldest first,
// the last 64 boots.
func (m *Machine) BootLog() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.bootLog...)
}

// logBoot records a boot. Called with m.mu held.
func (m *Machine) logBoot(src string) {
	if len(m.bootLog) >= maxBootLog {
		m.bootLog = m.bootLog[1:]
	}
	m.bootLog = append(m.bootLog, src)
}
