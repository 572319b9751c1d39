// Package asyncapi builds docs/asyncapi.yaml, the AsyncAPI 3.0 document
// of the control API's event stream, from the code: the event payload's
// schema is reflected from orchestrator.Event, and there is one message
// per typed event name of orchestrator.EventTypes. A test checks that the
// committed document is the generated one; `go run ./cmd/gendocs`
// writes it.
package asyncapi

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"gopkg.in/yaml.v3"
)

// Path is the committed document, relative to the repository's root.
const Path = "docs/asyncapi.yaml"

// Version is the AsyncAPI version the document follows.
const Version = "3.0.0"

// fieldDocs describes the event's fields, by JSON name. Every field of
// orchestrator.Event must have one (Document fails otherwise).
var fieldDocs = map[string]string{
	"seq":                 "The event's position in the event log; pass it as ?since= (or Last-Event-ID on the stream) to read what follows.",
	"time":                "When the engine wrote the event (UTC).",
	"task":                "The task the event belongs to, when it belongs to one.",
	"node":                "The node the event is about, when it is about one.",
	"stage":               "The node's workflow stage when the event was written.",
	"level":               "info, warn or error.",
	"kind":                "The event's untyped kind (transition, retry, failed, drift, task, verb, ...); the stream's SSE event name.",
	"message":             "What happened, for a person.",
	"type":                "The stable, typed name of a lifecycle milestone; absent on the other events.",
	"provisioner_wait_ms": "On a transition event: how long, in milliseconds, the stage the node left (the one before stage) waited on the provisioner or the hardware (a machine's phase in the provisioner, a BMC's power action), from the start of the call that first answered in progress to the end of the wait that saw the phase end; the rest of the stage's time was Slipway's own (limits, configure calls, store writes). Absent when the stage never waited; partial for a stage an engine restart interrupted.",
	"correlation_id":      "The server's ID of the API request that created the event's task (that request's X-Request-Id answer header and audit record's request_id), or that resolved the drift; absent for tasks started outside the API (the CLI).",
}

// typed describes each typed event: its summary and the fields it always
// carries besides type. Every name of orchestrator.EventTypes must have
// one (Document fails otherwise).
var typed = map[string]struct {
	summary  string
	required []string
}{
	record.EventOnboardingStarted:     {"A node started its deploy (onboarding) workflow in a task: once per node and task.", []string{"task", "node"}},
	record.EventOnboardingCompleted:   {"A node reached deployed: its onboarding in the task is complete.", []string{"task", "node"}},
	record.EventOnboardingFailed:      {"A node's onboarding failed in the task (its result says why); a verb may run it again.", []string{"task", "node"}},
	record.EventOnboardingManual:      {"A node's onboarding stopped for manual intervention: it is frozen until an operator releases it.", []string{"task", "node"}},
	record.EventDecommissionStarted:   {"A node started its destroy or decommission workflow in a task: once per node and task.", []string{"task", "node"}},
	record.EventDecommissionCompleted: {"A node's decommission in the task is complete.", []string{"task", "node"}},
	record.EventDecommissionFailed:    {"A node's decommission failed in the task (its result says why).", []string{"task", "node"}},
	record.EventDecommissionManual:    {"A node's decommission stopped for manual intervention: it is frozen until an operator releases it.", []string{"task", "node"}},
	record.EventDriftDetected:         {"Reconciliation found that a node's machine no longer matches the engine's record.", []string{"node"}},
	record.EventDriftResolved:         {"A node's drift was resolved (repaired, accepted, or no longer seen).", []string{"node"}},
	record.EventImageSync:             {"An image's sync into a Site's provisioner moved: asked, started, upload progress (every 10%), resumed, retried, complete or failed (the message names the site and image).", []string{"task"}},
}

