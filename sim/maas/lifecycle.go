package maas

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// schedule runs fn under the lock after d (scaled), unless the machine
// moved on to another phase first; a phase that ran its course is told
// to the hooks (phaseWaited) as one the machine waited.
func (s *Server) schedule(m *machine, name string, d time.Duration, fn func()) {
	s.scheduleParts(m, name, d, partsAll, fn)
}

// scheduleParts is schedule for a phase whose end may change only the
// parts p of the machine's JSON (render_parts.go).
func (s *Server) scheduleParts(m *machine, name string, d time.Duration, p part, fn func()) {
	if m.timer != nil {
		m.timer.Stop()
	}
	m.phase++
	gen := m.phase
	start := time.Now()
	m.timer = time.AfterFunc(s.scale(d), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed || m.phase != gen || s.machines[m.SystemID] != m {
			return
		}
		m.timer = nil
		s.phaseWaited(m, Phase{Name: name, Start: start, End: time.Now(), Nominal: s.scale(d)})
		fn()
		s.touchParts(m, p) // see listing.go
	})
}

func (s *Server) cancelPhase(m *machine) {
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	m.phase++
}

// hardware finds the simulated machine behind m, by MAC.
func (s *Server) hardware(m *machine) *Hardware {
	if m.hw != nil || s.opts.Inventory == nil {
		return m.hw
	}
	for _, i := range m.Interfaces {
		if hw := s.opts.Inventory(i.MAC); hw != nil {
			m.hw = hw
			s.place(m, hw)
			return hw
		}
	}
	return nil
}

// startCommission powers the machine on to PXE-boot the commissioning
// environment; after the commissioning time it is Ready with its hardware
// discovered (or Failed commissioning when a fault says so).
func (s *Server) startCommission(m *machine, skipBMC bool) {
	if s.move(m, StatusCommissioning) {
		s.lifecycleOf(m).CommissionStarts++
	}
	m.StatusMessage = "Commissioning"
	s.addEvent(m, "Commissioning", "INFO", "commissioning started")
	s.bootPXE(m)
	mf := s.faults.machine(m.Hostname)
	s.schedule(m, PhaseCommission, s.dur.Commission, func() {
		if m.failCommLeft == 0 && mf.FailCommissioning > 0 && !m.commissioned {
			m.failCommLeft = mf.FailCommissioning + 1 // +1: this attempt counts
		}
		if m.failCommLeft > 1 {
			m.failCommLeft--
			s.move(m, StatusFailedCommissioning)
			m.StatusMessage = "Failed commissioning: a commissioning script failed (injected fault)"
			s.addEvent(m, "Failed commissioning", "ERROR", m.StatusMessage)
			_ = s.power(m, "off")
			return
		}
		m.failCommLeft = 0
		hw := s.hardware(m)
		if hw != nil {
			m.CPUCount, m.MemoryMiB, m.Arch = hw.CPUs, hw.MemoryMiB, orDefault(hw.Arch, m.Arch)
		} else if m.CPUCount == 0 {
			m.CPUCount, m.MemoryMiB = 4, 8192
		}
		s.discoverInterfaces(m)
		s.discoverDisks(m)
		s.applyDefaultStorageLayout(m) // as MAAS does when commissioning ends
		if !skipBMC && m.PowerType == "" {
			m.PowerType = "manual"
		}
		m.commissioned = true
		s.move(m, StatusReady)
		m.StatusMessage = ""
		s.addEvent(m, "Ready", "INFO", "commissioning complete")
		_ = s.power(m, "off")
	})
}

// bootPXE sets PXE boot and powers the machine on (or cycles it).
func (s *Server) bootPXE(m *machine) {
	if s.opts.Power != nil && m.PowerType != "" && m.PowerType != "manual" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = s.opts.Power.SetBootDevice(ctx, m.PowerParams, "pxe")
		cancel()
	}
	_ = s.power(m, "cycle")
}

