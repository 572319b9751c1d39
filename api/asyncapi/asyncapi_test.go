package asyncapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/asyncapi"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

var update = flag.Bool("update", false, "write docs/asyncapi.yaml from the code")

func committed(t *testing.T) (string, []byte) {
	t.Helper()
	path := filepath.Join("..", "..", asyncapi.Path)
	b, err := os.ReadFile(path)
	if err != nil && !*update {
		t.Fatalf("%v (generate it: go run ./cmd/gendocs)", err)
	}
	return path, b
}

// TestDocumentIsCommitted: docs/asyncapi.yaml is what the code generates
// (`go run ./cmd/gendocs`, or this test with -update, writes it).
func TestDocumentIsCommitted(t *testing.T) {
	want, err := asyncapi.YAML()
	if err != nil {
		t.Fatal(err)
	}
	path, got := committed(t)
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what the code generates: run `go run ./cmd/gendocs` and commit it", asyncapi.Path)
	}
}

// TestDocumentDescribesEveryTypedEvent: one message per typed event name,
// whose payload requires that name; every reference resolves.
func TestDocumentDescribesEveryTypedEvent(t *testing.T) {
	doc, err := asyncapi.Document()
	if err != nil {
		t.Fatal(err)
	}
	msgs := doc["components"].(map[string]any)["messages"].(map[string]any)
	for _, name := range record.EventTypes {
		m, ok := msgs[name].(map[string]any)
		if !ok {
			t.Errorf("no message for %s", name)
			continue
		}
		b, _ := json.Marshal(m["payload"])
		if !strings.Contains(string(b), `"const":"`+name+`"`) {
			t.Errorf("message %s: payload %s does not fix its type", name, b)
		}
	}
	if len(msgs) != len(record.EventTypes)+1 {
		t.Errorf("%d messages for %d typed events and the plain one", len(msgs), len(record.EventTypes))
	}
	// Every $ref points into the document.
	raw, _ := json.Marshal(doc)
	var generic any
	_ = json.Unmarshal(raw, &generic)
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				if !resolves(generic, ref) {
					t.Errorf("$ref %s does not resolve", ref)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(generic)
	// The Event schema has every field of the event the stream sends.
	props := doc["components"].(map[string]any)["schemas"].(map[string]any)["Event"].(map[string]any)["properties"].(map[string]any)
	b, _ := json.Marshal(apitypes.Event{Seq: 1, Time: time.Now(), Task: "t", Node: "n", Stage: "s", Level: "info",
		Kind: "k", Message: "m", Type: record.EventOnboardingStarted, Correlation: "c", ProvisionerWait: 5})
	var ev map[string]any
	_ = json.Unmarshal(b, &ev)
	for k := range ev {
		if props[k] == nil {
			t.Errorf("the Event schema lacks %s", k)
		}
	}
	if len(props) != len(ev) {
		t.Errorf("the Event schema has %d properties, an event %d", len(props), len(ev))
	}
}

func resolves(doc any, ref string) bool {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return false
	}
	cur := doc
	for _, seg := range strings.Split(p, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")]; !ok {
			return false
		}
	}
	return true
}

// TestValidatorJudgesEvents: the validator accepts well-formed events and
// refuses a typed event without what its type requires, with a wrong
// field type, an unknown field or an unknown type.
func TestValidatorJudgesEvents(t *testing.T) {
	_, b := committed(t)
	v, err := asyncapi.NewValidator(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Types(); len(got) != len(record.EventTypes) {
		t.Errorf("validator types %v", got)
	}
	good := `{"seq":3,"time":"2026-01-02T03:04:05Z","task":"T","node":"n1","stage":"deploy","level":"info","kind":"succeeded","message":"ok","type":"node.onboarding.completed","correlation_id":"ABC"}`
	for _, ev := range []string{
		good,
		`{"seq":1,"time":"2026-01-02T03:04:05Z","level":"warn","kind":"leak","message":"m"}`,
		`{"seq":1,"time":"2026-01-02T03:04:05Z","node":"n1","level":"warn","kind":"drift","message":"m","type":"node.drift.detected"}`,
		`{"seq":2,"time":"2026-01-02T03:04:05Z","task":"T","node":"n1","stage":"bootstrap","level":"info","kind":"transition","message":"deploy → bootstrap","provisioner_wait_ms":480}`,
	} {
		if err := v.Validate([]byte(ev)); err != nil {
			t.Errorf("%s: %v", ev, err)
		}
	}
	for _, ev := range []string{
		strings.Replace(good, `"task":"T",`, "", 1),                  // an onboarding event names its task
		strings.Replace(good, `"node":"n1",`, "", 1),                 // and its node
		strings.Replace(good, `"seq":3`, `"seq":"3"`, 1),             // seq is a number
		strings.Replace(good, `"level":"info"`, `"level":"loud"`, 1), // a known level
		strings.Replace(good, `"message":"ok"`, `"message":"ok","extra":1`, 1),
		strings.Replace(good, `node.onboarding.completed`, `node.onboarding.exploded`, 1),
		strings.Replace(good, `"correlation_id":"ABC"`, `"correlation_id":"a b"`, 1),
		strings.Replace(good, `"time":"2026-01-02T03:04:05Z"`, `"time":7`, 1),
		strings.Replace(good, `"correlation_id":"ABC"`, `"correlation_id":"ABC","provisioner_wait_ms":-1`, 1), // a wait is never negative
	} {
		if err := v.Validate([]byte(ev)); err == nil {
			t.Errorf("accepted %s", ev)
		}
	}
}

// specsSchema finds the AsyncAPI specification's JSON schema for the
// document's version: $SLIPWAY_ASYNCAPI_SPECS (the @asyncapi/specs npm
// package's directory), else the copy .ci/run installs.
func specsSchema(t *testing.T) string {
	dir := os.Getenv("SLIPWAY_ASYNCAPI_SPECS")
	if dir == "" {
		dir = filepath.Join("..", "..", ".ci", "node_modules", "@asyncapi", "specs")
	}
	p := filepath.Join(dir, "schemas", asyncapi.Version+".json")
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the AsyncAPI specification's schema is missing (%v): .ci/run installs @asyncapi/specs", err)
		}
		t.Skipf("the AsyncAPI specification's schema is not installed (%v): npm install --prefix .ci @asyncapi/specs, as .ci/run does", err)
	}
	return p
}

// TestDocumentIsValidAsyncAPI: the committed document validates against
// the AsyncAPI specification's own JSON schema (from @asyncapi/specs).
func TestDocumentIsValidAsyncAPI(t *testing.T) {
	p := specsSchema(t)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spec, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("file:///asyncapi-spec.json", spec); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("file:///asyncapi-spec.json")
	if err != nil {
		t.Fatal(err)
	}
	_, b := committed(t)
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(doc)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(inst); err != nil {
		t.Fatalf("%s is not valid AsyncAPI %s: %v", asyncapi.Path, asyncapi.Version, err)
	}
	// And a broken document is not (the check can fail).
	broken := inst.(map[string]any)
	delete(broken, "info")
	if err := s.Validate(broken); err == nil {
		t.Error("a document without info validated")
	}
}