// Document returns the AsyncAPI document.
func Document() (map[string]any, error) {
	event, err := eventSchema()
	if err != nil {
		return nil, err
	}
	messages, refs, err := eventMessages()
	if err != nil {
		return nil, err
	}
	opMessages := func(channel string) []any {
		keys := sortedKeys(refs)
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = map[string]any{"$ref": "#/channels/" + channel + "/messages/" + k}
		}
		return out
	}
	return map[string]any{
		"asyncapi": Version,
		"info": map[string]any{
			"title":   "Slipway events",
			"version": "v1",
			"description": "The engine's event log, as the control API serves it: every event is an Event; the events that mark a " +
				"node's lifecycle milestones carry a stable typed name (type) and the correlation ID (correlation_id) of the API " +
				"request that created their task, which links them to that request's audit record, the task and the node. " +
				"A node's deploy workflow is its onboarding; its destroy or decommission workflow is its decommission. " +
				"Generated from the code (api/asyncapi); see docs/api.md.",
		},
		"defaultContentType": "application/json",
		"servers": map[string]any{
			"control-api": map[string]any{"host": "localhost:8443", "protocol": "https",
				"description": "orchestrator serve (its listen address); bearer token of role viewer or above",
				"security":    []any{map[string]any{"$ref": "#/components/securitySchemes/bearer"}}},
		},
		"channels": channels(refs),
		"operations": map[string]any{
			"receiveEventStream": map[string]any{"action": "receive", "channel": map[string]any{"$ref": "#/channels/eventStream"},
				"summary": "Follow the events as they are written.", "messages": opMessages("eventStream")},
			"receiveEventLog": map[string]any{"action": "receive", "channel": map[string]any{"$ref": "#/channels/eventLog"},
				"summary": "Read the events after a sequence number.", "messages": opMessages("eventLog")},
		},
		"components": map[string]any{
			"schemas":         map[string]any{"Event": event},
			"messages":        messages,
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
		},
	}, nil
}

// eventSchema is the Event's schema, its fields described and bounded.
func eventSchema() (map[string]any, error) {
	event, err := schemaOf(reflect.TypeFor[apitypes.Event]())
	if err != nil {
		return nil, err
	}
	props := event["properties"].(map[string]any)
	for name, p := range props {
		p.(map[string]any)["description"] = fieldDocs[name]
	}
	props["level"].(map[string]any)["enum"] = []any{"info", "warn", "error"}
	props["type"].(map[string]any)["enum"] = anys(record.EventTypes)
	props["correlation_id"].(map[string]any)["maxLength"] = record.MaxCorrelationLen
	props["correlation_id"].(map[string]any)["pattern"] = "^[A-Za-z0-9._:-]+$"
	props["provisioner_wait_ms"].(map[string]any)["minimum"] = 0
	return event, nil
}

// eventMessages are the messages (any event, and each typed one) and
// the channels' references to them.
func eventMessages() (messages, refs map[string]any, err error) {
	messages = map[string]any{
		"event": map[string]any{
			"name": "event", "title": "Event",
			"summary": "Any event of the log; a lifecycle milestone's carries its typed name (see the typed messages).",
			"payload": map[string]any{"$ref": "#/components/schemas/Event"},
		},
	}
	refs = map[string]any{"event": map[string]any{"$ref": "#/components/messages/event"}}
	for _, name := range record.EventTypes {
		tp, ok := typed[name]
		if !ok {
			return nil, nil, fmt.Errorf("asyncapi: typed event %s has no description in api/asyncapi", name)
		}
		messages[name] = map[string]any{
			"name": name, "title": name, "summary": tp.summary,
			"payload": map[string]any{"allOf": []any{
				map[string]any{"$ref": "#/components/schemas/Event"},
				map[string]any{"type": "object", "required": anys(append([]string{"type"}, tp.required...)),
					"properties": map[string]any{"type": map[string]any{"const": name}}},
			}},
		}
		refs[name] = map[string]any{"$ref": "#/components/messages/" + name}
	}
	if len(typed) != len(record.EventTypes) {
		return nil, nil, fmt.Errorf("asyncapi: %d typed event descriptions for %d typed events", len(typed), len(record.EventTypes))
	}
	return messages, refs, nil
}