// discoverInterfaces replaces the interfaces with what the hardware has,
// named as commissioning finds them, each on the fabric's untagged VLAN.
func (s *Server) discoverInterfaces(m *machine) {
	hw := s.hardware(m)
	if hw == nil {
		return
	}
	old := map[string]*iface{}
	for _, i := range m.Interfaces {
		if i.Type == "physical" {
			old[strings.ToLower(i.MAC)] = i
		}
	}
	bootMAC := ""
	for _, i := range m.Interfaces {
		if i.ID == m.BootIfaceID {
			bootMAC = strings.ToLower(i.MAC)
		}
	}
	s.unindexMACs(m)
	defer s.indexMACs(m)
	s.touch(m) // its MACs change (machineMACs)
	m.Interfaces = nil
	for n, nic := range hw.NICs {
		name := nic.Name
		if name == "" {
			name = fmt.Sprintf("eth%d", n)
		}
		id := s.nextID()
		if o := old[strings.ToLower(nic.MAC)]; o != nil {
			id = o.ID
		}
		i := &iface{ID: id, Name: name, Type: "physical", MAC: strings.ToLower(nic.MAC), VLANID: s.untaggedVLAN(nic.Network),
			Enabled: true, MTU: 1500, PCI: nic.PCI, Vendor: nic.Vendor, Product: nic.Product}
		m.Interfaces = append(m.Interfaces, i)
		if strings.ToLower(nic.MAC) == bootMAC || (bootMAC == "" && n == 0) {
			m.BootIfaceID = i.ID
		}
	}
}

// untaggedVLAN returns the untagged VLAN of the fabric named after a lab
// network, creating the fabric when it is new (MAAS creates fabrics for
// the networks commissioning finds).
func (s *Server) untaggedVLAN(network string) int {
	if network == "" {
		return 5001
	}
	for _, f := range s.fabrics {
		if f.Name == network {
			for _, v := range s.vlans {
				if v.FabricID == f.ID && v.VID == 0 {
					return v.ID
				}
			}
		}
	}
	f := &fabric{ID: s.nextID(), Name: network}
	s.fabrics[f.ID] = f
	v := &vlan{ID: s.nextID(), FabricID: f.ID, VID: 0, Name: "untagged", MTU: 1500}
	s.vlans[v.ID] = v
	return v.ID
}

// discoverDisks replaces the block devices with the hardware's disks.
func (s *Server) discoverDisks(m *machine) {
	hw := s.hardware(m)
	if hw == nil {
		if len(m.BlockDevices) == 0 {
			m.BlockDevices = []*blockDevice{{ID: s.nextID(), Name: "sda", Type: "physical", Size: 500e9, BlockSize: 512,
				Model: "QEMU HARDDISK", Serial: "QM0000" + m.SystemID, IDPath: "/dev/disk/by-id/wwn-0x5000c500" + m.SystemID}}
		}
		m.VolumeGroups = nil
		return
	}
	m.BlockDevices, m.VolumeGroups = nil, nil
	for _, d := range hw.Disks {
		m.BlockDevices = append(m.BlockDevices, &blockDevice{ID: s.nextID(), Name: d.Name, Type: "physical", Model: d.Model,
			Serial: d.Serial, Size: d.Size, BlockSize: 512, IDPath: "/dev/disk/by-id/" + strings.ReplaceAll(d.Model, " ", "_") + "_" + d.Serial,
			PCI: d.Addr, Bus: d.Bus, Tags: diskTags(&d), Firmware: orDefault(d.Firmware, "1.0")})
	}
}

