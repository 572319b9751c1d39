package redfish

import (
	"context"
	"crypto/sha1" //nolint:gosec // a name-based UUID, not a security use
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slipway-dev/slipway/internal/redfishmock"
	"github.com/slipway-dev/slipway/sim/bmc"
)

// Machine is what the service controls: the machine sim/bmc's BMC
// drives (power and the boot override), so the lab's simulated machine
// serves both. Boot devices include "http" (UEFI HTTP boot) here.
type Machine interface {
	bmc.Chassis
}

// Options configure a service.
type Options struct {
	Addr     string // TCP listen address; "127.0.0.1:0" picks a free port
	Username string
	Password string
	CA       *CA // signs the service's certificate (required)
	// What the system and its firmware report; "" keeps the mockup's.
	// UUID is the ComputerSystem's and the service root's (the lab gives
	// each BMC its machine's IPMI GUID).
	UUID, Serial, Model, Manufacturer string
	BMCFirmware, BIOSVersion          string
	// SystemMediaOnly serves the virtual CD only under the System (as
	// DMTF's mockup and some older BMCs), not under the Manager.
	SystemMediaOnly bool
	// IgnoreGraceful: the operating system ignores GracefulShutdown and
	// GracefulRestart (as a hung OS does), so only a forced reset works.
	IgnoreGraceful bool
	// Unreachable, when it returns true, drops every connection without
	// an answer (fault injection).
	Unreachable func() bool
	// Latency is added before each answer (fault injection).
	Latency        time.Duration
	SessionTimeout time.Duration // idle sessions end after it; default 30 minutes
	MaxSessions    int           // default 16; a login beyond it gets 503
	// The firmware inventory, the drives behind the RAID controller and
	// the firmware updates' timing (update.go, storage.go).
	Firmware         []FirmwareItem // nil: DefaultFirmware's
	Drives           []Drive        // nil: DefaultDrives()
	UpdateDuration   time.Duration  // a firmware update's run once its image is in; default 2s
	BMCResetDuration time.Duration  // the BMC's reset after its own update; default 1s
	MaxImageBytes    int64          // the largest image the BMC takes; default 64 MiB
	// Vendor selects answer shapes of a make (vendor.go): "dell" (iDRAC:
	// BIOS settings staged without an apply time stay pending at a reset;
	// volumes and updates answered with a Job), "hpe" (iLO: SimpleUpdate
	// answered 200 with no task, followed in UpdateService's State), ""
	// (DMTF's and OpenBMC's shapes).
	Vendor string
}

// Stats are the service's counters.
type Stats struct {
	Requests       uint64
	Busy           uint64 // 503 answers
	AuthFailures   uint64
	SessionsOpened uint64
	SessionsClosed uint64
	Resets         map[string]uint64 // by ResetType
	BootPatches    uint64
	MediaInserted  uint64
	MediaEjected   uint64 // ejects of an inserted medium
}

// Service is one simulated Redfish service.
type Service struct {
	o        Options
	m        Machine
	ln       net.Listener
	srv      *http.Server
	fp       string
	busy     atomic.Int64 // 503 answers still to give
	mu       sync.Mutex
	sessions map[string]*session // by token
	state    systemState
	stats    Stats
	lab      *lab   // update.go, storage.go: firmware, updates, drives and volumes (under mu)
	applied  uint64 // system resets that applied staged settings or firmware (durations.go)
}

// systemState is what the service keeps of the system beyond the
// machine's power and boot device.
type systemState struct {
	bios, pending map[string]any // BIOS attributes in effect, and staged
	media         mediaState
	sessionSeq    int
	tasks         []*task // task.go
	taskSeq       int
}

type mediaState struct {
	image                    string
	inserted, writeProtected bool
	via                      string // the path InsertMedia was posted to
}

