package storedrec_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/designlayer"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/introspection"
	"github.com/slipway-dev/slipway/onboarding"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/siteregistry"
)

var update = flag.Bool("update", false, "rewrite testdata/current from today's types (only when a stored form changes on purpose)")

// fixtureKind is one kind of stored record, as the server writes it.
type fixtureKind struct {
	kind string // the registered kind's name
	file string
	typ  reflect.Type
	// value is a record of the kind with every field set.
	value func() any
}

func kindOf[T any](kind, file string) fixtureKind {
	return fixtureKind{kind: kind, file: file, typ: reflect.TypeFor[T](), value: func() any { v := filled[T](); return &v }}
}

// fixtureKinds are the records the server stores as JSON objects: the
// engine's (nodes, tasks, task_nodes, events, inventory, as_built, drift,
// reconciliation), the API tokens, the audit log, design revisions, the
// site registry's, onboardings, the design layer and its sources, and
// boot action reports. The secret store's record and the API's
// idempotency record are unexported: their packages test their own.
var fixtureKinds = []fixtureKind{
	kindOf[record.NodeRecord]("node record", "node.json"),
	kindOf[record.Task]("task record", "task.json"),
	kindOf[record.NodeResult]("task node record", "task_node.json"),
	kindOf[record.Event]("event", "event.json"),
	kindOf[drivers.Inventory]("inventory", "inventory.json"),
	kindOf[record.AsBuiltRecord]("as-built record", "as_built.json"),
	kindOf[record.DriftRecord]("drift record", "drift.json"),
	kindOf[record.ReconcileRun]("reconciliation record", "reconciliation.json"),
	kindOf[auth.Token]("API token", "token.json"),
	kindOf[apitypes.AuditRecord]("audit record", "audit.json"),
	kindOf[design.Design]("design revision", "design_revision.json"),
	kindOf[siteregistry.Record]("site", "site.json"),
	kindOf[siteregistry.Profile]("site profile", "site_profile.json"),
	kindOf[siteregistry.RoCEAssignment]("RoCE assignment", "roce_assignment.json"),
	kindOf[onboarding.Record]("onboarding", "onboarding.json"),
	kindOf[designlayer.Entry]("design layer entry", "design_layer_entry.json"),
	kindOf[designlayer.Sources]("design sources", "design_sources.json"),
	kindOf[introspection.Report]("boot action report", "boot_action_report.json"),
}

// TestWriteFixtures writes testdata/current (with -update): the JSON
// encoding/json gives each filled record, which is what the release
// before schema versions stored; and testdata/v1, the same records with
// the camelCase names of the releases before (version 1).
func TestWriteFixtures(t *testing.T) {
	if !*update {
		return
	}
	for _, k := range fixtureKinds {
		raw, err := json.MarshalIndent(k.value(), "", " ")
		if err != nil {
			t.Fatal(k.file, err)
		}
		if err := os.WriteFile(filepath.Join("testdata", "current", k.file), append(raw, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		old := camelCase(raw, k.typ)
		if err := os.WriteFile(filepath.Join("testdata", "v1", k.file), old, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func compact(t *testing.T, b []byte) string {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// camelCase respells the JSON field names of typ's structs in body as
// the releases before the snake_case names did: machine_id → machineId.
// (Map keys in the fixtures are "KeyN", never a field's name.)
func camelCase(body []byte, typ reflect.Type) []byte {
	var pairs []string
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(rt reflect.Type) {
		for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice || rt.Kind() == reflect.Map || rt.Kind() == reflect.Array {
			rt = rt.Elem()
		}
		if rt.Kind() != reflect.Struct || seen[rt] {
			return
		}
		seen[rt] = true
		for i := range rt.NumField() {
			f := rt.Field(i)
			j, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if c := camel(j); c != j {
				pairs = append(pairs, `"`+j+`":`, `"`+c+`":`)
			}
			walk(f.Type)
		}
	}
	walk(typ)
	return []byte(strings.NewReplacer(pairs...).Replace(string(body)))
}

func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}
