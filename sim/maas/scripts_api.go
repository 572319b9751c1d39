package maas

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Script types as MAAS numbers them (metadataserver/enum.py); hardware
// types are storage_nodedevices.go's.
const (
	scriptCommissioning = 0
	scriptTesting       = 2
	scriptRelease       = 3
)

var (
	scriptTypeNames = map[int]string{scriptCommissioning: "Commissioning script", scriptTesting: "Testing script",
		scriptRelease: "Release script", 4: "Deployment script"}
	parallelNames = []string{"Disabled", "Run along other instances of this script", "Run along any other script."}
)

// script is one of MAAS's scripts (the built-in ones only: the lab takes
// no uploads).
type script struct {
	ID           int
	Name         string
	Type         int
	HardwareType int
	Destructive  bool
	Timeout      string // h:mm:ss
	Created      string // RFC 2822, the one history entry's
}

// defaultScripts are MAAS 3.x's built-in commissioning, testing and
// release scripts (metadataserver/builtin_scripts).
func defaultScripts(nextID func() int) map[string]*script {
	out := map[string]*script{}
	add := func(typ, hw int, destructive bool, timeout string, names ...string) {
		for _, n := range names {
			out[n] = &script{ID: nextID(), Name: n, Type: typ, HardwareType: hw, Destructive: destructive, Timeout: timeout,
				Created: "Mon, 06 Nov 2023 10:00:00 -0000"}
		}
	}
	add(scriptCommissioning, hwNode, false, "0:10:00", "20-maas-01-install-lldpd", "20-maas-02-dhcp-unconfigured-ifaces",
		"20-maas-03-machine-resources", "30-maas-01-bmc-config", "40-maas-01-machine-config-hints", "50-maas-01-commissioning",
		"maas-support-info", "maas-lshw", "maas-list-modaliases", "maas-get-fruid-api-data", "maas-kernel-cmdline",
		"maas-serial-ports", "maas-capture-lldpd")
	add(scriptTesting, hwStorage, false, "0:10:00", "smartctl-validate", "smartctl-short", "smartctl-long", "smartctl-conveyance", "badblocks")
	add(scriptTesting, hwStorage, true, "0:00:00", "badblocks-destructive", "fio")
	add(scriptTesting, hwMemory, false, "0:00:00", "memtester", "stress-ng-memory-long", "stress-ng-memory-short")
	add(scriptTesting, hwCPU, false, "0:00:00", "stress-ng-cpu-long", "stress-ng-cpu-short", "7z")
	add(scriptTesting, hwNode, false, "0:05:00", "ntp")
	add(scriptTesting, hwNetwork, false, "0:05:00", "internet-connectivity", "gateway-connectivity", "rack-controller-connectivity")
	add(scriptRelease, hwStorage, true, "0:00:00", "wipe-disks")
	return out
}

// tags are the script's tags: its hardware type's label, and destructive.
func (sc *script) tags() []string {
	t := []string{strings.ToLower(hardwareTypeNames[sc.HardwareType])}
	if sc.Destructive {
		t = append(t, "destructive")
	}
	return t
}

func (s *Server) routesScripts() {
	s.handle("GET", "/scripts/", "", (*Server).scriptsRead)
	s.handle("GET", "/scripts/{name}", "", (*Server).scriptRead)
}