// Start serves a Redfish service for m until ctx ends or Close.
func Start(ctx context.Context, m Machine, o Options) (*Service, error) {
	if o.CA == nil {
		return nil, errors.New("redfish: no CA to sign the service's certificate")
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 30 * time.Minute
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 16
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("redfish: listen: %w", err)
	}
	cert, err := o.CA.issue(ln.Addr().(*net.TCPAddr).IP)
	if err != nil {
		ln.Close()
		return nil, err
	}
	s := &Service{o: o, m: m, ln: ln, fp: Fingerprint(cert.Certificate[0]), sessions: map[string]*session{}}
	s.stats.Resets = map[string]uint64{}
	s.state.bios = mockAttributes()
	s.state.pending = map[string]any{}
	s.lab = newLab(o)
	s.srv = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10,
		ErrorLog:  log.New(io.Discard, "", 0), // refused handshakes are the tests' point
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() { _ = s.srv.ServeTLS(ln, "", "") }()
	go func() { <-ctx.Done(); s.Close() }()
	return s, nil
}

// URL is the service's base URL (https://127.0.0.1:PORT).
func (s *Service) URL() string { return "https://" + s.ln.Addr().String() }

// Addr is the address the service listens on.
func (s *Service) Addr() *net.TCPAddr { return s.ln.Addr().(*net.TCPAddr) }

// Fingerprint is the SHA-256 fingerprint of the service's certificate.
func (s *Service) Fingerprint() string { return s.fp }

// Close stops the service.
func (s *Service) Close() { s.lab.stop(); _ = s.srv.Close() }

// SetBusy makes the next n requests answer 503 with Retry-After.
func (s *Service) SetBusy(n int) { s.busy.Store(int64(n)) }

// Stats returns the counters.
func (s *Service) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Resets = make(map[string]uint64, len(s.stats.Resets))
	for k, v := range s.stats.Resets {
		st.Resets[k] = v
	}
	return st
}

// Media is the virtual media's state: its image and whether it is
// inserted.
func (s *Service) Media() (image string, inserted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.media.image, s.state.media.inserted
}

// MediaVia is the resource path the inserted medium was inserted through
// (the Manager's CD or the System's alias); "" when none is inserted.
func (s *Service) MediaVia() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.media.via
}

// BIOS returns the attributes in effect and those staged.
func (s *Service) BIOS() (current, pending map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return clone(s.state.bios), clone(s.state.pending)
}

// systemPath and the paths below are the mockup's resources the service
// gives live state.
var (
	systemPath   = redfishmock.Root + "/Systems/" + redfishmock.SystemID
	biosPath     = systemPath + "/Bios"
	settingsPath = biosPath + "/Settings"
	mediaPath    = systemPath + "/VirtualMedia/CD1"
	managerPath  = redfishmock.Root + "/Managers/" + redfishmock.ManagerID
	// managerMediaPath is the virtual CD where sushy and Ironic look for
	// it; mediaPath is its alias.
	managerMediaPath = managerPath + "/VirtualMedia/CD1"
	sessionsPath     = redfishmock.Root + "/SessionService/Sessions"
)

// routeRoot serves the service root with the service's UUID.
func (s *Service) routeRoot(mux *http.ServeMux) {
	root := func(w http.ResponseWriter, _ *http.Request) {
		doc := mockDoc(redfishmock.Root)
		setIf(doc, "UUID", s.o.UUID)
		writeJSON(w, http.StatusOK, doc)
	}
	mux.HandleFunc("GET "+redfishmock.Root+"/{$}", root)
	mux.HandleFunc("GET "+redfishmock.Root, root)
	// The protocol versions document (redfishtool's "versions", its -C
	// and -W checks read it).
	versions := func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"v1": redfishmock.Root + "/"})
	}
	mux.HandleFunc("GET /redfish", versions)
	mux.HandleFunc("GET /redfish/{$}", versions)
}

// managerUUID is the Manager's UUID of a service whose system has
// UUID sys: a name-based (version 5 layout) UUID derived from it, so each
// BMC has its own and keeps it.
func managerUUID(sys string) string {
	sum := sha1.Sum([]byte("slipway-lab-manager/" + sys))
	sum[6] = sum[6]&0x0f | 0x50
	sum[8] = sum[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