// startDeploy "installs" the OS: Deploying, then Deployed after the deploy
// time (Failed deployment on a fault; a hang lasts until MAAS's node
// timeout).
func (s *Server) startDeploy(m *machine) {
	if s.move(m, StatusDeploying) {
		s.deployStarted(m)
	}
	m.StatusMessage = "Deploying"
	s.addEvent(m, "Deploying", "INFO", "deployment started")
	s.bootPXE(m)
	mf := s.faults.machine(m.Hostname)
	if mf.HangDeploy {
		s.schedule(m, PhaseDeploy, s.dur.NodeTimeout, func() {
			if s.move(m, StatusFailedDeployment) {
				s.deployFailed(m)
			}
			m.StatusMessage = "Node operation 'Deploying' timed out after 30 minutes."
			s.addEvent(m, "Failed deployment", "ERROR", m.StatusMessage)
		})
		return
	}
	// Its end changes the status, the power state and the image: no
	// interface, no disk.
	s.scheduleParts(m, PhaseDeploy, s.dur.Deploy, partNone, func() {
		if m.failDeployLft == 0 && mf.FailDeploy > 0 {
			m.failDeployLft = mf.FailDeploy + 1
		}
		if m.failDeployLft > 1 {
			m.failDeployLft--
			if s.move(m, StatusFailedDeployment) {
				s.deployFailed(m)
			}
			m.StatusMessage = "Failed deployment: curtin installation failed (injected fault)"
			s.addEvent(m, "Failed deployment", "ERROR", m.StatusMessage)
			return
		}
		if mf.FailDeploy > 0 {
			m.failDeployLft = -1 // the script has played out: later deployments succeed
		}
		if msg := s.installImage(m); msg != "" { // bootres_deploy.go
			if s.move(m, StatusFailedDeployment) {
				s.deployFailed(m)
			}
			m.StatusMessage = msg
			s.addEvent(m, "Failed deployment", "ERROR", msg)
			return
		}
		s.move(m, StatusDeployed)
		m.StatusMessage = ""
		m.PowerState = "on"
		s.addEvent(m, "Deployed", "INFO", "deployed "+m.OSystem+"/"+m.DistroSeries)
		if s.opts.Hooks != nil {
			id, macs, ud := m.SystemID, m.macs(), append([]byte(nil), m.UserData...)
			if ih, ok := s.opts.Hooks.(ImageHooks); ok { // bootres_deploy.go
				go ih.DeployedWith(id, macs, ud, m.deployedImage())
			} else {
				go s.opts.Hooks.Deployed(id, macs, ud)
			}
		}
	})
}

// eraseMode is what a release does to the disks.
type eraseMode int

const (
	eraseNone   eraseMode = iota
	eraseFull             // erase: overwrite every disk with zeros
	eraseQuick            // quick_erase: 2 MiB at each end of every disk
	eraseSecure           // secure_erase: the disks' own secure erase
)

// eraseOf reads a release's erase parameters as MAAS 3.4 (the version
// the simulator reports) does (api/machines.py release,
// Node.release_or_erase, start_disk_erasing): erase, or MAAS's
// enable_disk_erasing_on_release setting, erases; secure_erase and
// quick_erase, when given, choose how (else the disk_erase_with_*
// settings). Secure erase wins where the disk has one (the lab's disks
// all do), else quick, else a full overwrite. (Later MAAS releases erase
// on quick_erase or secure_erase alone too.)
func (s *Server) eraseOf(f formValues) eraseMode {
	if !paramTrue(f.get("erase")) && !s.configTrue("enable_disk_erasing_on_release") {
		return eraseNone
	}
	quick, secure := s.configTrue("disk_erase_with_quick_erase"), s.configTrue("disk_erase_with_secure_erase")
	if f.has("quick_erase") {
		quick = paramTrue(f.get("quick_erase"))
	}
	if f.has("secure_erase") {
		secure = paramTrue(f.get("secure_erase"))
	}
	switch {
	case secure:
		return eraseSecure
	case quick:
		return eraseQuick
	}
	return eraseFull
}

// configTrue reads a boolean MAAS setting (set_config stores strings).
func (s *Server) configTrue(name string) bool {
	switch v := s.config[name].(type) {
	case bool:
		return v
	case string:
		return paramTrue(v)
	}
	return false
}

// eraseTime is how long an erasure of the mode takes.
func (s *Server) eraseTime(e eraseMode) time.Duration {
	switch e {
	case eraseQuick:
		return or(s.dur.EraseQuick, DefaultDurations.EraseQuick)
	case eraseSecure:
		return or(s.dur.EraseSecure, DefaultDurations.EraseSecure)
	}
	return s.dur.Erase
}

func (e eraseMode) String() string {
	return [...]string{"none", "full", "quick", "secure"}[e]
}