// scriptsRead lists the scripts: type, hardware_type and filters (names
// or tags, comma-separated) narrow the list, as MAAS's NodeScriptsHandler.
func (s *Server) scriptsRead(req *request) (any, *apiError) {
	typ, e := scriptTypeFilter(req.form)
	if e != nil {
		return nil, e
	}
	hw, e := hardwareTypeFilter(req.form)
	if e != nil {
		return nil, e
	}
	var filters []string
	if f := req.form.get("filters"); f != "" {
		filters = strings.Split(f, ",")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []any{}
	for _, name := range sortedKeys(s.scripts) {
		sc := s.scripts[name]
		if (typ >= 0 && sc.Type != typ) || (hw >= 0 && sc.HardwareType != hw) {
			continue
		}
		if len(filters) > 0 && !slices.ContainsFunc(filters, func(f string) bool { return f == sc.Name || slices.Contains(sc.tags(), f) }) {
			continue
		}
		out = append(out, s.renderScript(sc))
	}
	return out, nil
}

func (s *Server) scriptRead(req *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := req.params["name"]
	sc := s.scripts[name]
	if id, err := strconv.Atoi(name); err == nil { // a numeric name is an ID
		sc = nil
		for _, x := range s.scripts {
			if x.ID == id {
				sc = x
			}
		}
	}
	if sc == nil {
		return nil, errorf(http.StatusNotFound, "No Script matches the given query.")
	}
	return s.renderScript(sc), nil
}

func scriptTypeFilter(f formValues) (int, *apiError) {
	v := strings.ToLower(strings.TrimSpace(f.get("type")))
	switch v {
	case "":
		return -1, nil
	case "test", "testing":
		return scriptTesting, nil
	case "commission", "commissioning":
		return scriptCommissioning, nil
	case "release":
		return scriptRelease, nil
	case "deployment":
		return 4, nil
	}
	if n, err := strconv.Atoi(v); err == nil && scriptTypeNames[n] != "" {
		return n, nil
	}
	return 0, errorf(http.StatusBadRequest, "Unknown script type %s", f.get("type"))
}

func hardwareTypeFilter(f formValues) (int, *apiError) {
	v := strings.ToLower(strings.TrimSpace(f.get("hardware_type")))
	aliases := map[string]int{"node": hwNode, "machine": hwNode, "controller": hwNode, "other": hwNode, "generic": hwNode,
		"cpu": hwCPU, "processor": hwCPU, "memory": hwMemory, "ram": hwMemory, "storage": hwStorage, "disk": hwStorage,
		"ssd": hwStorage, "network": hwNetwork, "net": hwNetwork, "interface": hwNetwork, "gpu": hwGPU, "graphics": hwGPU}
	if v == "" {
		return -1, nil
	}
	if n, ok := aliases[v]; ok {
		return n, nil
	}
	if n, err := strconv.Atoi(v); err == nil && hardwareTypeNames[n] != "" {
		return n, nil
	}
	return 0, errorf(http.StatusBadRequest, "Unknown hardware type %s", f.get("hardware_type"))
}

// renderScript is a script as MAAS's NodeScriptHandler answers it.
func (s *Server) renderScript(sc *script) map[string]any {
	parallel := 0
	if sc.Type == scriptTesting && !sc.Destructive {
		parallel = 1
	}
	return map[string]any{
		"id": sc.ID, "name": sc.Name, "title": "", "description": "", "tags": sc.tags(),
		"type": sc.Type, "type_name": scriptTypeNames[sc.Type],
		"hardware_type": sc.HardwareType, "hardware_type_name": hardwareTypeNames[sc.HardwareType],
		"parallel": parallel, "parallel_name": parallelNames[parallel],
		"results": map[string]any{}, "parameters": map[string]any{}, "packages": map[string]any{},
		"timeout": sc.Timeout, "destructive": sc.Destructive, "for_hardware": []string{}, "may_reboot": false,
		"recommission": false, "default": true, "apply_configured_networking": false,
		"history":      []any{map[string]any{"id": sc.ID, "comment": "Created by maas-3.4.0", "created": sc.Created}},
		"resource_uri": APIPrefix + "/scripts/" + sc.Name,
	}
}

// scriptChoice reads a commission's list of scripts of a type (names or
// tags, comma-separated; "none" where allowed), as MAAS's CommissionForm:
// anything else is Django's invalid-choice error on the field.
func (s *Server) scriptChoice(f formValues, field string, typ int, allowNone bool) ([]string, *apiError) {
	var out []string
	for _, v := range f[field] {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				out = append(out, name)
			}
		}
	}
	for _, name := range out {
		if name == "none" && allowNone {
			continue
		}
		if !slices.ContainsFunc(sortedKeys(s.scripts), func(n string) bool {
			sc := s.scripts[n]
			return sc.Type == typ && (sc.Name == name || slices.Contains(sc.tags(), name))
		}) {
			return nil, badRequest(field, "Select a valid choice. %s is not one of the available choices.", name)
		}
	}
	return out, nil
}

// mergeFieldErrors joins the field errors of a form's fields (nil: none).
func mergeFieldErrors(errs ...*apiError) *apiError {
	var out *apiError
	for _, e := range errs {
		if e == nil {
			continue
		}
		if out == nil {
			out = &apiError{status: e.status, fields: map[string][]string{}}
		}
		for k, v := range e.fields {
			out.fields[k] = append(out.fields[k], v...)
		}
	}
	return out
}

// CommissionRequest is what a machine's last commission asked for.
type CommissionRequest struct {
	Commissioning, Testing []string // scripts, names or tags
	SkipBMCConfig          bool
}

// LastCommission is what the machine's last commission asked for.
func (s *Server) LastCommission(systemID string) CommissionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.machines[systemID]; m != nil {
		return CommissionRequest{Commissioning: slices.Clone(m.Commission.Commissioning), Testing: slices.Clone(m.Commission.Testing),
			SkipBMCConfig: m.Commission.SkipBMCConfig}
	}
	return CommissionRequest{}
}
