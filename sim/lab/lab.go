// Package lab is Slipway's virtual lab: a MAAS simulator, simulated
// machines and their simulated BMCs (IPMI over UDP on loopback), in one
// process. Built from a site design, it has one machine per Node with the
// node's NICs and disks at their PCI addresses, so a design runs against
// it unchanged.
package lab

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/sim/bmc"
	simgnmi "github.com/slipway-dev/slipway/sim/gnmi"
	"github.com/slipway-dev/slipway/sim/maas"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
	"github.com/slipway-dev/slipway/sim/serial"
)

// Config configures a lab.
type Config struct {
	Design     *design.Design // one machine per Node; nil for generic machines
	Machines   int            // generic machines (added to the design's)
	MAASListen string         // default 127.0.0.1:0
	APIKey     string         // consumer:token:secret; generated when empty
	TimeScale  float64        // default 1; the demo uses ~0.01
	Faults     *maas.Faults
	Seed       int64
	// Secrets resolves the design's secret references (BMC passwords);
	// nil uses ResolveSecret.
	Secrets func(ref string) (string, error)
	// BootDelay is how long a deployed machine boots before its node
	// agent starts (scaled by TimeScale); 0 means DefaultBootDelay, a
	// negative value no delay.
	BootDelay time.Duration
	// BootstrapFail scripts failing boot actions: node (machine) name →
	// the action its agent reports as "failure" with the message
	// InjectedFailure, instead of "success".
	BootstrapFail map[string]string
	// GNMI, when set, starts a gNMI target for the switches the machines
	// are cabled to (StartGNMI); Info gives its address.
	GNMI *GNMIOptions
	Log  zerolog.Logger
	// ImageDir holds the regions' uploaded boot images, one directory
	// per region ("": each region's own temporary directory, removed at
	// Close); MaxImageBytes bounds one uploaded file (0: the simulator's
	// default, 1 GiB). See sim/maas bootres_store.go.
	ImageDir      string
	MaxImageBytes int64
	// RegionControllers is how many region controllers each Site's MAAS
	// has (0: one): an uploaded image is complete there only once the
	// other regions copied it, RegionSync after its last byte (scaled by
	// TimeScale; 0: maas.DefaultRegionSync). See sim/maas
	// bootres_regions.go.
	RegionControllers int
	RegionSync        time.Duration
}

// BMCInfo tells where a machine's simulated BMC listens.
type BMCInfo struct {
	Node       string `json:"node"`
	Address    string `json:"address"`                 // always 127.0.0.1
	Port       int    `json:"port"`                    // a free UDP port
	DesignAddr string `json:"designAddress,omitempty"` // the address the design gives the BMC
	Username   string `json:"-"`
	password   string
	// The machine's Redfish service, when its BMC speaks Redfish.
	RedfishPort        int    `json:"redfish_port,omitempty"`
	RedfishURL         string `json:"redfish_url,omitempty"`
	RedfishFingerprint string `json:"redfish_fingerprint,omitempty"`
}

// Info is what `orchestrator lab` prints.
type Info struct {
	MAASURL  string    `json:"maas_url"`
	APIKey   string    `json:"api_key"`
	BMCs     []BMCInfo `json:"bmcs"`
	StatsURL string    `json:"stats_url"`
	// RedfishCAFile is the PEM file of the CA that signs the machines'
	// Redfish services' certificates ("" when none runs).
	RedfishCAFile string `json:"redfish_ca_file,omitempty"`
	// Sites are the MAAS regions of a design with several Sites (the
	// first is MAASURL's); the same API key opens each.
	Sites []SiteInfo `json:"sites,omitempty"`
	// GNMIAddress is where the gNMI target of Config.GNMI listens ("":
	// none), GNMIUsername its user.
	GNMIAddress  string `json:"gnmi_address,omitempty"`
	GNMIUsername string `json:"gnmi_username,omitempty"`
}

