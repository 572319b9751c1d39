package api

import "strings"

// The GPUaaS boundary places the decommission workflows and the
// reconciliation routes under /api/v1/admin. Their earlier paths under
// /api/v1 stay served, as documented aliases: the same handler, role
// and audit, marked deprecated in the OpenAPI document.

// aliases are rs, served under /api/v1, as deprecated aliases of the
// same routes under canonical (a prefix of /api/v1).
func aliases(rs []route, canonical string) []route {
	out := make([]route, len(rs))
	for i, r := range rs {
		r.Deprecated = canonical + strings.TrimPrefix(r.Path, v1)
		r.Summary += " (deprecated alias of " + openapiPath(r.Deprecated) + ")"
		out[i] = r
	}
	return out
}
