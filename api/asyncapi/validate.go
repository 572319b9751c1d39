package asyncapi

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// Validator checks events against the payload schemas of an AsyncAPI
// document (as written by YAML): a typed event against its type's
// message, any other against the plain event's.
type Validator struct {
	byType map[string]*jsonschema.Schema
	plain  *jsonschema.Schema
}

// docURL names the document for the schema compiler.
const docURL = "file:///slipway/asyncapi.json"

// NewValidator compiles the message payload schemas of the document doc
// (YAML or JSON).
func NewValidator(doc []byte) (*Validator, error) {
	var raw any
	if err := yaml.Unmarshal(doc, &raw); err != nil {
		return nil, fmt.Errorf("asyncapi document: %w", err)
	}
	top, _ := raw.(map[string]any)
	comps, _ := top["components"].(map[string]any)
	msgs, _ := comps["messages"].(map[string]any)
	if len(msgs) == 0 {
		return nil, fmt.Errorf("asyncapi document: no components.messages")
	}
	// The schemas resolve their references (#/components/...) within a
	// resource that holds the document's components only.
	res, err := jsonValue(map[string]any{"components": comps})
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7) // AsyncAPI's schema object is a superset of draft 7
	if err := c.AddResource(docURL, res); err != nil {
		return nil, err
	}
	v := &Validator{byType: map[string]*jsonschema.Schema{}}
	for key, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["payload"] == nil {
			return nil, fmt.Errorf("asyncapi document: message %s has no payload", key)
		}
		s, err := c.Compile(docURL + "#/components/messages/" + key + "/payload")
		if err != nil {
			return nil, fmt.Errorf("message %s: %w", key, err)
		}
		if key == "event" {
			v.plain = s
		} else {
			v.byType[key] = s
		}
	}
	if v.plain == nil {
		return nil, fmt.Errorf("asyncapi document: no message \"event\"")
	}
	return v, nil
}

// Types lists the typed messages the document describes.
func (v *Validator) Types() []string {
	out := make([]string, 0, len(v.byType))
	for k := range v.byType {
		out = append(out, k)
	}
	return out
}

// Validate checks one event's JSON: against its type's message when it
// has a type (an unknown type is an error), else against the plain
// event's.
func (v *Validator) Validate(event []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(event))
	if err != nil {
		return fmt.Errorf("event JSON: %w", err)
	}
	obj, _ := inst.(map[string]any)
	s := v.plain
	if t, ok := obj["type"].(string); ok {
		if s = v.byType[t]; s == nil {
			return fmt.Errorf("event type %q is not in the document", t)
		}
	}
	return s.Validate(inst)
}

// jsonValue turns a decoded YAML value into what the schema compiler
// takes (numbers as json.Number).
func jsonValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}