// Lab is a running virtual lab.
type Lab struct {
	cfg  Config
	MAAS *maas.Server
	srv  *http.Server
	ln   net.Listener
	log  zerolog.Logger

	mu       sync.Mutex
	machines []*Machine
	byMAC    map[string]*Machine
	byPower  map[string]*Machine // BMC addresses as MAAS may name them
	byName   map[string]*Machine
	bmcs     []*bmc.BMC
	redfish  []*simrf.Service // the Redfish services of machines whose BMC speaks it (redfish.go)
	ca       *simrf.CA
	caFile   string
	pending  map[*Machine]bool // enlisting

	agentClient *http.Client // the node agents'

	routes sync.Map // path → http.Handler served besides MAAS (Handle)

	regions []Region // the MAAS regions, one per Site (regions.go)

	gnmi *simgnmi.Target // Config.GNMI's (gnmi.go)
}

// Start builds and starts the lab.
func Start(ctx context.Context, cfg Config) (*Lab, error) {
	if cfg.TimeScale <= 0 {
		cfg.TimeScale = 1
	}
	if cfg.MAASListen == "" {
		cfg.MAASListen = "127.0.0.1:0"
	}
	if cfg.Secrets == nil {
		cfg.Secrets = ResolveSecret
	}
	if cfg.BootDelay == 0 {
		cfg.BootDelay = DefaultBootDelay
	}
	key := cfg.APIKey
	if key == "" {
		key = fmt.Sprintf("lab%06d:tok%06d:sec%010d", cfg.Seed%1000000, (cfg.Seed/7)%1000000, cfg.Seed*7919%10000000000)
	}
	creds, err := maas.ParseAPIKey(key)
	if err != nil {
		return nil, err
	}
	l := &Lab{cfg: cfg, log: cfg.Log, byMAC: map[string]*Machine{}, byPower: map[string]*Machine{},
		byName: map[string]*Machine{}, pending: map[*Machine]bool{}, agentClient: newAgentClient()}
	l.startRegions(creds) // regions.go
	specs, err := machineSpecs(cfg)
	if err != nil {
		return nil, err
	}
	if err := checkFaultNames(cfg.Faults, specs); err != nil {
		return nil, err
	}
	for _, sp := range specs {
		if err := l.addMachine(ctx, sp); err != nil {
			l.Close()
			return nil, err
		}
	}
	l.ln, err = net.Listen("tcp", cfg.MAASListen)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("lab MAAS listen on %s: %w", cfg.MAASListen, err)
	}
	l.srv = &http.Server{Handler: http.HandlerFunc(l.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := l.srv.Serve(l.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			l.log.Error().Err(err).Msg("lab MAAS server stopped")
		}
	}()
	if cfg.GNMI != nil {
		if l.gnmi, err = l.StartGNMI(*cfg.GNMI); err != nil {
			l.Close()
			return nil, err
		}
	}
	return l, nil
}

// Handle serves h at path (exactly) on the lab's MAAS listener besides
// the simulated MAAS: the lab's own endpoints under /sim/ (the audit of
// `orchestrator lab`). A request there is no MAAS request: not counted,
// never faulted.
func (l *Lab) Handle(path string, h http.Handler) {
	l.routes.Store(path, h)
}

func (l *Lab) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if h, ok := l.routes.Load(r.URL.Path); ok {
		h.(http.Handler).ServeHTTP(w, r)
		return
	}
	if l.serveRegion(w, r) {
		return
	}
	l.MAAS.ServeHTTP(w, r)
}

func domainOf(d *design.Design) string {
	if d != nil && d.Site != nil && d.Site.Spec.Domain != "" {
		return d.Site.Spec.Domain
	}
	return "maas"
}

// addMachine creates the machine and starts its BMC.
func (l *Lab) addMachine(ctx context.Context, sp machineSpec) error {
	l.cfg.Faults.Machine(sp.name).ApplyHardware(&sp.hw) // the machine differs from its design as the faults say
	m := &Machine{Name: sp.name, Hardware: sp.hw, lab: l, Serial: serial.New(), site: sp.site}
	m.Serial.OnInput(m.typed)
	b, err := l.startIPMI(ctx, m, bmc.Options{Addr: "127.0.0.1:0", Username: sp.user, Password: sp.password, Serial: m.Serial,
		Unreachable: func() bool { return l.bmcUnreachable(m) }, Firmware: sp.hw.BMC(), GUID: bmcGUID(sp.name),
		FRU: bmc.FRU{Manufacturer: sp.hw.Vendor, Product: sp.hw.Product, Serial: sp.hw.Serial, PartNumber: sp.hw.Product}})
	if err != nil {
		return fmt.Errorf("start the BMC of %s: %w", sp.name, err)
	}
	port := b.Addr().Port
	m.BMC = BMCInfo{Node: sp.name, Address: "127.0.0.1", Port: port, DesignAddr: sp.designBMC, Username: sp.user, password: sp.password}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bmcs = append(l.bmcs, b)
	l.machines = append(l.machines, m)
	l.byName[m.Name] = m
	for _, nic := range sp.hw.NICs {
		l.byMAC[strings.ToLower(nic.MAC)] = m
	}
	for _, a := range []string{"127.0.0.1:" + strconv.Itoa(port), sp.designBMC, net.JoinHostPort(sp.designBMC, "623")} {
		if a != "" {
			l.byPower[a] = m
		}
	}
	if sp.redfish {
		return l.startRedfish(ctx, m, sp)
	}
	return nil
}

