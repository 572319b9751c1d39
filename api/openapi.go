package api

import (
	"net/http"
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/statestore"
)

var paramRE = regexp.MustCompile(`:([a-zA-Z]+)`)

// openapiPath turns an echo path into an OpenAPI one (:id → {id}).
func openapiPath(p string) string { return paramRE.ReplaceAllString(p, "{$1}") }

// OpenAPI returns the API's OpenAPI 3 document, built from the route table.
func (s *Server) OpenAPI() map[string]any {
	paths := map[string]any{}
	for _, r := range s.routes {
		p := openapiPath(r.Path)
		item, _ := paths[p].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[p] = item
		}
		op := map[string]any{
			"summary":     r.Summary,
			"operationId": strings.ToLower(r.Method) + strings.NewReplacer("/", "_", "{", "", "}", "", "-", "_", ".", "_").Replace(p),
			"responses": map[string]any{
				"default": map[string]any{"description": "problem details",
					"content": map[string]any{"application/problem+json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Problem"}}}},
				"200": map[string]any{"description": "success", "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object"}}}},
			},
		}
		var params []any
		for _, m := range paramRE.FindAllStringSubmatch(r.Path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		if params != nil {
			op["parameters"] = params
		}
		if r.Role != "" {
			op["security"] = []any{map[string]any{"bearer": []any{}}}
			op["x-slipway-role"] = string(r.Role)
		} else {
			op["security"] = []any{}
		}
		if r.Mutating || r.Audited {
			op["x-slipway-audited"] = true
		}
		if r.Body != "" {
			op["requestBody"] = map[string]any{"required": true, "content": bodyContent(r.Body)}
		}
		item[strings.ToLower(r.Method)] = op
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{"title": "Slipway control API", "version": "v1",
			"description": "Designs, nodes, tasks, events, audit, secrets and tokens. Bearer tokens with roles viewer ⊂ operator ⊂ admin."},
		"paths": paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
			"schemas": map[string]any{
				"Problem": map[string]any{"type": "object", "properties": map[string]any{
					"type": str(), "title": str(), "status": map[string]any{"type": "integer"}, "detail": str(),
					"instance": str(), "requestId": str(), "findings": map[string]any{"type": "array", "items": map[string]any{"type": "object"}}}},
				"DriftResolution": driftResolutionSchema(), // reconcile.go
				"TaskRequest": map[string]any{"type": "object", "required": []any{"action"}, "properties": map[string]any{
					"action": actionEnum(), "designRevision": maxStr(statestore.IDLen),
					"options": map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
						"erase":  map[string]any{"type": "string", "enum": []any{"none", "quick", "secure"}},
						"delete": map[string]any{"type": "boolean"}}},
					"nodeFilter": map[string]any{"type": "object", "properties": map[string]any{
						"type": map[string]any{"type": "string", "enum": []any{"union", "intersection"}},
						"sets": map[string]any{"type": "array", "maxItems": orchestrator.MaxFilterSets, "items": map[string]any{"type": "object", "properties": map[string]any{
							"names": maxStrs(orchestrator.MaxFilterNames), "tags": maxStrs(orchestrator.MaxFilterValues), "racks": maxStrs(orchestrator.MaxFilterValues),
							"labels": map[string]any{"type": "object", "maxProperties": orchestrator.MaxFilterValues, "additionalProperties": maxStr(orchestrator.MaxFilterValueLen)}}}}}}}},
				"SecretValue":  map[string]any{"type": "object", "required": []any{"value"}, "properties": map[string]any{"value": str()}},
				"TokenRequest": map[string]any{"type": "object", "required": []any{"role"}, "properties": map[string]any{"role": map[string]any{"type": "string", "enum": []any{"viewer", "operator", "admin"}}, "name": maxStr(auth.MaxNameLen)}},
				"Reason":       map[string]any{"type": "object", "properties": map[string]any{"reason": maxStr(maxReason), "designRevision": maxStr(statestore.IDLen), "machine": maxStr(maxMachineID)}},
			},
		},
	}
}

func bodyContent(schema string) map[string]any {
	if schema == "DesignUpload" {
		return map[string]any{
			"application/gzip": map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}},
			"application/json": map[string]any{"schema": map[string]any{"type": "array", "items": map[string]any{"type": "object"}}},
		}
	}
	return map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/" + schema}}}
}

func str() map[string]any { return map[string]any{"type": "string"} }

// maxStr is a string of at most n bytes (OpenAPI counts characters: the
// server counts bytes).
func maxStr(n int) map[string]any { return map[string]any{"type": "string", "maxLength": n} }

// maxStrs is a list of at most n strings of orchestrator.MaxFilterValueLen.
func maxStrs(n int) map[string]any {
	return map[string]any{"type": "array", "maxItems": n, "items": maxStr(orchestrator.MaxFilterValueLen)}
}

func (s *Server) openapi(c echo.Context) error { return c.JSON(http.StatusOK, s.OpenAPI()) }

// RouteInfo describes a route of the table.
type RouteInfo struct {
	Method   string
	Path     string // OpenAPI form: /api/v1/tasks/{id}
	Role     Role   // "" for the open probes
	Mutating bool
	Audited  bool // audited although it changes nothing
}

// Routes lists the route table.
func (s *Server) Routes() []RouteInfo {
	out := make([]RouteInfo, len(s.routes))
	for i, r := range s.routes {
		out[i] = RouteInfo{Method: r.Method, Path: openapiPath(r.Path), Role: r.Role, Mutating: r.Mutating, Audited: r.Audited}
	}
	return out
}

// Served lists what the router actually serves, as "METHOD /path" in
// OpenAPI form.
func (s *Server) Served() []string {
	var out []string
	for _, r := range s.e.Routes() {
		out = append(out, r.Method+" "+openapiPath(r.Path))
	}
	return out
}

// actionEnum is the task actions as the engine knows them.
func actionEnum() map[string]any {
	e := make([]any, len(orchestrator.Actions))
	for i, a := range orchestrator.Actions {
		e[i] = string(a)
	}
	return map[string]any{"type": "string", "enum": e}
}
