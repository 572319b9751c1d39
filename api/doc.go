// Package api is Slipway's control API: JSON over HTTP (labstack/echo),
// versioned under /api/v1. Pipelines, capacity managers and the CLI use
// it to apply designs, run tasks and recovery verbs, read nodes, events
// and the audit log, and manage secrets and tokens.
//
// Every request but /healthz, /readyz, /metrics and /openapi.json carries
// a bearer token; its role (viewer ⊂ operator ⊂ admin) must allow the
// route. Every mutating call leaves exactly one audit record (who, what,
// when, from where, outcome). Errors are RFC 9457 problem details with a
// request ID. One route table drives the router, the authorisation, the
// audit and the OpenAPI document, so they cannot disagree; the document's
// schemas are derived from the wire types (package apitypes, api/apitypes,
// which the client shares), and the tests check every call against it
// (api/apitest).
package api