func (l *Lab) bmcUnreachable(m *Machine) bool {
	if l.cfg.Faults == nil {
		return false
	}
	return l.cfg.Faults.Machines[m.Name].BMCUnreachable
}

// Info describes the running lab.
func (l *Lab) Info() Info {
	l.mu.Lock()
	defer l.mu.Unlock()
	base := "http://" + l.ln.Addr().String()
	info := Info{MAASURL: base + "/MAAS", APIKey: l.cfg.APIKey, StatsURL: base + "/sim/stats", RedfishCAFile: l.caFile}
	if len(l.regions) > 1 {
		for _, r := range l.regions {
			info.Sites = append(info.Sites, SiteInfo{Site: r.Site, MAASURL: base + r.Prefix + "/MAAS"})
		}
	}
	if info.APIKey == "" {
		info.APIKey = l.MAAS.APIKey().String()
	}
	if l.gnmi != nil {
		info.GNMIAddress, info.GNMIUsername = l.gnmi.Addr(), l.cfg.GNMI.Username
	}
	for _, m := range l.machines {
		info.BMCs = append(info.BMCs, m.BMC)
	}
	return info
}

// Machines returns the simulated machines.
func (l *Lab) Machines() []*Machine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*Machine(nil), l.machines...)
}

// Machine returns the machine standing for a node, or nil.
func (l *Lab) Machine(name string) *Machine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byName[name]
}

// Close stops the MAAS server, the BMCs, the node agents and every timer.
func (l *Lab) Close() {
	if l.gnmi != nil {
		l.gnmi.Close()
	}
	l.stopAgents()
	l.agentClient.CloseIdleConnections()
	if l.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = l.srv.Shutdown(ctx)
		cancel()
	}
	for _, r := range l.regions {
		r.MAAS.Close()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.bmcs {
		_ = b.Close()
	}
	l.bmcs = nil
	for _, s := range l.redfish {
		s.Close()
	}
	l.redfish = nil
	if l.caFile != "" {
		_ = os.RemoveAll(filepath.Dir(l.caFile))
	}
}

// inventory lets MAAS discover a machine's hardware by MAC.
func (l *Lab) inventory(mac string) *maas.Hardware {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.byMAC[strings.ToLower(mac)]; m != nil {
		hw := m.Hardware
		return &hw
	}
	return nil
}

// pxeBoot: a machine booting from the network that MAAS does not know
// enlists itself (New, with its MACs and BMC) after the enlistment time.
func (l *Lab) pxeBoot(m *Machine) {
	l.mu.Lock()
	if l.pending[m] {
		l.mu.Unlock()
		return
	}
	l.pending[m] = true
	l.mu.Unlock()
	start := time.Now()
	l.timeAfter(maas.DefaultDurations.Enlist, func() {
		l.mu.Lock()
		delete(l.pending, m)
		l.mu.Unlock()
		if !m.IsPoweredOn() {
			return
		}
		hw := m.Hardware
		id, enlisted := l.regionOf(m).EnlistNew(&hw, "ipmi", l.powerParams(m))
		if !enlisted {
			return // MAAS knew it already: the machine waited for nothing
		}
		m.waited(maas.Phase{Name: PhaseEnlist, Start: start, End: time.Now(), Nominal: l.scaled(maas.DefaultDurations.Enlist)})
		l.log.Debug().Str("machine", m.Name).Str("system_id", id).Msg("lab machine PXE-booted and enlisted")
	})
}

