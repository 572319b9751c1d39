package api

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/powercreds"
	"github.com/slipway-dev/slipway/siteregistry"
	"github.com/slipway-dev/slipway/statestore"
)

// customizer completes the generator's schema of each Go type: the
// enums the engine lists, the schemas of types with their own encoding,
// and for structs additionalProperties false (a field the document does
// not name fails validation) and the required fields (those without
// omitempty or omitzero). In answers (out), a slice, map or pointer
// field without omitempty may be null, as encoding/json writes a nil one.
func customizer(out bool) openapi3gen.SchemaCustomizerFn {
	return func(_ string, t reflect.Type, tag reflect.StructTag, sc *openapi3.Schema) error {
		if marshals(t) {
			own, ok := ownEncodings[t]
			if !ok {
				return fmt.Errorf("%s has its own JSON encoding: give its schema in ownEncodings (api/openapi.go)", t)
			}
			*sc = *own()
			return nil
		}
		if e, ok := typeEnums[t]; ok {
			sc.Enum = nil
			for _, v := range e {
				sc.Enum = append(sc.Enum, v)
			}
		}
		name, omit := jsonField(tag)
		if out && name != "" && !omit && (t.Kind() == reflect.Map || t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8) {
			sc.Nullable = true
		}
		if t.Kind() == reflect.Struct && t.PkgPath() != "time" {
			sc.Type = &openapi3.Types{openapi3.TypeObject}
			sc.AdditionalProperties = openapi3.AdditionalProperties{Has: new(false)}
			sc.Required = required(t, sc.Properties)
			if !out {
				return applyBounds(t, sc)
			}
		}
		return nil
	}
}

// jsonField is a struct tag's JSON name ("" when it has none) and
// whether the field is left out when empty or zero.
func jsonField(tag reflect.StructTag) (name string, omit bool) {
	v, ok := tag.Lookup("json")
	if !ok {
		return "", false
	}
	name, opts, _ := strings.Cut(v, ",")
	for o := range strings.SplitSeq(opts, ",") {
		omit = omit || o == "omitempty" || o == "omitzero"
	}
	return name, omit
}

// required lists the properties of struct t that encoding/json always
// writes, embedded structs' included, in field order.
func required(t reflect.Type, props openapi3.Schemas) []string {
	var out []string
	for f := range t.Fields() {
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		name, omit := jsonField(f.Tag)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			out = append(out, required(ft, props)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, ok := props[name]; ok && name != "-" && !omit && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// fieldBound is a limit a handler enforces on a request field, which the
// document states too (OpenAPI counts characters where the server counts
// bytes: the server's fieldBound is the stricter one).
type fieldBound struct {
	maxLength     uint64 // of the string
	maxItems      uint64 // of the list
	maxProperties uint64 // of the map
	eachMaxLength uint64 // of each string of the list or map
	enum          []string
}

// requestBounds are the request fields' limits, by struct type and Go
// field name (the property's name follows the json tag).
var requestBounds = map[reflect.Type]map[string]fieldBound{
	reflect.TypeFor[apitypes.TaskRequest](): {"DesignRevision": {maxLength: statestore.IDLen}},
	reflect.TypeFor[apitypes.NodeVerbRequest](): {"Reason": {maxLength: maxReason}, "Revision": {maxLength: statestore.IDLen},
		"Machine": {maxLength: maxMachineID}},
	reflect.TypeFor[apitypes.TokenRequest](): {"Name": {maxLength: auth.MaxNameLen}},
	reflect.TypeFor[apitypes.ConsoleInput](): {"Data": {maxLength: orchestrator.MaxConsoleInput}},
	reflect.TypeFor[apitypes.MAASSiteRequest](): {"Name": {maxLength: siteregistry.MaxNameLen}, "URL": {maxLength: siteregistry.MaxURLLen},
		"APIKey": {maxLength: siteregistry.MaxAPIKeyLen}, "Kind": {enum: []string{siteregistry.KindMAAS}}},
	reflect.TypeFor[apitypes.MAASSitePatch](): {"Name": {maxLength: siteregistry.MaxNameLen}, "URL": {maxLength: siteregistry.MaxURLLen},
		"Status": {enum: []string{siteregistry.StatusEnabled, siteregistry.StatusDisabled}}},
	reflect.TypeFor[apitypes.MAASSiteCredentials](): {"APIKey": {maxLength: siteregistry.MaxAPIKeyLen}},
	reflect.TypeFor[apitypes.PowerCredentials](): {"Username": {maxLength: powercreds.MaxUsernameLen},
		"Password": {maxLength: powercreds.MaxPasswordLen}},
	reflect.TypeFor[apitypes.RoCEUpsert]():          {"Items": {maxItems: siteregistry.MaxRoCEItems}},
	reflect.TypeFor[apitypes.DecommissionRequest](): {"Erase": {enum: []string{"none", "quick", "secure"}}},
	reflect.TypeFor[apitypes.Filter]():              {"Sets": {maxItems: record.MaxFilterSets}},
	reflect.TypeFor[apitypes.TaskOptions]():         {"Erase": {enum: enum([]drivers.Erase{drivers.EraseNone, drivers.EraseQuick, drivers.EraseSecure})}},
	reflect.TypeFor[apitypes.NodeFilter](): {
		"Names":  {maxItems: record.MaxFilterNames, eachMaxLength: record.MaxFilterValueLen},
		"Tags":   {maxItems: record.MaxFilterValues, eachMaxLength: record.MaxFilterValueLen},
		"Racks":  {maxItems: record.MaxFilterValues, eachMaxLength: record.MaxFilterValueLen},
		"Sites":  {maxItems: record.MaxFilterValues, eachMaxLength: record.MaxFilterValueLen},
		"Labels": {maxProperties: record.MaxFilterValues, eachMaxLength: record.MaxFilterValueLen}},
}

// applyBounds sets the limits of struct t's fields on its schema sc.
func applyBounds(t reflect.Type, sc *openapi3.Schema) error {
	for field, b := range requestBounds[t] {
		f, ok := t.FieldByName(field)
		name, _ := jsonField(f.Tag)
		prop := sc.Properties[name]
		if !ok || prop == nil || prop.Value == nil {
			return fmt.Errorf("requestBounds: %s has no field %s in the document", t, field)
		}
		p := prop.Value
		for _, v := range b.enum {
			p.Enum = append(p.Enum, v)
		}
		if b.maxLength > 0 {
			p.MaxLength = &b.maxLength
		}
		if b.maxItems > 0 {
			p.MaxItems = &b.maxItems
		}
		if b.maxProperties > 0 {
			p.MaxProps = &b.maxProperties
		}
		if b.eachMaxLength > 0 {
			each := p.AdditionalProperties.Schema
			if p.Items != nil {
				each = p.Items
			}
			each.Value.MaxLength = &b.eachMaxLength
		}
	}
	return nil
}
