package redfish

import (
	"net/http"
	"time"

	"github.com/slipway-dev/slipway/internal/redfishmock"
)

// Firmware component kinds, as drivers.FirmwareComponent.Kind names them.
const (
	kindBMC   = "bmc"
	kindBIOS  = "bios"
	kindNIC   = "nic"
	kindGPU   = "gpu"
	kindDrive = "drive"
)

// FirmwareItem is one member of the BMC's firmware inventory.
type FirmwareItem struct {
	ID   string // the inventory member's Id
	Kind string // bmc, bios, nic, gpu or drive
	Name string
	// Version in effect.
	Version string
	// Device: a NIC's or GPU's PCI address (0000:18:00.0), a drive's bay
	// ("0"); "" for the BMC and the BIOS.
	Device     string
	Updateable bool
}

// lab is the service's firmware, update and storage state (under the
// service's mu).
type lab struct {
	o    Options
	stop func()
}

func newLab(o Options) *lab {
	if o.UpdateDuration <= 0 {
		o.UpdateDuration = 2 * time.Second
	}
	if o.BMCResetDuration <= 0 {
		o.BMCResetDuration = time.Second
	}
	return &lab{o: o, stop: func() {}}
}

// labRoutes serves the UpdateService, the tasks and the Storage.
func (s *Service) labRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /redfish/v1/UpdateService/FirmwareInventory/{id}", s.getFirmware)
	mux.HandleFunc("GET "+tasksPath+"/{id}", s.getTask)
}

// bmcResetting: the BMC is resetting (after its own update), so it
// answers nothing.
func (s *Service) bmcResetting() bool { return false }

// version is the version in effect of the component of that kind (the
// first of it), else def.
func (s *Service) version(kind, def string) string {
	_ = kind
	return def
}

// getFirmware answers a firmware inventory member, with the versions the
// options give for the BMC and the BIOS.
func (s *Service) getFirmware(w http.ResponseWriter, r *http.Request) {
	doc := mockDoc(r.URL.Path)
	if doc == nil {
		s.getMockup(w, r)
		return
	}
	switch r.PathValue("id") {
	case "BMC":
		setIf(doc, "Version", s.o.BMCFirmware)
	case "BIOS":
		setIf(doc, "Version", s.o.BIOSVersion)
	}
	writeJSON(w, http.StatusOK, doc)
}

var _ = redfishmock.Root
