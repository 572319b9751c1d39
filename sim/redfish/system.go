package redfish

import (
	"net/http"
	"slices"
	"time"
)

// Boot override targets the service allows (the mockup's, and UefiHttp,
// which current BMCs list) and the machine's boot device words for them.
var targets = map[string]string{
	"None": "none", "Pxe": "pxe", "Cd": "cdrom", "Hdd": "disk", "BiosSetup": "bios", "UefiHttp": "http",
	"Usb": "", "Utilities": "", "Diags": "", "SDCard": "", "UefiTarget": "",
}

// resetTypes are the mockup's allowable ResetType values.
var resetTypes = []string{"On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "Nmi", "ForceOn", "PushPowerButton"}

// gracefulDelay is how long the "OS" takes to shut down.
const gracefulDelay = 200 * time.Millisecond

func (s *Service) getSystem(w http.ResponseWriter, _ *http.Request) {
	doc := mockDoc(systemPath)
	power := "Off"
	if s.m.IsPoweredOn() {
		power = "On"
	}
	doc["PowerState"] = power
	boot := doc["Boot"].(map[string]any)
	dev, persistent, efi := s.m.BootDevice()
	boot["BootSourceOverrideTarget"], boot["BootSourceOverrideEnabled"], boot["BootSourceOverrideMode"] = targetOf(dev), enabledOf(dev, persistent), modeOf(efi)
	boot["BootSourceOverrideTarget@Redfish.AllowableValues"] = allowedTargets()
	delete(boot, "UefiTargetBootSourceOverride")
	setIf(doc, "UUID", s.o.UUID)
	setIf(doc, "SerialNumber", s.o.Serial)
	setIf(doc, "Model", s.o.Model)
	setIf(doc, "Manufacturer", s.o.Manufacturer)
	setIf(doc, "BiosVersion", s.version(kindBIOS, s.o.BIOSVersion))
	doc["Storage"] = map[string]any{"@odata.id": storagePath}
	writeJSON(w, http.StatusOK, doc)
}

// patchSystem sets the boot override (the only writable part here).
func (s *Service) patchSystem(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Boot *struct{ BootSourceOverrideTarget, BootSourceOverrideEnabled, BootSourceOverrideMode string }
	}
	if !readJSON(w, r, &body) {
		return
	}
	if body.Boot == nil {
		writeError(w, http.StatusBadRequest, "Base.1.8.PropertyNotWritable", "Only Boot can be changed on this system")
		return
	}
	b := body.Boot
	if b.BootSourceOverrideMode != "" && b.BootSourceOverrideMode != "UEFI" && b.BootSourceOverrideMode != "Legacy" {
		writeError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList", "BootSourceOverrideMode "+bounded(b.BootSourceOverrideMode)+" is not UEFI or Legacy")
		return
	}
	dev, persistent, efi := s.m.BootDevice()
	if b.BootSourceOverrideTarget != "" {
		d, ok := targets[b.BootSourceOverrideTarget]
		if !ok || d == "" {
			writeError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList", "BootSourceOverrideTarget "+b.BootSourceOverrideTarget+" is not one of the allowable values")
			return
		}
		dev = d
	}
	switch b.BootSourceOverrideEnabled {
	case "":
	case "Once", "Continuous", "Disabled":
		persistent = b.BootSourceOverrideEnabled == "Continuous"
		if b.BootSourceOverrideEnabled == "Disabled" {
			dev = "none"
		}
	default:
		writeError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList", "BootSourceOverrideEnabled "+b.BootSourceOverrideEnabled+" is not Once, Continuous or Disabled")
		return
	}
	if b.BootSourceOverrideMode != "" {
		efi = b.BootSourceOverrideMode == "UEFI"
	}
	s.m.SetBootDevice(dev, persistent, efi)
	s.count(func(st *Stats) { st.BootPatches++ })
	w.WriteHeader(http.StatusNoContent)
}

// changesPower: the reset of that type changes the machine's power (on
// says whether it is on); a power on of a machine that is on, a power off
// of one that is off, and an NMI do not.
func changesPower(resetType string, on bool) bool {
	switch resetType {
	case "Nmi":
		return false
	case "On", "ForceOn":
		return !on
	case "ForceOff", "GracefulShutdown":
		return on
	}
	return true
}

// reset runs ComputerSystem.Reset. A reset that starts the machine
// applies the staged BIOS settings; one that changes the power while a
// firmware update runs is counted (UpdateStats.ResetsDuringUpdate).
func (s *Service) reset(w http.ResponseWriter, r *http.Request) {
	var body struct{ ResetType string }
	if !readJSON(w, r, &body) {
		return
	}
	if !slices.Contains(resetTypes, body.ResetType) {
		writeError(w, http.StatusBadRequest, "Base.1.8.ActionParameterValueNotInList", "ResetType "+body.ResetType+" is not one of the allowable values")
		return
	}
	s.count(func(st *Stats) { st.Resets[body.ResetType]++ })
	on := s.m.IsPoweredOn()
	if changesPower(body.ResetType, on) {
		s.mu.Lock()
		s.noteReset()
		s.mu.Unlock()
	}
	switch body.ResetType {
	case "On", "ForceOn":
		if !on {
			s.applyPending()
			s.m.PowerOn()
		}
	case "ForceOff":
		s.m.PowerOff()
	case "PushPowerButton":
		s.push(on)
	case "GracefulShutdown":
		s.graceful(on, false)
	case "GracefulRestart":
		s.graceful(on, true)
	case "ForceRestart":
		s.applyPending()
		if on {
			s.m.HardReset()
		} else {
			s.m.PowerOn()
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) push(on bool) {
	if on {
		s.m.PowerOff()
		return
	}
	s.applyPending()
	s.m.PowerOn()
}

// graceful shuts the "OS" down after gracefulDelay (then starts it again
// for a restart), unless it ignores graceful requests.
func (s *Service) graceful(on, restart bool) {
	if !on || s.o.IgnoreGraceful {
		return
	}
	go func() {
		time.Sleep(gracefulDelay)
		s.m.PowerOff()
		if restart {
			s.applyPending()
			s.m.PowerOn()
		}
	}()
}

func targetOf(dev string) string {
	for t, d := range targets {
		if d == dev && d != "" {
			return t
		}
	}
	return "None"
}

func enabledOf(dev string, persistent bool) string {
	switch {
	case dev == "" || dev == "none":
		return "Disabled"
	case persistent:
		return "Continuous"
	}
	return "Once"
}

func modeOf(efi bool) string {
	if efi {
		return "UEFI"
	}
	return "Legacy"
}

func allowedTargets() []string {
	out := make([]string, 0, len(targets))
	for t := range targets {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

func setIf(doc map[string]any, k, v string) {
	if v != "" {
		doc[k] = v
	}
}