func (l *Lab) powerParams(m *Machine) maas.PowerParams {
	return maas.PowerParams{"power_address": "127.0.0.1:" + strconv.Itoa(m.BMC.Port), "power_user": m.BMC.Username,
		"power_pass": m.BMC.password, "power_driver": "LAN_2_0", "cipher_suite_id": "3", "privilege_level": "ADMIN",
		"power_boot_type": "efi", "mac_address": m.Hardware.NICs[0].MAC}
}

// machineFor finds the machine MAAS's power parameters name.
func (l *Lab) machineFor(p maas.PowerParams) (*Machine, error) {
	addr := p["power_address"]
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.byPower[addr]
	if m == nil {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			m = l.byPower[host]
		}
	}
	if m == nil {
		return nil, fmt.Errorf("no BMC answers at %q (connection timed out)", addr)
	}
	if p["power_user"] != m.BMC.Username || p["power_pass"] != m.BMC.password {
		return nil, fmt.Errorf("BMC %s rejected the credentials for user %s", addr, p["power_user"])
	}
	return m, nil
}

// powerDriver is MAAS's power driver in the lab: it acts on the machines.
type powerDriver struct{ l *Lab }

func (d powerDriver) Power(_ context.Context, p maas.PowerParams, action string) (string, error) {
	m, err := d.l.machineFor(p)
	if err != nil {
		return "error", err
	}
	if d.l.bmcUnreachable(m) {
		return "error", fmt.Errorf("BMC %s unreachable (injected fault)", p["power_address"])
	}
	switch action {
	case "on":
		m.PowerOn()
	case "off":
		m.PowerOff()
	case "cycle":
		m.PowerCycle()
	}
	if m.IsPoweredOn() {
		return "on", nil
	}
	return "off", nil
}

func (d powerDriver) SetBootDevice(_ context.Context, p maas.PowerParams, dev string) error {
	m, err := d.l.machineFor(p)
	if err != nil {
		return err
	}
	m.SetBootDevice(dev, false, true)
	return nil
}

// hooks follow MAAS's deployments into the machines.
type hooks struct{ l *Lab }

func (h hooks) Deployed(id string, macs []string, userData []byte) {
	if m := h.l.machineByMAC(macs); m != nil {
		m.deployed(id, "ubuntu", userData)
	}
}

// DeployedWith is maas.ImageHooks: the region says which image it
// installed (image.go).
func (h hooks) DeployedWith(id string, macs []string, userData []byte, img maas.DeployedImage) {
	if m := h.l.machineByMAC(macs); m != nil {
		m.deployedImage(id, img, userData)
	}
}

func (h hooks) Released(_ string, macs []string) {
	if m := h.l.machineByMAC(macs); m != nil {
		m.released()
	}
}

func (l *Lab) machineByMAC(macs []string) *Machine {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, mac := range macs {
		if m := l.byMAC[strings.ToLower(mac)]; m != nil {
			return m
		}
	}
	return nil
}

// checkFaultNames refuses faults of a machine the lab does not have: a
// misspelt node name would otherwise fault nothing, silently.
func checkFaultNames(f *maas.Faults, specs []machineSpec) error {
	if f == nil || len(f.Machines) == 0 {
		return nil
	}
	have := make(map[string]bool, len(specs))
	for _, sp := range specs {
		have[sp.name] = true
	}
	var missing []string
	for name := range f.Machines {
		if !have[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	if len(missing) > 5 {
		missing = append(missing[:5], "...")
	}
	return fmt.Errorf("faults name machines the lab does not have: %s (machines are named after the design's nodes; generic ones lab-0001, ...)",
		strings.Join(missing, ", "))
}

// bmcGUID is a machine's BMC GUID: derived from its name (a name-based,
// version 5 UUID), so each BMC has its own and keeps it across runs. IPMI
// sends a GUID's bytes in the reverse of RFC 4122's order, so the version
// is in byte 9 and the variant in byte 7.
func bmcGUID(name string) [16]byte {
	sum := sha256.Sum256([]byte("slipway-lab-bmc/" + name))
	var g [16]byte
	copy(g[:], sum[:16])
	g[9] = g[9]&0x0f | 0x50
	g[7] = g[7]&0x3f | 0x80
	return g
}
