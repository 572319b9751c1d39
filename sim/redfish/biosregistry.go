package redfish

import (
	"fmt"
	"math"
	"net/http"
	"slices"

	"github.com/slipway-dev/slipway/internal/redfishmock"
)

// The BIOS attribute registry: what each attribute of the lab's BIOS is
// (type, the values an enumeration allows, bounds, read-only), served as
// BMCs do (Registries/<name>, a registry file whose Location names the
// registry itself) and checked at every PATCH of the settings.
const (
	registriesPath   = redfishmock.Root + "/Registries"
	biosRegistryName = "BiosAttributeRegistryP89.v1_0_0" // the mockup's Bios names it
)

// biosAttr is one attribute of the registry.
type biosAttr struct {
	name, typ      string   // typ: Enumeration, String, Integer, Boolean
	values         []string // Enumeration
	lower, upper   float64  // Integer
	maxLen         int      // String
	readOnlyByMake bool
}

// biosRegistry covers the mockup's attributes; values are those BIOSes
// of that kind offer.
var biosRegistry = []biosAttr{
	{name: "AdminPhone", typ: "String", maxLen: 32},
	{name: "BootMode", typ: "Enumeration", values: []string{"Uefi", "LegacyBios"}},
	{name: "EmbeddedSata", typ: "Enumeration", values: []string{"Raid", "Ahci", "Off"}},
	{name: "NicBoot1", typ: "Enumeration", values: []string{"NetworkBoot", "Disabled"}},
	{name: "NicBoot2", typ: "Enumeration", values: []string{"NetworkBoot", "Disabled"}},
	{name: "PowerProfile", typ: "Enumeration", values: []string{"MaxPerf", "MinPower", "OsControl"}},
	{name: "ProcCoreDisable", typ: "Integer", lower: 0, upper: 64},
	{name: "ProcHyperthreading", typ: "Enumeration", values: []string{"Enabled", "Disabled"}},
	{name: "ProcTurboMode", typ: "Enumeration", values: []string{"Enabled", "Disabled"}},
	{name: "UsbControl", typ: "Enumeration", values: []string{"UsbEnabled", "UsbDisabled"}},
}

func lookupBIOSAttr(name string) (biosAttr, bool) {
	i := slices.IndexFunc(biosRegistry, func(a biosAttr) bool { return a.name == name })
	if i < 0 {
		return biosAttr{}, false
	}
	return biosRegistry[i], true
}

// check is the registry's verdict on value v: "" when it may be staged,
// else the Base message ID and its text.
func (a biosAttr) check(v any) (id, msg string) {
	typeErr := func() (string, string) {
		return "Base.1.8.PropertyValueTypeError", fmt.Sprintf("The value %v of %s is not of its type %s", v, a.name, a.typ)
	}
	switch a.typ {
	case "Enumeration":
		s, ok := v.(string)
		if !ok {
			return typeErr()
		}
		if !slices.Contains(a.values, s) {
			return "Base.1.8.PropertyValueNotInList", fmt.Sprintf("The value %q of %s is not in its list: %v", s, a.name, a.values)
		}
	case "Integer":
		f, ok := v.(float64)
		if !ok {
			return typeErr()
		}
		if f != math.Trunc(f) || f < a.lower || f > a.upper {
			return "Base.1.8.PropertyValueOutOfRange", fmt.Sprintf("The value %v of %s is out of its range %v-%v", v, a.name, a.lower, a.upper)
		}
	case "Boolean":
		if _, ok := v.(bool); !ok {
			return typeErr()
		}
	default:
		s, ok := v.(string)
		if !ok {
			return typeErr()
		}
		if len(s) > a.maxLen {
			return "Base.1.8.PropertyValueFormatError", fmt.Sprintf("The value of %s is longer than %d", a.name, a.maxLen)
		}
	}
	return "", ""
}

// checkBIOS is the verdict on one attribute of a PATCH (under s.mu):
// unknown, read-only (by make or RefuseBIOS), or a value the registry
// does not allow.
func (s *Service) checkBIOS(k string, v any) (id, msg string) {
	a, ok := lookupBIOSAttr(k)
	if _, known := s.state.bios[k]; !ok || !known {
		return "Base.1.8.PropertyUnknown", "The attribute " + k + " is not in the attribute registry"
	}
	if a.readOnlyByMake || s.lab.faults.readOnlyBIOS[k] {
		return "Base.1.8.PropertyNotWritable", "The attribute " + k + " is read-only on this system and cannot be changed"
	}
	return a.check(v)
}

func (s *Service) routeBIOSRegistry(mux *http.ServeMux) {
	file := registriesPath + "/" + biosRegistryName
	mux.HandleFunc("GET "+registriesPath, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"@odata.id": registriesPath, "@odata.type": "#MessageRegistryFileCollection.MessageRegistryFileCollection",
			"Name": "Registry File Collection", "Members@odata.count": 1, "Members": []any{map[string]any{"@odata.id": file}}})
	})
	mux.HandleFunc("GET "+file, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"@odata.id": file, "@odata.type": "#MessageRegistryFile.v1_1_0.MessageRegistryFile",
			"Id": biosRegistryName, "Name": "BIOS Attribute Registry File", "Registry": biosRegistryName, "Languages": []string{"en"},
			"Location": []any{map[string]any{"Language": "en", "Uri": file + "/Registry"}}})
	})
	mux.HandleFunc("GET "+file+"/Registry", s.getBIOSRegistry)
}

// getBIOSRegistry answers the registry itself.
func (s *Service) getBIOSRegistry(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	refused := maps2set(s.lab.faults.readOnlyBIOS)
	s.mu.Unlock()
	attrs := make([]any, 0, len(biosRegistry))
	for _, a := range biosRegistry {
		m := map[string]any{"AttributeName": a.name, "Type": a.typ, "ReadOnly": a.readOnlyByMake || refused[a.name],
			"DisplayName": a.name, "ResetRequired": true}
		switch a.typ {
		case "Enumeration":
			vs := make([]any, 0, len(a.values))
			for _, v := range a.values {
				vs = append(vs, map[string]any{"ValueName": v, "ValueDisplayName": v})
			}
			m["Value"] = vs
		case "Integer":
			m["LowerBound"], m["UpperBound"] = a.lower, a.upper
		case "String":
			m["MaxLength"] = a.maxLen
		}
		attrs = append(attrs, m)
	}
	writeJSON(w, http.StatusOK, map[string]any{"@odata.type": "#AttributeRegistry.v1_3_0.AttributeRegistry",
		"Id": biosRegistryName, "Name": "BIOS Attribute Registry", "Language": "en", "RegistryVersion": "1.0.0",
		"OwningEntity": "Slipway lab", "RegistryEntries": map[string]any{"Attributes": attrs}})
}

func maps2set(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
