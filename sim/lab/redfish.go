package lab

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
)

// redfishOf reports whether a design node's BMC speaks Redfish: its first
// OOB method's type or its fallback's.
func redfishOf(d *design.Design, n *design.Node) bool {
	if n.OOB(d.SiteOOBDriver()).Type == "redfish" {
		return true
	}
	fb, ok := n.OOBFallback()
	return ok && fb.Type == "redfish"
}

// FirmwareUpdateTime and BMCResetTime are, at time scale 1, how long a lab
// BMC runs a firmware update once its image is in and how long it stays
// silent resetting after its own update. Real BMCs take minutes for both
// (a BIOS or BMC image is written to flash and verified; iDRAC and iLO
// answer again two to three minutes after their reset); the lab scales
// them like MAAS's phases.
const (
	FirmwareUpdateTime = 4 * time.Minute
	BMCResetTime       = 2 * time.Minute
)

// startRedfish starts the machine's Redfish service beside its IPMI BMC
// (one BMC, two protocols, as on real servers), with the same
// credentials and faults, signed by the lab's CA.
func (l *Lab) startRedfish(ctx context.Context, m *Machine, sp machineSpec) error {
	ca, err := l.redfishCA()
	if err != nil {
		return err
	}
	o := simrf.Options{Username: sp.user, Password: sp.password, CA: ca,
		Unreachable: func() bool { return l.bmcUnreachable(m) }, Serial: "LAB-" + sp.name,
		Manufacturer: sp.hw.Vendor, Model: sp.hw.Product, BMCFirmware: sp.hw.BMC(),
		UUID:     guidString(bmcGUID(sp.name)),   // the machine's IPMI GUID, as ipmitool mc guid shows it
		Firmware: sp.firmware, Drives: sp.drives, // baseline.go
		UpdateDuration: l.scaled(FirmwareUpdateTime), BMCResetDuration: l.scaled(BMCResetTime)}
	var s *simrf.Service
	for try := 0; s == nil || (l.portTaken(s.Addr().Port) && try < maxPortTries); try++ { // ports.go
		if s != nil {
			s.Close()
		}
		o.Addr = redfishListen(l, try)
		if s, err = simrf.Start(ctx, m, o); err != nil {
			return fmt.Errorf("start the Redfish service of %s: %w", sp.name, err)
		}
	}
	m.BMC.RedfishPort, m.BMC.RedfishURL, m.BMC.RedfishFingerprint = s.Addr().Port, s.URL(), s.Fingerprint()
	m.mu.Lock()
	m.rf = s // its virtual CD (vmedia.go)
	m.mu.Unlock()
	l.Handle(BootISOPath, http.HandlerFunc(serveBootISO))
	l.redfish = append(l.redfish, s)
	l.byPower["127.0.0.1:"+strconv.Itoa(s.Addr().Port)] = m
	if sp.designBMC != "" {
		l.byPower[net.JoinHostPort(sp.designBMC, "443")] = m
	}
	return nil
}

// guidString writes an IPMI GUID (bytes in the reverse of RFC 4122's
// order, as Get System GUID sends them) as the RFC 4122 string: what
// ipmitool's "mc guid" shows and what a real BMC reports as its
// ComputerSystem's UUID.
func guidString(g [16]byte) string {
	var r [16]byte
	for i := range g {
		r[i] = g[15-i]
	}
	return fmt.Sprintf("%x-%x-%x-%x-%x", r[0:4], r[4:6], r[6:8], r[8:10], r[10:16])
}

// redfishCA is the lab's CA for its Redfish services, made at first use
// and written to a file (RedfishCAFile) for clients outside the lab.
// Called with l.mu held.
func (l *Lab) redfishCA() (*simrf.CA, error) {
	if l.ca != nil {
		return l.ca, nil
	}
	ca, err := simrf.NewCA()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "slipway-lab-ca-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "bmc-ca.pem")
	if err := os.WriteFile(path, ca.PEM(), 0o600); err != nil {
		return nil, err
	}
	l.ca, l.caFile = ca, path
	return ca, nil
}

// RedfishCAFile is the PEM file of the CA of the lab's Redfish services
// ("" when the lab runs none).
func (l *Lab) RedfishCAFile() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.caFile
}

// Endpoint maps a node's BMC, as the design names it, to where the lab
// serves it: its IPMI BMC's loopback port, or for redfish its Redfish
// service's port, trusted through the lab's CA (an engine's BMCEndpoint).
func (l *Lab) Endpoint(oobType string, b drivers.BMC) drivers.BMC {
	m := l.Machine(b.Node)
	if m == nil {
		return b
	}
	b.Address, b.Port = m.BMC.Address, m.BMC.Port
	if oobType == "redfish" && m.BMC.RedfishPort != 0 {
		b.Port, b.CAFile, b.Fingerprint = m.BMC.RedfishPort, l.RedfishCAFile(), ""
	}
	return b
}