// startRelease releases: Releasing, then Ready and off. A release that
// erases goes to Disk erasing first, as MAAS does when wipe-disks is its
// only release script: the machine PXE-boots, wipes its disks (Failed
// disk erasing on a fault), then releases.
func (s *Server) startRelease(m *machine, erase eraseMode, comment string) {
	s.cancelPhase(m)
	s.lifecycleOf(m).Releases++ // accepted, even from a state MAAS ends without Releasing (Failed disk erasing)
	finish := func() {
		s.releaseAutoIPs(m)
		s.move(m, StatusReady)
		m.Owner, m.AgentName, m.Comment, m.StatusMessage = "", "", "", ""
		m.OwnerData = map[string]string{}
		m.OSystem, m.DistroSeries, m.HWEKernel, m.UserData, m.ImageSHA256 = "", "", "", nil, ""
		m.Locked = false
		_ = s.power(m, "off")
		s.addEvent(m, "Released", "INFO", "machine released")
		if s.opts.Hooks != nil {
			id, macs := m.SystemID, m.macs()
			go s.opts.Hooks.Released(id, macs)
		}
	}
	release := func() {
		s.move(m, StatusReleasing)
		m.StatusMessage = "Releasing"
		if comment != "" {
			m.StatusMessage = comment
		}
		s.addEvent(m, "Releasing", "INFO", "release started")
		s.schedule(m, PhaseRelease, s.dur.Release, finish)
	}
	if erase == eraseNone {
		release()
		return
	}
	s.move(m, StatusDiskErasing)
	m.StatusMessage = "Erasing disks"
	if comment != "" {
		m.StatusMessage = comment
	}
	s.addEvent(m, "Erasing disks", "INFO", "disk erasing started ("+erase.String()+")")
	s.bootPXE(m)
	mf := s.faults.machine(m.Hostname)
	s.schedule(m, PhaseErase, s.eraseTime(erase), func() {
		if m.failErases < mf.FailErase {
			m.failErases++
			s.move(m, StatusFailedDiskErasing)
			m.StatusMessage = "Failed to erase disks."
			s.addEvent(m, "Marking node failed", "ERROR", "Failed to erase disks: wipe-disks failed (injected fault)") // mark_failed
			return
		}
		s.addEvent(m, "Disks erased", "INFO", "disks erased ("+erase.String()+")")
		release()
	})
}

// Enlist is what a simulated machine does when it PXE-boots and MAAS does
// not know it: it registers itself as New with its MACs and BMC. It returns
// the new machine's system ID, or the known machine's.
func (s *Server) Enlist(hw *Hardware, powerType string, params PowerParams) string {
	id, _ := s.EnlistNew(hw, powerType, params)
	return id
}

// EnlistNew is Enlist, and tells whether the machine was new (false: MAAS
// knew one of its MACs already, and nothing was enlisted).
func (s *Server) EnlistNew(hw *Hardware, powerType string, params PowerParams) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, nic := range hw.NICs {
		if m := s.machineWithMAC(nic.MAC, 0); m != nil {
			return m.SystemID, false
		}
	}
	var macs []string
	for _, nic := range hw.NICs {
		macs = append(macs, nic.MAC)
	}
	m := s.newMachine("", hw.Arch, macs)
	s.sharedRev.Add(1) // its domain's record count changed (listing.go)
	m.hw = hw
	s.place(m, hw)
	m.PowerType, m.PowerParams = powerType, params
	m.PowerState = "on"
	s.addEvent(m, "Enlisting", "INFO", "machine enlisted itself")
	return m.SystemID, true
}

func (m *machine) macs() []string {
	var out []string
	for _, i := range m.Interfaces {
		if i.MAC != "" && i.Type == "physical" {
			out = append(out, i.MAC)
		}
	}
	return out
}

// place puts an enlisting machine in the zone, pool and tags its
// hardware names, creating those MAAS lacks (an administrator's work in
// a real MAAS: the lab's fixture).
func (s *Server) place(m *machine, hw *Hardware) {
	if hw.Zone != "" {
		if s.zones[hw.Zone] == nil {
			s.zones[hw.Zone] = &zone{ID: s.nextID(), Name: hw.Zone}
		}
		m.Zone = hw.Zone
	}
	if hw.Pool != "" {
		if s.pools[hw.Pool] == nil {
			s.pools[hw.Pool] = &pool{ID: s.nextID(), Name: hw.Pool}
		}
		m.Pool = hw.Pool
	}
	for _, t := range hw.Tags {
		if t == "" {
			continue
		}
		if s.tags[t] == nil {
			s.tags[t] = &tag{Name: t}
		}
		if !contains(m.Tags, t) {
			m.Tags = append(m.Tags, t)
		}
	}
}
