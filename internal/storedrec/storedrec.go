// Package storedrec versions the records the server keeps in its state
// store, as Kubernetes versions its stored objects: a record carries the
// schema version it was written in, and reading converts it step by step
// to the version this release knows before decoding it.
//
// A record of a Kind is a JSON object whose first member is "v", the
// kind's schema version: {"v":2,"name":...}. Encode writes it; Decode
// reads it, refuses a version newer than the kind's (a downgraded binary
// never misreads what a newer release wrote) and applies the kind's
// conversions from the record's version up.
//
// A record without "v" was written before versions existed: either by
// the releases that spelt fields in camelCase ("machineId", version 1)
// or by the first snake_case release, which wrote today's names without
// a version. Both read as version 1, whose conversion to version 2
// renames old-style keys led by the kind's Go type (see Upgrade) and
// leaves current names as they are. Records are converted as they are
// read, never rewritten in place: design revisions are addressed by the
// hash of their bytes and the event log is append-only.
//
// A value that is not a JSON object (a timestamp, a string) carries no
// version: it has no fields to rename.
package storedrec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// Legacy is the version of a record that carries none: written before
// schema versions, in the camelCase or the snake_case names.
const Legacy = 1

// Current is the version new records of every kind are written in today.
// A kind whose stored form changes gets a version of its own (Step).
const Current = 2

// versionKey is the member that holds a record's version. No stored type
// may have a JSON field of that name (NewKind checks).
const versionKey = "v"

// ErrNewerVersion is wrapped by the error for a record written by a newer
// release than this one.
var ErrNewerVersion = errors.New("written by a newer release")

// A Step converts a record's JSON from one version to the next.
type Step func(data []byte) ([]byte, error)

// A Kind is one kind of stored record: its name (as errors say it), its
// Go type, its current version and the steps up to it.
type Kind struct {
	name    string
	typ     reflect.Type
	version int
	steps   map[int]Step // steps[n] converts version n to n+1
}

var (
	registryMu sync.Mutex
	registry   = map[string]*Kind{}
)

// NewKind registers the kind of record called name (e.g. "node record")
// whose values are of type typ, at version Current, with the legacy
// step: version 1's camelCase keys renamed to typ's names. It panics when
// the name is taken or typ has a JSON field "v": both are programming
// errors found by any test that loads the package.
func NewKind(name string, typ reflect.Type) *Kind {
	if _, ok := fieldsOf(derefStruct(typ)).byName[versionKey]; ok {
		panic(fmt.Sprintf("storedrec: %s: type %s has a JSON field %q, the version's key", name, typ, versionKey))
	}
	k := &Kind{name: name, typ: typ, version: Current, steps: map[int]Step{}}
	k.steps[Legacy] = func(data []byte) ([]byte, error) { return Upgrade(data, typ) }
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, ok := registry[name]; ok {
		panic("storedrec: kind " + name + " registered twice")
	}
	registry[name] = k
	return k
}

// Step adds the conversion of records from version from to from+1 and
// makes from+1 the version the kind writes, when it is newer. Steps are
// added in order, when the package that owns the kind starts.
func (k *Kind) Step(from int, s Step) *Kind {
	k.steps[from] = s
	k.version = max(k.version, from+1)
	return k
}

// Name is how errors name the kind's records.
func (k *Kind) Name() string { return k.name }

// Version is the version Encode writes.
func (k *Kind) Version() int { return k.version }

// Kinds returns the registered kinds' names and versions.
func Kinds() map[string]int {
	registryMu.Lock()
	defer registryMu.Unlock()
	out := make(map[string]int, len(registry))
	for n, k := range registry {
		out[n] = k.version
	}
	return out
}

func derefStruct(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return reflect.TypeFor[struct{}]()
	}
	return t
}

// Encode returns v's JSON with the kind's version as its first member
// (v's JSON as it is, when that is not an object).
func (k *Kind) Encode(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", k.name, err)
	}
	if len(raw) < 2 || raw[0] != '{' {
		return raw, nil
	}
	head := `{"` + versionKey + `":` + strconv.Itoa(k.version)
	out := make([]byte, 0, len(head)+len(raw))
	out = append(out, head...)
	if len(raw) > 2 {
		out = append(out, ',')
	}
	return append(out, raw[1:]...), nil
}

// Decode converts the record stored under key (named in errors) to the
// kind's version and decodes it into v, a non-nil pointer.
func (k *Kind) Decode(key string, data []byte, v any) error {
	up, err := k.Upgrade(key, data)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(up, v); err != nil {
		return fmt.Errorf("%s: %w", k.what(key), err)
	}
	return nil
}

// what names the record stored under key ("" when the caller has none).
func (k *Kind) what(key string) string {
	if key == "" {
		return k.name
	}
	return fmt.Sprintf("%s %q", k.name, key)
}

// Upgrade returns the record stored under key converted to the kind's
// version: data itself when it is at that version already.
func (k *Kind) Upgrade(key string, data []byte) ([]byte, error) {
	ver, err := Version(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.what(key), err)
	}
	if ver > k.version {
		return nil, fmt.Errorf("%s is in schema version %d, and this release reads up to version %d: it was %w; "+
			"run that release (or a newer one) against this state", k.what(key), ver, k.version, ErrNewerVersion)
	}
	for ; ver < k.version; ver++ {
		step := k.steps[ver]
		if step == nil {
			return nil, fmt.Errorf("%s: no conversion from schema version %d", k.what(key), ver)
		}
		if data, err = step(data); err != nil {
			return nil, fmt.Errorf("%s: convert from schema version %d: %w", k.what(key), ver, err)
		}
	}
	return data, nil
}

// Version returns the schema version of a stored record: its leading "v"
// member, Legacy when it has none (or is not an object).
func Version(data []byte) (int, error) {
	rest := bytes.TrimLeft(data, " \t\r\n")
	if len(rest) == 0 || rest[0] != '{' {
		return Legacy, nil
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	key := `"` + versionKey + `"`
	if !bytes.HasPrefix(rest, []byte(key)) {
		return Legacy, nil
	}
	rest = bytes.TrimLeft(rest[len(key):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return 0, errors.New("malformed schema version")
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	end := bytes.IndexFunc(rest, func(r rune) bool { return !strings.ContainsRune("0123456789", r) })
	if end <= 0 || end > 9 {
		return 0, errors.New("malformed schema version: want a whole number")
	}
	n, _ := strconv.Atoi(string(rest[:end]))
	if n < Legacy {
		return 0, fmt.Errorf("schema version %d: versions start at %d", n, Legacy)
	}
	return n, nil
}

// Lookup returns the registered kind called name; nil when there is none.
func Lookup(name string) *Kind {
	registryMu.Lock()
	defer registryMu.Unlock()
	return registry[name]
}
