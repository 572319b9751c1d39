package api

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

type embeddedPart struct {
	Inner string `json:"inner"`
}

type schemaSample struct {
	embeddedPart
	Name    string            `json:"name"`
	Note    string            `json:"note,omitempty"`
	When    time.Time         `json:"when,omitzero"`
	List    []string          `json:"list"`
	Map     map[string]string `json:"map"`
	Skipped string            `json:"-"`
}

type ownJSON struct{}

func (ownJSON) MarshalJSON() ([]byte, error) { return []byte(`"x"`), nil }

func noop(echo.Context) error { return nil }

// TestSchemaFromGoType: a struct's schema requires what encoding/json
// always writes (embedded fields too), forbids other properties, gives
// times as date-time and lets an answer's nil list or map be null.
func TestSchemaFromGoType(t *testing.T) {
	doc, err := buildDocument([]route{{Method: "GET", Path: "/sample", Response: schemaSample{}, handler: noop}})
	if err != nil {
		t.Fatal(err)
	}
	sc := doc.Components.Schemas["schemaSample"].Value
	if sc == nil {
		t.Fatalf("no schemaSample component: %v", doc.Components.Schemas)
	}
	if want := []string{"inner", "name", "list", "map"}; !slices.Equal(sc.Required, want) {
		t.Errorf("required %v, want %v", sc.Required, want)
	}
	if sc.AdditionalProperties.Has == nil || *sc.AdditionalProperties.Has {
		t.Errorf("additionalProperties is not false")
	}
	if w := sc.Properties["when"].Value; w.Format != "date-time" || !w.Type.Is("string") {
		t.Errorf("when: %s %s", w.Type, w.Format)
	}
	if !sc.Properties["list"].Value.Nullable || !sc.Properties["map"].Value.Nullable || sc.Properties["name"].Value.Nullable {
		t.Errorf("nullable: list %v map %v name %v", sc.Properties["list"].Value.Nullable, sc.Properties["map"].Value.Nullable,
			sc.Properties["name"].Value.Nullable)
	}
	if _, ok := sc.Properties["Skipped"]; ok {
		t.Errorf("a json:\"-\" field is in the schema")
	}
}

// TestOwnEncodingNeedsASchema: a type with its own JSON encoding that
// the document does not know fails the build, naming where to say it.
func TestOwnEncodingNeedsASchema(t *testing.T) {
	_, err := buildDocument([]route{{Method: "GET", Path: "/own", Response: struct {
		V ownJSON `json:"v"`
	}{}, handler: noop}})
	if err == nil || !strings.Contains(err.Error(), "ownEncodings") {
		t.Errorf("err %v, want one naming ownEncodings", err)
	}
}

// TestEveryOperationStatesItsRefusals: the document's operations state
// 401 and 403 when they need a token, 413 when they read a body, and a
// 4xx unless they are probes.
func TestEveryOperationStatesItsRefusals(t *testing.T) {
	for _, r := range (&Server{}).table() {
		st := problemStatuses(&r)
		has := func(c int) bool { return slices.Contains(st, c) }
		if r.Role != "" && (!has(401) || !has(403)) {
			t.Errorf("%s %s needs a token but states %v", r.Method, r.Path, st)
		}
		if (r.Request != nil || r.Upload) && !has(413) {
			t.Errorf("%s %s reads a body but states %v", r.Method, r.Path, st)
		}
		if r.Role != "" && !slices.ContainsFunc(st, func(c int) bool { return c >= 400 && c < 500 }) {
			t.Errorf("%s %s states no 4xx", r.Method, r.Path)
		}
	}
}