// channels are the stream and the polled log, both carrying refs.
func channels(refs map[string]any) map[string]any {
	return map[string]any{
		"eventStream": map[string]any{
			"address": "/api/v1/events/stream",
			"title":   "Event stream (server-sent events)",
			"description": "GET /api/v1/events/stream?since=SEQ&task=&node=: text/event-stream; each SSE message has id: the " +
				"event's seq, event: its kind, data: the Event as JSON. Reconnect with Last-Event-ID to miss nothing.",
			"messages": refs,
		},
		"eventLog": map[string]any{
			"address":     "/api/v1/events",
			"title":       "Event log (polled)",
			"description": "GET /api/v1/events?since=SEQ&task=&node=&limit=: a JSON array of Event, oldest first.",
			"messages":    refs,
		},
	}
}

// YAML returns the document as committed.
func YAML() ([]byte, error) {
	doc, err := Document()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# Generated by `go run ./cmd/gendocs` from the code; do not edit.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

var timeType = reflect.TypeFor[time.Time]()

// scalars are the schemas of the scalar kinds.
var scalars = map[reflect.Kind]map[string]any{
	reflect.String: {"type": "string"}, reflect.Bool: {"type": "boolean"},
	reflect.Int: {"type": "integer"}, reflect.Int8: {"type": "integer"}, reflect.Int16: {"type": "integer"},
	reflect.Int32: {"type": "integer"}, reflect.Int64: {"type": "integer"},
	reflect.Uint: {"type": "integer", "minimum": 0}, reflect.Uint8: {"type": "integer", "minimum": 0},
	reflect.Uint16: {"type": "integer", "minimum": 0}, reflect.Uint32: {"type": "integer", "minimum": 0},
	reflect.Uint64:  {"type": "integer", "minimum": 0},
	reflect.Float32: {"type": "number"}, reflect.Float64: {"type": "number"},
}

// schemaOf reflects a JSON schema from a Go type as encoding/json writes
// it: a struct's fields by their JSON names, required unless omitempty or
// omitzero, and no other property.
func schemaOf(t reflect.Type) (map[string]any, error) {
	if t == timeType {
		return map[string]any{"type": "string", "format": "date-time"}, nil
	}
	if s, ok := scalars[t.Kind()]; ok {
		return maps.Clone(s), nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOf(t.Elem())
	case reflect.Slice, reflect.Array:
		items, err := schemaOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("asyncapi: map key %s is not a string", t.Key())
		}
		v, err := schemaOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": v}, nil
	case reflect.Struct:
		return structSchema(t)
	}
	return nil, fmt.Errorf("asyncapi: type %s is not supported", t)
}

// structSchema is schemaOf of a struct: its exported fields by JSON name.
func structSchema(t reflect.Type) (map[string]any, error) {
	props := map[string]any{}
	var required []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, skip := jsonName(f)
		if skip {
			continue
		}
		if f.Anonymous && name == f.Name {
			return nil, fmt.Errorf("asyncapi: embedded field %s of %s is not supported", f.Name, t)
		}
		s, err := schemaOf(f.Type)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t.Name(), f.Name, err)
		}
		props[name] = s
		if !slices.Contains(opts, "omitempty") && !slices.Contains(opts, "omitzero") {
			required = append(required, name)
		}
	}
	for name := range props {
		if _, ok := fieldDocs[name]; !ok && t == reflect.TypeFor[apitypes.Event]() {
			return nil, fmt.Errorf("asyncapi: Event field %s has no description in api/asyncapi", name)
		}
	}
	out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		out["required"] = anys(required)
	}
	return out, nil
}

// jsonName is a field's JSON name and tag options; skip for a field
// encoding/json leaves out.
func jsonName(f reflect.StructField) (string, []string, bool) {
	tag := f.Tag.Get("json")
	if !f.IsExported() || tag == "-" {
		return "", nil, true
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, strings.Split(opts, ","), false
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
