package api

import (
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/internal/httpx"
)

// The wire types live in api/apitypes (package apitypes), which the client
// imports without the server; these names are the same types, kept for
// the server's callers.
type (
	Principal           = apitypes.Principal
	SecretInfo          = apitypes.SecretInfo
	Page[T any]         = apitypes.Page[T]
	NodeSummary         = apitypes.NodeSummary
	NodeDetail          = apitypes.NodeDetail
	NodeInventory       = apitypes.NodeInventory
	TaskDetail          = apitypes.TaskDetail
	DriftResolutionBody = apitypes.DriftResolutionBody
	RevisionSummary     = apitypes.RevisionSummary
	AuditRecord         = apitypes.AuditRecord
	AuditPage           = apitypes.AuditPage
	// Problem is the problem details body every error is answered with.
	Problem = httpx.Problem
)

// Role is a token's role: auth's type, one for the store and the API.
type Role = auth.Role

// Roles, weakest first: each includes the ones before it.
const (
	RoleViewer   = auth.RoleViewer
	RoleOperator = auth.RoleOperator
	RoleAdmin    = auth.RoleAdmin
)
